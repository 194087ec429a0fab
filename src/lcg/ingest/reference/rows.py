"""Turn the rows of a replayed reference graph into our events, one group at a time.

The events are the ones ``lcg dump`` writes for the same state (``ingest/dump``): an
``EntityAsserted`` per entity, a ``RelationshipAsserted`` per edge (``CrossGroupEdgeAdded``
for one with cross-group pointers or without both hops), then per episode an
``EpisodeAdded`` and an ``EpisodeExtracted`` carrying its mentions. Uuids, names, summaries,
facts, labels, attributes, relation types, times and edge episode lists are kept as the rows
hold them; vectors are not (the projections embed the text again). A row that cannot become an
event is counted with its reason, never dropped silently; rows of the reference's unused
tables (``Community``, ``Saga`` and their relationships) are such rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lcg import timestamps
from lcg.events import (
    CrossGroupEdgeAdded,
    EdgeRecord,
    EntityAsserted,
    EntityRecord,
    EpisodeAdded,
    EpisodeExtracted,
    Event,
    RelationshipAsserted,
)
from lcg.ingest.episodes import content_hash
from lcg.ingest.reference.scratch import LineReport, ScratchGraph
from lcg.projections import graph_pointers as pointers

__all__ = ["GroupRows", "events_of_group", "rows_of_no_group"]

_SOURCES = ("text", "json", "message")

#: The reference's tables we hold no event for (lcg-api §5.1 "stubs for legacy statements").
_UNCARRIED = {
    "community_row": "MATCH (n:Community) RETURN 'Community ' + n.uuid, n.group_id",
    "saga_row": "MATCH (n:Saga) RETURN 'Saga ' + n.uuid, n.group_id",
    "has_member_rel": "MATCH (a)-[r:HAS_MEMBER]->(b) RETURN a.uuid + '->' + b.uuid, r.group_id",
    "has_episode_rel": "MATCH (a)-[r:HAS_EPISODE]->(b) RETURN a.uuid + '->' + b.uuid, r.group_id",
    "next_episode_rel": (
        "MATCH (a)-[r:NEXT_EPISODE]->(b) RETURN a.uuid + '->' + b.uuid, r.group_id"
    ),
}


def _time(value: Any) -> str | None:
    if value is None:
        return None
    assert isinstance(value, datetime)
    return timestamps.to_text(value)


class GroupRows:
    """Counts of what one group's events carry."""

    def __init__(self) -> None:
        self.entities = 0
        self.edges = 0
        self.episodes = 0
        self.mentions = 0


def _entities(g: ScratchGraph, group_id: str, report: LineReport) -> tuple[list[Event], set[str]]:
    events: list[Event] = []
    kept: set[str] = set()
    rows = g.rows(
        "MATCH (e:Entity) WHERE e.group_id = $g RETURN e.uuid, e.name, e.labels, e.created_at, "
        "e.summary, e.attributes, e.name_embedding IS NOT NULL OR e.summary_embedding IS NOT "
        "NULL ORDER BY e.uuid",
        {"g": group_id},
    )
    for uuid, name, labels, created, summary, attributes, vector in rows:
        if not name:
            report.skip("entity_without_name", f"entity {uuid}", "no name")
            continue
        if created is None:
            report.skip("entity_without_created_at", f"entity {uuid}", f"{name!r}: no created_at")
            continue
        report.note("vectors_dropped", int(bool(vector)))
        record = EntityRecord(
            uuid=uuid,
            name=name,
            labels=list(labels) if labels else ["Entity"],
            summary=summary or "",
            attributes=attributes or "{}",
            created_at=timestamps.to_text(created),
        )
        events.append(EntityAsserted(group_id=group_id, entity=record, created=True))
        kept.add(uuid)
    return events, kept


def _endpoints(g: ScratchGraph, group_id: str) -> dict[str, tuple[list[str], list[str]]]:
    ends: dict[str, tuple[list[str], list[str]]] = {}
    for rn, src in g.rows(
        "MATCH (s:Entity)-[:RELATES_TO]->(r:RelatesToNode_) WHERE r.group_id = $g "
        "RETURN r.uuid, s.uuid ORDER BY s.uuid",
        {"g": group_id},
    ):
        ends.setdefault(rn, ([], []))[0].append(src)
    for rn, dst in g.rows(
        "MATCH (r:RelatesToNode_)-[:RELATES_TO]->(d:Entity) WHERE r.group_id = $g "
        "RETURN r.uuid, d.uuid ORDER BY d.uuid",
        {"g": group_id},
    ):
        ends.setdefault(rn, ([], []))[1].append(dst)
    return ends


