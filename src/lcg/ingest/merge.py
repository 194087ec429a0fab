"""Merging entities (``knowledge_merge_entities``) and the edge rewriting it implies.

Each alias becomes a tombstone (label ``Merged``, ``attributes.merged_into``). Every current
edge of the merge group that touches an alias is moved to the canonical entity: a move that
would make a self-loop, or restate a current edge the canonical already has, only invalidates
the old edge; otherwise a copy is created on the canonical and the old edge is invalidated.
The canonical's ``created_at`` becomes the earliest of the merged entities. The whole decision
is one ``EntitiesMerged`` event.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lcg import timestamps
from lcg.events import (
    EdgeInvalidation,
    EdgeRecord,
    EntitiesMerged,
    EntityRecord,
    MergedAlias,
    MergeOutcome,
)
from lcg.ingest._common import new_uuid
from lcg.projections import MERGED_LABEL
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

__all__ = ["AliasPlan", "MergePlan", "MergeResult", "merge_entities", "plan_merge"]


class AliasPlan(msgspec.Struct, kw_only=True):
    """What a merge does to one alias (dry-run plan)."""

    uuid: str
    name: str
    active_edges: int
    duplicate_edges: int
    foreign_edges_skipped: int


class MergePlan(msgspec.Struct, kw_only=True):
    """The plan of a dry-run merge."""

    aliases: list[AliasPlan]
    total_edges_rewritten: int
    total_edges_collapsed: int
    total_foreign_edges_skipped: int


class MergeResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_merge_entities`` (a soft error has ``success: false``)."""

    success: bool
    canonical_uuid: str | None = None
    merged_count: int = 0
    skipped: list[str] = []
    edges_rewritten: int = 0
    edges_deduplicated: int = 0
    foreign_edges_skipped: int = 0
    errors: list[str] = []
    dry_run: bool = False
    #: Only present on a dry run.
    plan: MergePlan | msgspec.UnsetType = msgspec.UNSET


def _soft(message: str) -> MergeResult:
    return MergeResult(success=False, errors=[message])


def plan_merge(
    ws: Workspace,
    group_id: str,
    canonical: EntityRecord,
    aliases: list[EntityRecord],
    now: str,
) -> tuple[MergeOutcome, list[AliasPlan], int, int, int]:
    """Decide a merge: (outcome, per-alias plan, rewritten, deduplicated, foreign skipped)."""
    active: set[tuple[str, str, str]] = set()
    for owner, edge in gr.edges_of_entity(ws.graph, canonical.uuid):
        if owner == group_id and edge.invalid_at is None:
            active.add((edge.source_uuid, edge.name, edge.target_uuid))
    created: list[EdgeRecord] = []
    invalidated: list[EdgeInvalidation] = []
    plans: list[AliasPlan] = []
    rewritten = dedup = foreign = 0
    alias_ids = {a.uuid for a in aliases}
    earliest = canonical.created_at
    tombstones: list[MergedAlias] = []
    for alias in aliases:
        n_active = n_dup = n_foreign = 0
        for owner, edge in gr.edges_of_entity(ws.graph, alias.uuid):
            if edge.invalid_at is not None:
                continue
            if owner != group_id:
                n_foreign += 1
                continue
            if any(inv.uuid == edge.uuid for inv in invalidated):
                continue
            n_active += 1
            src = canonical.uuid if edge.source_uuid in alias_ids else edge.source_uuid
            dst = canonical.uuid if edge.target_uuid in alias_ids else edge.target_uuid
            invalidated.append(EdgeInvalidation(uuid=edge.uuid, invalid_at=now, reason="merge"))
            key = (src, edge.name, dst)
            if src == dst or key in active:
                n_dup += 1
                continue
            active.add(key)
            created.append(
                msgspec.structs.replace(edge, uuid=new_uuid(), source_uuid=src, target_uuid=dst)
            )
        attrs: dict[str, Any] = {}
        try:
            loaded = msgspec.json.decode(alias.attributes or "{}")
            attrs = loaded if isinstance(loaded, dict) else {}
        except msgspec.DecodeError:
            attrs = {}
        attrs["merged_into"] = canonical.uuid
        tombstones.append(
            MergedAlias(
                uuid=alias.uuid,
                labels=[*alias.labels, MERGED_LABEL],
                attributes=msgspec.json.encode(attrs, order="sorted").decode(),
            )
        )
        earliest = min(earliest, alias.created_at)
        plans.append(
            AliasPlan(
                uuid=alias.uuid,
                name=alias.name,
                active_edges=n_active,
                duplicate_edges=n_dup,
                foreign_edges_skipped=n_foreign,
            )
        )
        rewritten += n_active - n_dup
        dedup += n_dup
        foreign += n_foreign
    outcome = MergeOutcome(
        canonical_uuid=canonical.uuid,
        canonical_created_at=earliest,
        aliases=tombstones,
        edges_created=created,
        edges_invalidated=invalidated,
    )
    return outcome, plans, rewritten, dedup, foreign


