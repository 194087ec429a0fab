"""Turn the rows of a replayed reference graph into our events, one group at a time.

The events are the ones ``lcg dump`` writes for the same state (``ingest/dump``): an
``EntityAsserted`` per entity, a ``RelationshipAsserted`` per edge (``CrossGroupEdgeAdded``
for one with cross-group pointers or without both hops), then per episode an
``EpisodeAdded`` and an ``EpisodeExtracted`` carrying its mentions. Uuids, names, summaries,
facts, labels, attributes, relation types, times and edge episode lists are kept as the rows
hold them; vectors are not (the projections embed the text again). A row that cannot become an
event is counted with its reason, never dropped silently; rows of the reference's unused
tables (``Community``, ``Saga`` and their relationships) are such rows, and so is a row whose
uuid another group of the workspace already holds (``foreign``): importing it would reach into
that group's rows, so it is refused, with the edges and mentions that lead to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Final, Literal

from lcg import timestamps
from lcg.errors import GroupNameError
from lcg.events import (
    CrossGroupEdgeAdded,
    EdgeRecord,
    EntityAsserted,
    EntityRecord,
    EpisodeAdded,
    EpisodeExtracted,
    Event,
    RelationshipAsserted,
    encode_group,
)
from lcg.ingest.episodes import content_hash
from lcg.ingest.reference.model import ReferenceGraph
from lcg.ingest.reference.replay import LineReport
from lcg.projections import graph_pointers as pointers

__all__ = [
    "CARRIED_TABLES",
    "Foreign",
    "GroupRows",
    "events_of_group",
    "groups_of_rows",
    "rows_of_groups",
    "rows_of_no_group",
    "rows_of_other_groups",
]

_Source = Literal["text", "json", "message"]
_SOURCES: Final[dict[object, _Source]] = {"text": "text", "json": "json", "message": "message"}

#: The tables whose rows become events, and what a row of each is called in a report.
CARRIED_TABLES: Final = {"Entity": "entity", "RelatesToNode_": "edge", "Episodic": "episode"}
#: Per carried table, the uuids another group of the workspace holds, and that group.
Foreign = dict[str, dict[str, str]]
_Row = dict[str, Any]

#: The reference's tables and relationships we hold no event for (lcg-api §5.1 "stubs").
_UNCARRIED_NODES: Final = {"community_row": "Community", "saga_row": "Saga"}
_UNCARRIED_RELS: Final = {
    "has_member_rel": "HAS_MEMBER",
    "has_episode_rel": "HAS_EPISODE",
    "next_episode_rel": "NEXT_EPISODE",
}


def _time(value: Any) -> str | None:
    if value is None:
        return None
    assert isinstance(value, datetime)
    return timestamps.to_text(value)


def _of_group(g: ReferenceGraph, table: str, group_id: str) -> Iterator[tuple[str, _Row]]:
    rows = g.nodes[table]
    for uuid in sorted(rows):
        if rows[uuid].get("group_id") == group_id:
            yield uuid, rows[uuid]


class GroupRows:
    """Counts of what one group's events carry."""

    def __init__(self) -> None:
        self.entities = 0
        self.edges = 0
        self.episodes = 0
        self.mentions = 0


def _refused(report: LineReport, foreign: Foreign, table: str, uuid: str) -> bool:
    owner = foreign.get(table, {}).get(uuid)
    if owner is None:
        return False
    report.skip(
        "uuid_of_another_group",
        f"{CARRIED_TABLES[table]} {uuid}",
        f"uuid {uuid} belongs to group {owner!r} in this workspace; importing the row would "
        "change that group's",
    )
    return True


def _entities(
    g: ReferenceGraph, group_id: str, report: LineReport, foreign: Foreign
) -> tuple[list[Event], set[str]]:
    events: list[Event] = []
    kept: set[str] = set()
    for uuid, row in _of_group(g, "Entity", group_id):
        name, created = row.get("name"), row.get("created_at")
        if _refused(report, foreign, "Entity", uuid):
            continue
        if not name:
            report.skip("entity_without_name", f"entity {uuid}", "no name")
            continue
        if created is None:
            report.skip("entity_without_created_at", f"entity {uuid}", f"{name!r}: no created_at")
            continue
        labels = row.get("labels")
        record = EntityRecord(
            uuid=uuid,
            name=name,
            labels=list(labels) if labels else ["Entity"],
            summary=row.get("summary") or "",
            attributes=row.get("attributes") or "{}",
            created_at=timestamps.to_text(created),
        )
        events.append(EntityAsserted(group_id=group_id, entity=record, created=True))
        kept.add(uuid)
    return events, kept


