"""Direct assertion of entities and relationships (no LLM), as the reference's
``knowledge_assert_entity`` and ``knowledge_assert_relationship``.

Entities are found by uuid (strictly within the group) or by their name's lookup key
(trimmed, NFC, case-folded: ``lcg.events.keys``, ADR 0151; earliest ``created_at``, then
uuid); a ``Merged`` tombstone is followed through
``attributes.merged_into`` to its survivor. An update replaces name, labels, summary and
attributes; ``created_at`` is kept. Relationships are upserted by (source, predicate, target)
among current edges of the group.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lcg import timestamps
from lcg.errors import InvalidParamsError, NotFoundError, RequestError
from lcg.events import EdgeRecord, EntityAsserted, EntityRecord, RelationshipAsserted, lookup_key
from lcg.ingest._common import attributes_text, new_uuid
from lcg.projections import MERGED_LABEL
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

__all__ = [
    "AssertEntityResult",
    "AssertRelationshipResult",
    "assert_entity",
    "assert_relationship",
    "follow_merged",
    "resolve_entity_by_name",
]

_MAX_FORWARDS = 64


class AssertEntityResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_assert_entity``."""

    entity_uuid: str
    created: bool
    embedding_warning: str | None = None


class AssertRelationshipResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_assert_relationship``."""

    edge_uuid: str
    created: bool
    embedding_warning: str | None = None


def follow_merged(ws: Workspace, group_id: str, record: EntityRecord) -> EntityRecord:
    """Follow ``merged_into`` from a tombstone to the surviving entity of the same group."""
    seen = {record.uuid}
    current = record
    for _ in range(_MAX_FORWARDS):
        if MERGED_LABEL not in current.labels:
            return current
        target = gr.merged_into(current)
        found = gr.entity_record(ws.graph, target) if target else None
        if target is None or found is None or found[0] != group_id or target in seen:
            raise NotFoundError(
                f"entity '{record.uuid}' was merged, but its merged_into chain ends at "
                f"{target or 'nothing'!r} outside group '{group_id}'; assert it by uuid instead"
            )
        seen.add(target)
        current = found[1]
    raise NotFoundError(f"entity '{record.uuid}': merged_into chain is too long")


def resolve_entity_by_name(ws: Workspace, group_id: str, name: str) -> EntityRecord | None:
    """The entity named ``name`` (trimmed, case-insensitive) in the group, merges followed."""
    candidates = gr.entities_by_name(ws.graph, group_id, name)
    if not candidates:
        return None
    return follow_merged(ws, group_id, candidates[0])


def _labels(labels: Any) -> list[str]:
    out = ["Entity"]
    if isinstance(labels, list):
        for label in labels:
            if isinstance(label, str) and label and label not in out:
                out.append(label)
    return out


def _embedding_warning(ws: Workspace, group_id: str) -> str | None:
    failure = ws.projector.embedder_failures.get(group_id)
    if failure is None:
        return None
    return f"embedding deferred (vectors will catch up when the embedder answers): {failure}"


def assert_entity(
    ws: Workspace,
    *,
    name: str,
    group_id: str,
    entity_uuid: str | None = None,
    labels: Any = None,
    summary: str = "",
    attributes: Any = None,
) -> AssertEntityResult:
    """Create or update one entity; record the decision as ``EntityAsserted``."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidParamsError("name is required and must be a non-empty string")
    with ws.group_lock(group_id):
        with ws.reading():
            existing: EntityRecord | None
            if entity_uuid:
                found = gr.entity_record(ws.graph, entity_uuid)
                if found is None or found[0] != group_id:
                    raise NotFoundError(
                        f"entity_uuid '{entity_uuid}' does not exist in group '{group_id}'"
                    )
                existing = follow_merged(ws, group_id, found[1])
            else:
                existing = resolve_entity_by_name(ws, group_id, name)
            # Only a change of the name's key can take a name another entity holds: an update
            # that keeps it goes to the oldest holder, even where an older lcg made several
            # (two "ΟΔΥΣΣΕΥΣ", before names were found by their key: ADR 0151).
            if existing is not None and lookup_key(existing.name) != lookup_key(name):
                holders = gr.entities_by_name(ws.graph, group_id, name)
                clash = [
                    h for h in holders if h.uuid != existing.uuid and MERGED_LABEL not in h.labels
                ]
                if clash:
                    # The graph's state refuses it, not the parameters: -32000 (reference).
                    raise RequestError(
                        f"cannot rename entity '{existing.uuid}' to '{name}': entity "
                        f"'{clash[0].uuid}' already has that name in group '{group_id}'"
                    )
        record = EntityRecord(
            uuid=existing.uuid if existing else new_uuid(),
            name=name,
            labels=_labels(labels),
            summary=summary if isinstance(summary, str) else "",
            attributes=attributes_text(attributes),
            created_at=existing.created_at if existing else timestamps.now(),
        )
        ws.commit(
            group_id,
            [EntityAsserted(group_id=group_id, entity=record, created=existing is None)],
        )
    return AssertEntityResult(
        entity_uuid=record.uuid,
        created=existing is None,
        embedding_warning=_embedding_warning(ws, group_id),
    )


def assert_relationship(
    ws: Workspace,
    *,
    source_name: str,
    target_name: str,
    predicate: str,
    group_id: str,
    fact: str | None = None,
    attributes: Any = None,
    relation_type: str | None = None,
    valid_at: str | None = None,
) -> AssertRelationshipResult:
    """Create or update the edge (source, predicate, target); record ``RelationshipAsserted``."""
    for field, value in (
        ("source_name", source_name),
        ("target_name", target_name),
        ("predicate", predicate),
    ):
        if not isinstance(value, str) or not value.strip():
            raise InvalidParamsError(f"{field} is required and must be a non-empty string")
    with ws.group_lock(group_id):
        with ws.reading():
            ends: list[EntityRecord] = []
            for role, name in (("source", source_name), ("target", target_name)):
                record = resolve_entity_by_name(ws, group_id, name)
                if record is None:
                    raise NotFoundError(
                        f"{role} entity '{name}' not found in group '{group_id}'; assert it "
                        "first, or link across groups with knowledge_add_cross_group_edge"
                    )
                ends.append(record)
            src, dst = ends
            current = gr.active_edges_between(ws.graph, group_id, src.uuid, predicate, dst.uuid)
        text = (
            fact
            if isinstance(fact, str) and fact.strip()
            else (f"{source_name} {predicate} {target_name}")
        )
        rtype = relation_type if isinstance(relation_type, str) and relation_type else None
        if current:
            old = current[0]
            edge = msgspec.structs.replace(
                old,
                fact=text,
                valid_at=valid_at,
                relation_type=rtype,
                attributes=attributes_text(attributes),
            )
        else:
            edge = EdgeRecord(
                uuid=new_uuid(),
                name=predicate,
                source_uuid=src.uuid,
                target_uuid=dst.uuid,
                fact=text,
                relation_type=rtype,
                valid_at=valid_at,
                attributes=attributes_text(attributes),
                created_at=timestamps.now(),
            )
        ws.commit(
            group_id,
            [RelationshipAsserted(group_id=group_id, edge=edge, created=not current)],
        )
    return AssertRelationshipResult(
        edge_uuid=edge.uuid,
        created=not current,
        embedding_warning=_embedding_warning(ws, group_id),
    )
