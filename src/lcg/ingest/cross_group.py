"""Cross-group edges and the rebinding of their pointers (``knowledge_add_cross_group_edge``,
``knowledge_rebind_pointers``).

An endpoint in another group is stored as a pointer in the edge's
``attributes.cross_group_pointers.{src,dst}``: ``{source_group_id, endpoint_name, resolved_uuid,
bound_at_seq, binding_state}``. Resolving a name in a group: no match → ``unbound``; several
current (non-merged) matches → ``ambiguous``; one → ``bound`` (a merged winner is followed to
its survivor). An unbound or ambiguous side has endpoint uuid ``""``: the edge exists but no
read shows it until a rebind binds it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lcg import timestamps
from lcg.errors import InvalidParamsError, LcgError, NotFoundError
from lcg.events import (
    CrossGroupEdgeAdded,
    EdgeRecord,
    Event,
    PointerRebind,
    PointersRebound,
    nfc_group_ids,
)
from lcg.ingest._common import new_uuid, strip_control
from lcg.ingest.assertion import follow_merged
from lcg.projections import (
    MERGED_LABEL,
    BindingState,
    Pointer,
    Pointers,
    ReplayResult,
    pointers_of,
    with_pointers,
)
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

__all__ = [
    "CrossGroupEdgeResult",
    "Pointer",
    "RebindResult",
    "add_cross_group_edge",
    "rebind_after_reset",
    "rebind_pointers",
    "resolve_pointer",
]


class CrossGroupEdgeResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_add_cross_group_edge``."""

    uuid: str
    name: str
    group_id: str
    source_node_uuid: str
    target_node_uuid: str
    fact: str
    cross_group_pointers: Pointers


class RebindResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_rebind_pointers``."""

    checked: int = 0
    bound: int = 0
    unbound: int = 0
    ambiguous: int = 0
    invalidated_self_loop: int = 0
    invalidated_duplicate: int = 0
    staleness_skipped: int = 0


_ENDPOINT_ERROR = (
    "endpoint must have either 'uuid' alone, or both 'source_group_id' and 'endpoint_name' "
    "alone (got {got})"
)


def resolve_pointer(ws: Workspace, group_id: str, name: str) -> tuple[BindingState, str | None]:
    """Resolve ``name`` in ``group_id`` to (state, uuid)."""
    matches = gr.entities_by_name(ws.graph, group_id, name)
    if not matches:
        return "unbound", None
    live = [m for m in matches if MERGED_LABEL not in m.labels]
    if len(live) > 1:
        return "ambiguous", None
    try:
        winner = follow_merged(ws, group_id, live[0] if live else matches[0])
    except NotFoundError:
        return "unbound", None
    return "bound", winner.uuid


def _parse_endpoint(
    ws: Workspace, group_id: str, raw: Any, role: str
) -> tuple[str, Pointer | None]:
    if not isinstance(raw, dict):
        raise InvalidParamsError(f"{role} is required and must be an object")
    keys = set(raw)
    if keys == {"uuid"} and isinstance(raw["uuid"], str) and raw["uuid"]:
        found = gr.entity_record(ws.graph, raw["uuid"])
        if found is None or found[0] != group_id:
            raise NotFoundError(
                f"{role} entity '{raw['uuid']}' does not exist in group '{group_id}'"
            )
        return raw["uuid"], None
    if (
        keys == {"source_group_id", "endpoint_name"}
        and isinstance(raw["source_group_id"], str)
        and raw["source_group_id"]
        and isinstance(raw["endpoint_name"], str)
        and raw["endpoint_name"].strip()
    ):
        source_group = str(nfc_group_ids(raw["source_group_id"]))  # as the edge (ADR 0151)
        name = strip_control(raw["endpoint_name"]).strip().lower()
        state, uuid = resolve_pointer(ws, source_group, name)
        pointer = Pointer(
            source_group_id=source_group,
            endpoint_name=name,
            binding_state=state,
            resolved_uuid=uuid,
            bound_at_seq=ws.projector.applied_seq(source_group) if state == "bound" else None,
        )
        return uuid or "", pointer
    raise InvalidParamsError(_ENDPOINT_ERROR.format(got=sorted(keys)))


def add_cross_group_edge(
    ws: Workspace,
    *,
    group_id: str,
    source: Any,
    target: Any,
    name: str = "",
    fact: str = "",
    valid_at: str | None = None,
    relation_type: str | None = None,
) -> CrossGroupEdgeResult:
    """Create an edge of ``group_id`` whose endpoints may live in other groups."""
    with ws.group_lock(group_id):
        with ws.reading():
            src_uuid, src_ptr = _parse_endpoint(ws, group_id, source, "source")
            dst_uuid, dst_ptr = _parse_endpoint(ws, group_id, target, "target")
        pointers = Pointers(src=src_ptr, dst=dst_ptr)
        edge = EdgeRecord(
            uuid=new_uuid(),
            name=name or "",
            source_uuid=src_uuid,
            target_uuid=dst_uuid,
            fact=fact or "",
            relation_type=relation_type or None,
            valid_at=valid_at or None,
            attributes=with_pointers("{}", pointers),
            created_at=timestamps.now(),
        )
        ws.commit(group_id, [CrossGroupEdgeAdded(group_id=group_id, edge=edge)])
    return CrossGroupEdgeResult(
        uuid=edge.uuid,
        name=edge.name,
        group_id=group_id,
        source_node_uuid=src_uuid,
        target_node_uuid=dst_uuid,
        fact=edge.fact,
        cross_group_pointers=pointers,
    )


def rebind_pointers(ws: Workspace, source_group_id: str, *, forced: bool = False) -> RebindResult:
    """Re-resolve every current pointer into ``source_group_id``; record ``PointersRebound``."""
    if not isinstance(source_group_id, str) or not source_group_id:
        raise InvalidParamsError("source_group_id is required and must be a non-empty string")
    result = RebindResult()
    now = timestamps.now()
    per_owner: dict[str, list[PointerRebind]] = {}
    with ws.reading():
        applied = ws.projector.applied_seq(source_group_id)
        for owner, edge in gr.edges_with_pointers(ws.graph):
            if edge.invalid_at is not None:
                continue
            pointers = pointers_of(edge.attributes)
            if pointers is None:
                continue
            ends = {"src": edge.source_uuid, "dst": edge.target_uuid}
            changed = False
            for side in ("src", "dst"):
                ptr: Pointer | None = getattr(pointers, side)
                if ptr is None or ptr.source_group_id != source_group_id:
                    continue
                fresh = (
                    ptr.binding_state == "bound"
                    and ptr.bound_at_seq is not None
                    and applied is not None
                    and ptr.bound_at_seq >= applied
                )
                if fresh and not forced:
                    result.staleness_skipped += 1
                    continue
                result.checked += 1
                state, uuid = resolve_pointer(ws, source_group_id, ptr.endpoint_name)
                setattr(result, state, getattr(result, state) + 1)
                new_ptr = Pointer(
                    source_group_id=source_group_id,
                    endpoint_name=ptr.endpoint_name,
                    binding_state=state,
                    resolved_uuid=uuid,
                    bound_at_seq=applied if state == "bound" else None,
                )
                if new_ptr != ptr or ends[side] != (uuid or ""):
                    changed = True
                setattr(pointers, side, new_ptr)
                ends[side] = uuid or ""
            if not changed:
                continue
            invalid_at = None
            if ends["src"] and ends["dst"]:
                if ends["src"] == ends["dst"]:
                    invalid_at = now
                    result.invalidated_self_loop += 1
                elif any(
                    e.uuid != edge.uuid
                    for e in gr.active_edges_between(
                        ws.graph, owner, ends["src"], edge.name, ends["dst"]
                    )
                ):
                    invalid_at = now
                    result.invalidated_duplicate += 1
            per_owner.setdefault(owner, []).append(
                PointerRebind(
                    uuid=edge.uuid,
                    source_uuid=ends["src"],
                    target_uuid=ends["dst"],
                    attributes=with_pointers(edge.attributes, pointers),
                    invalid_at=invalid_at,
                )
            )
    for owner, rebinds in per_owner.items():
        events: list[Event] = [
            PointersRebound(group_id=owner, source_group_id=source_group_id, rebinds=rebinds)
        ]
        with ws.group_lock(owner):
            ws.commit(owner, events)
    return result


def rebind_after_reset(ws: Workspace, result: ReplayResult) -> None:
    """Rebind the pointers of other groups into a group a rebuild just reset (§3.9 step 6).

    The counts go into ``result.cross_group_rebind``. The rebind is forced, not gated by
    staleness as the reference's: a pointer's ``bound_at_seq`` counts seqs of the previous
    generation, which say nothing of the new one (ADR 0173). The caller holds no lock: each
    owning group's rebind is committed under that group's lock. An owner that refuses the
    write (degraded) leaves the counts out and says why in ``warnings``.
    """
    if result.dry_run or not result.reset_detected:
        return
    try:
        counts = rebind_pointers(ws, result.group_id, forced=True)
    except LcgError as exc:
        result.warnings.append(
            f"the pointers of other groups into {result.group_id!r} were not rebound ({exc}); "
            f"run knowledge_rebind_pointers with source_group_id {result.group_id!r}"
        )
        return
    result.cross_group_rebind = msgspec.to_builtins(counts)