def _endpoints(g: ReferenceGraph, group_id: str) -> dict[str, tuple[list[str], list[str]]]:
    """Per edge of the group, the entities of its source hops and of its target hops."""
    ends: dict[str, tuple[list[str], list[str]]] = {}
    edges = g.nodes["RelatesToNode_"]
    for r in g.all_rels("RELATES_TO"):
        (st, s), (dt, d) = r.src, r.dst
        if st == "Entity" and dt == "RelatesToNode_" and edges[d].get("group_id") == group_id:
            ends.setdefault(d, ([], []))[0].append(s)
        elif st == "RelatesToNode_" and dt == "Entity" and edges[s].get("group_id") == group_id:
            ends.setdefault(s, ([], []))[1].append(d)
    for sources, targets in ends.values():
        sources.sort()
        targets.sort()
    return ends


def _edge_record(uuid: str, row: _Row, src: str, dst: str) -> EdgeRecord:
    created = row["created_at"]
    return EdgeRecord(
        uuid=uuid,
        name=row.get("name") or "",
        source_uuid=src,
        target_uuid=dst,
        fact=row.get("fact") or "",
        relation_type=row.get("relation_type") or None,
        valid_at=_time(row.get("valid_at")),
        invalid_at=_time(row.get("invalid_at")),
        expired_at=_time(row.get("expired_at")),
        episodes=list(row.get("episodes") or []),
        attributes=row.get("attributes") or "{}",
        created_at=timestamps.to_text(created),
    )


def _edges(
    g: ReferenceGraph, group_id: str, entities: set[str], report: LineReport, foreign: Foreign
) -> list[Event]:
    events: list[Event] = []
    ends = _endpoints(g, group_id)
    groups = {u: row.get("group_id") for u, row in g.nodes["Entity"].items()}
    elsewhere = foreign.get("Entity", {})
    for uuid, row in _of_group(g, "RelatesToNode_", group_id):
        where = f"edge {uuid}"
        if _refused(report, foreign, "RelatesToNode_", uuid):
            continue
        if row.get("created_at") is None:
            report.skip("edge_without_created_at", where, f"{row.get('fact')!r}: no created_at")
            continue
        sources, targets = ends.get(uuid, ([], []))
        if len(sources) > 1 or len(targets) > 1:
            report.skip(
                "edge_with_several_endpoints", where, f"sources {sources}, targets {targets}"
            )
            continue
        src = sources[0] if sources else ""
        dst = targets[0] if targets else ""
        # An endpoint refused as another group's would bind the edge to that group's entity.
        skipped = [
            e
            for e in (src, dst)
            if e and (e in elsewhere or (e not in entities and groups.get(e) == group_id))
        ]
        if skipped:
            report.skip("edge_endpoint_not_imported", where, f"endpoint {skipped[0]} was skipped")
            continue
        edge = _edge_record(uuid, row, src, dst)
        # As ``lcg dump`` chooses: an edge with pointers or without both hops is cross-group.
        if pointers.ATTRIBUTE in edge.attributes or not (src and dst):
            events.append(CrossGroupEdgeAdded(group_id=group_id, edge=edge))
        else:
            events.append(RelationshipAsserted(group_id=group_id, edge=edge, created=True))
    return events