def _edges(g: ScratchGraph, group_id: str, entities: set[str], report: LineReport) -> list[Event]:
    events: list[Event] = []
    ends = _endpoints(g, group_id)
    groups = {u: gid for u, gid in g.rows("MATCH (e:Entity) RETURN e.uuid, e.group_id")}
    rows = g.rows(
        "MATCH (r:RelatesToNode_) WHERE r.group_id = $g RETURN r.uuid, r.name, r.fact, "
        "r.relation_type, r.valid_at, r.invalid_at, r.expired_at, r.episodes, r.attributes, "
        "r.created_at, r.fact_embedding IS NOT NULL ORDER BY r.uuid",
        {"g": group_id},
    )
    for uuid, name, fact, rtype, valid, invalid, expired, episodes, attrs, created, vec in rows:
        where = f"edge {uuid}"
        if created is None:
            report.skip("edge_without_created_at", where, f"{fact!r}: no created_at")
            continue
        sources, targets = ends.get(uuid, ([], []))
        if len(sources) > 1 or len(targets) > 1:
            report.skip(
                "edge_with_several_endpoints", where, f"sources {sources}, targets {targets}"
            )
            continue
        src = sources[0] if sources else ""
        dst = targets[0] if targets else ""
        skipped = [e for e in (src, dst) if e and e not in entities and groups.get(e) == group_id]
        if skipped:
            report.skip("edge_endpoint_not_imported", where, f"endpoint {skipped[0]} was skipped")
            continue
        report.note("vectors_dropped", int(bool(vec)))
        edge = EdgeRecord(
            uuid=uuid,
            name=name or "",
            source_uuid=src,
            target_uuid=dst,
            fact=fact or "",
            relation_type=rtype or None,
            valid_at=_time(valid),
            invalid_at=_time(invalid),
            expired_at=_time(expired),
            episodes=list(episodes or []),
            attributes=attrs or "{}",
            created_at=timestamps.to_text(created),
        )
        # As ``lcg dump`` chooses: an edge with pointers or without both hops is cross-group.
        if pointers.ATTRIBUTE in edge.attributes or not (src and dst):
            events.append(CrossGroupEdgeAdded(group_id=group_id, edge=edge))
        else:
            events.append(RelationshipAsserted(group_id=group_id, edge=edge, created=True))
    return events


def _mentions(g: ScratchGraph, group_id: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for ep, en in g.rows(
        "MATCH (p:Episodic)-[:MENTIONS]->(e:Entity) WHERE p.group_id = $g "
        "RETURN p.uuid, e.uuid ORDER BY e.uuid",
        {"g": group_id},
    ):
        found.setdefault(ep, []).append(en)
    return found


def _episodes(
    g: ScratchGraph, group_id: str, entities: set[str], report: LineReport, counts: GroupRows
) -> list[Event]:
    events: list[Event] = []
    linked = _mentions(g, group_id)
    rows = g.rows(
        "MATCH (p:Episodic) WHERE p.group_id = $g RETURN p.uuid, p.name, p.source, "
        "p.source_description, p.content, p.created_at, p.valid_at, p.entity_edges, "
        "p.content_embedding IS NOT NULL ORDER BY p.created_at, p.uuid",
        {"g": group_id},
    )
    for uuid, name, source, description, content, created, valid, edges, vec in rows:
        where = f"episode {uuid}"
        if created is None:
            report.skip("episode_without_created_at", where, f"{name!r}: no created_at")
            continue
        if source not in _SOURCES:
            report.skip("episode_source_unknown", where, f"source {source!r} imported as 'text'")
            source = "text"
        report.note("vectors_dropped", int(bool(vec)))
        # The column lists the episode's entities; MENTIONS links them. Either is kept.
        mentioned: list[str] = []
        for en in [*(edges or []), *linked.get(uuid, [])]:
            if en in mentioned:
                continue
            if en not in entities:
                report.skip("mention_of_missing_entity", where, f"entity {en} is not imported")
                continue
            mentioned.append(en)
        text = content or ""
        events.append(
            EpisodeAdded(
                group_id=group_id,
                uuid=uuid,
                name=name or "",
                source=source,
                source_description=description or "",
                content=text,
                created_at=timestamps.to_text(created),
                valid_at=_time(valid),
                content_hash=content_hash(text),
            )
        )
        events.append(EpisodeExtracted(group_id=group_id, episode_uuid=uuid, mentions=mentioned))
        counts.episodes += 1
        counts.mentions += len(mentioned)
    return events


def events_of_group(
    g: ScratchGraph, group_id: str, report: LineReport
) -> tuple[list[Event], GroupRows]:
    """The events that reproduce ``group_id``'s rows of ``g``; what was not mapped goes to
    ``report``."""
    counts = GroupRows()
    entity_events, entities = _entities(g, group_id, report)
    counts.entities = len(entity_events)
    edge_events = _edges(g, group_id, entities, report)
    counts.edges = len(edge_events)
    episode_events = _episodes(g, group_id, entities, report, counts)
    for reason, query in _UNCARRIED.items():
        for what, gid in g.rows(query):
            if gid == group_id:
                report.skip(
                    reason, str(what), "the reference's stub table; lcg has no event for it"
                )
    direct = g.rows(
        "MATCH (:Entity)-[r:RELATES_TO]->(:Entity) WHERE r.group_id = $g RETURN count(*)",
        {"g": group_id},
    )
    # The direct Entity->Entity copy of each edge is write-only in the reference and never
    # written by lcg (ADR 0086): the reified edge above carries the same data.
    report.note("direct_relationships_dropped", int(direct[0][0]) if direct else 0)
    return [*entity_events, *edge_events, *episode_events], counts


def rows_of_no_group(g: ScratchGraph, groups: list[str], report: LineReport) -> None:
    """Count the rows whose ``group_id`` is none of ``groups``: no stream receives them."""
    for table in ("Entity", "RelatesToNode_", "Episodic"):
        for uuid, gid in g.rows(
            f"MATCH (n:{table}) WHERE n.group_id IS NULL OR NOT n.group_id IN $gs "
            "RETURN n.uuid, n.group_id ORDER BY n.uuid",
            {"gs": groups},
        ):
            report.skip("row_of_no_imported_group", f"{table} {uuid}", f"group_id {gid!r}")