def _canonical(
    ws: Workspace, group_id: str, canonical_uuid: str | None, canonical_name: str | None
) -> EntityRecord | str:
    """The canonical entity named by uuid or name, or why there is none to merge into."""
    if canonical_uuid:
        found = gr.entity_record(ws.graph, canonical_uuid)
        if found is None:
            return f"canonical entity '{canonical_uuid}' not found"
        if found[0] != group_id:
            return (
                f"canonical entity '{canonical_uuid}' belongs to group '{found[0]}', "
                f"not '{group_id}'"
            )
        canonical = found[1]
    else:
        named = [
            e
            for e in gr.entities_by_name(ws.graph, group_id, canonical_name or "")
            if MERGED_LABEL not in e.labels
        ]
        if not named:
            return f"canonical name '{canonical_name}' matches no entities"
        canonical = named[0]
    if MERGED_LABEL in canonical.labels:
        return f"canonical entity '{canonical.uuid}' is already merged"
    return canonical


def _candidates(
    ws: Workspace,
    group_id: str,
    canonical: EntityRecord,
    alias_uuids: list[str] | None,
    alias_names: list[str] | None,
    merge_all_by_name: bool,
    errors: list[str],
) -> dict[str, EntityRecord]:
    """The entities named as aliases, by uuid (never the canonical one); what names none goes
    to ``errors``."""
    candidates: dict[str, EntityRecord] = {}
    for uuid in alias_uuids or []:
        found = gr.entity_record(ws.graph, uuid)
        if found is None:
            errors.append(f"alias entity '{uuid}' not found")
        elif found[0] != group_id:
            errors.append(f"alias entity '{uuid}' belongs to group '{found[0]}'")
        else:
            candidates[uuid] = found[1]
    for name in alias_names or []:
        matches = gr.entities_by_name(ws.graph, group_id, name)
        if not matches:
            errors.append(f"alias name '{name}' matches no entities")
        candidates.update((m.uuid, m) for m in matches)
    if merge_all_by_name:
        for m in gr.entities_by_name(ws.graph, group_id, canonical.name):
            candidates[m.uuid] = m
    candidates.pop(canonical.uuid, None)
    return candidates


def merge_entities(
    ws: Workspace,
    *,
    group_id: str,
    canonical_uuid: str | None = None,
    canonical_name: str | None = None,
    alias_uuids: list[str] | None = None,
    alias_names: list[str] | None = None,
    merge_all_by_name: bool = False,
    dry_run: bool = False,
) -> MergeResult:
    """Merge aliases into a canonical entity of ``group_id``."""
    if not canonical_uuid and not canonical_name:
        return _soft("either canonical_uuid or canonical_name is required")
    if not alias_uuids and not alias_names and not merge_all_by_name:
        return _soft("no aliases given: pass alias_uuids, alias_names or merge_all_by_name")
    with ws.group_lock(group_id):
        with ws.reading():
            canonical = _canonical(ws, group_id, canonical_uuid, canonical_name)
            if isinstance(canonical, str):
                return _soft(canonical)
            errors: list[str] = []
            candidates = _candidates(
                ws, group_id, canonical, alias_uuids, alias_names, merge_all_by_name, errors
            )
            skipped: list[str] = []
            aliases: list[EntityRecord] = []
            for uuid in sorted(candidates):
                if MERGED_LABEL in candidates[uuid].labels:
                    skipped.append(uuid)
                else:
                    aliases.append(candidates[uuid])
            outcome, plans, rewritten, dedup, foreign = plan_merge(
                ws, group_id, canonical, aliases, timestamps.now()
            )
        success = all("not found" in e or "matches no entities" in e for e in errors)
        result = MergeResult(
            success=success,
            canonical_uuid=canonical.uuid,
            merged_count=len(aliases),
            skipped=skipped,
            edges_rewritten=rewritten,
            edges_deduplicated=dedup,
            foreign_edges_skipped=foreign,
            errors=errors,
            dry_run=dry_run,
        )
        if dry_run:
            result.plan = MergePlan(
                aliases=plans,
                total_edges_rewritten=rewritten,
                total_edges_collapsed=dedup,
                total_foreign_edges_skipped=foreign,
            )
            return result
        if aliases:
            ws.commit(group_id, [EntitiesMerged(group_id=group_id, merge=outcome)])
    return result