def _mentions(g: ReferenceGraph, group_id: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    episodes = g.nodes["Episodic"]
    for r in g.all_rels("MENTIONS"):
        ep, en = r.src[1], r.dst[1]
        if episodes[ep].get("group_id") == group_id:
            found.setdefault(ep, []).append(en)
    for entities in found.values():
        entities.sort()
    return found


def _episode_order(item: tuple[str, _Row]) -> tuple[bool, datetime, str]:
    created = item[1].get("created_at")
    return created is None, created or datetime.min, item[0]


def _episodes(
    g: ReferenceGraph,
    group_id: str,
    entities: set[str],
    report: LineReport,
    counts: GroupRows,
    foreign: Foreign,
) -> list[Event]:
    events: list[Event] = []
    linked = _mentions(g, group_id)
    for uuid, row in sorted(_of_group(g, "Episodic", group_id), key=_episode_order):
        where = f"episode {uuid}"
        name, created, source = row.get("name"), row.get("created_at"), row.get("source")
        if _refused(report, foreign, "Episodic", uuid):
            continue
        if created is None:
            report.skip("episode_without_created_at", where, f"{name!r}: no created_at")
            continue
        kind = _SOURCES.get(source)
        if kind is None:
            report.skip("episode_source_unknown", where, f"source {source!r} imported as 'text'")
            kind = "text"
        # The column lists the episode's entities; MENTIONS links them. Either is kept.
        mentioned: list[str] = []
        for en in [*(row.get("entity_edges") or []), *linked.get(uuid, [])]:
            if en in mentioned:
                continue
            if en not in entities:
                report.skip("mention_of_missing_entity", where, f"entity {en} is not imported")
                continue
            mentioned.append(en)
        text = row.get("content") or ""
        events.append(
            EpisodeAdded(
                group_id=group_id,
                uuid=uuid,
                name=name or "",
                source=kind,
                source_description=row.get("source_description") or "",
                content=text,
                created_at=timestamps.to_text(created),
                valid_at=_time(row.get("valid_at")),
                content_hash=content_hash(text),
            )
        )
        events.append(EpisodeExtracted(group_id=group_id, episode_uuid=uuid, mentions=mentioned))
        counts.episodes += 1
        counts.mentions += len(mentioned)
    return events


def _uncarried(g: ReferenceGraph, group_id: str, report: LineReport) -> None:
    why = "the reference's stub table; lcg has no event for it"
    for reason, table in _UNCARRIED_NODES.items():
        for uuid, _ in _of_group(g, table, group_id):
            report.skip(reason, f"{table} {uuid}", why)
    for reason, rel in _UNCARRIED_RELS.items():
        for what in sorted(
            f"{r.src[1]}->{r.dst[1]}"
            for r in g.all_rels(rel)
            if r.props.get("group_id") == group_id
        ):
            report.skip(reason, what, why)


def events_of_group(
    g: ReferenceGraph, group_id: str, report: LineReport, foreign: Foreign | None = None
) -> tuple[list[Event], GroupRows]:
    """The events that reproduce ``group_id``'s rows of ``g``; what was not mapped (a row
    whose uuid ``foreign`` names among them) goes to ``report``."""
    foreign = foreign or {}
    counts = GroupRows()
    entity_events, entities = _entities(g, group_id, report, foreign)
    counts.entities = len(entity_events)
    edge_events = _edges(g, group_id, entities, report, foreign)
    counts.edges = len(edge_events)
    episode_events = _episodes(g, group_id, entities, report, counts, foreign)
    _uncarried(g, group_id, report)
    direct = sum(
        1
        for r in g.all_rels("RELATES_TO")
        if r.src[0] == r.dst[0] == "Entity" and r.props.get("group_id") == group_id
    )
    # The direct Entity->Entity copy of each edge is write-only in the reference and never
    # written by lcg (ADR 0086): the reified edge above carries the same data.
    report.note("direct_relationships_dropped", direct)
    return [*entity_events, *edge_events, *episode_events], counts


def rows_of_groups(g: ReferenceGraph, groups: list[str]) -> dict[str, list[str]]:
    """Per carried table, the uuids of the rows ``groups`` hold (those an import writes)."""
    wanted = set(groups)
    return {
        table: sorted(u for u, row in g.nodes[table].items() if row.get("group_id") in wanted)
        for table in CARRIED_TABLES
    }


def rows_of_no_group(g: ReferenceGraph, groups: list[str], report: LineReport) -> None:
    """Count the rows whose ``group_id`` is none of ``groups``: no stream receives them."""
    for table in CARRIED_TABLES:
        rows = g.nodes[table]
        for uuid in sorted(rows):
            gid = rows[uuid].get("group_id")
            if gid is None or gid not in groups:
                report.skip("row_of_no_imported_group", f"{table} {uuid}", f"group_id {gid!r}")


def _a_group(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        encode_group(value)
    except GroupNameError:
        return None
    return value


def groups_of_rows(g: ReferenceGraph) -> list[str]:
    """Every group a row of ``g`` names in its ``group_id`` (any table), sorted; a value that
    cannot name a group (absent, empty, not a string, too long) names none."""
    named = {_a_group(row.get("group_id")) for rows in g.nodes.values() for row in rows.values()}
    return sorted(gid for gid in named if gid is not None)


def rows_of_other_groups(g: ReferenceGraph, found: list[str], chosen: list[str]) -> int:
    """How many carried rows name a group of ``found`` that is not ``chosen``."""
    others = set(found) - set(chosen)
    return sum(
        1
        for table in CARRIED_TABLES
        for row in g.nodes[table].values()
        if row.get("group_id") in others
    )
