"""Full-fidelity reads of the graph for the commands that decide events, and for dumps.

Rows for clients (``lcg.query``'s graph reads) render timestamps to seconds; the commands need the
records as events carry them (RFC 3339 with microseconds), so a decision never loses
precision. Every function here reads through the projection's read connection. The reads of
a group's sources and declared structure are ``source_records``'s, offered here too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from lcg import timestamps
from lcg.errors import ProjectionError
from lcg.events import EdgeRecord, EntityRecord, chunk_description, lookup_key
from lcg.projections.graph._schema import select
from lcg.projections.graph._statements import EDGE_FIELDS
from lcg.projections.graph._states import edge_from_row, entity_from_row
from lcg.projections.graph.pointers import ATTRIBUTE, pointers_of
from lcg.projections.graph.projection import GraphProjection
from lcg.projections.graph.rows import GroupCounts
from lcg.projections.graph.source_records import (
    ChunkEpisode,
    EpisodeMention,
    SourceRecord,
    chunk_episodes,
    chunk_episodes_named,
    chunk_episodes_under,
    declared_kind_entities,
    edges_of_types,
    episode_mentions,
    episodes_present,
    mentions_of_entities,
    source_records,
)

__all__ = [
    "ChunkEpisode",
    "CurrentEdge",
    "EpisodeMention",
    "EpisodeRecord",
    "SourceRecord",
    "active_edges_among",
    "active_edges_between",
    "all_edges",
    "all_entities",
    "all_episodes",
    "chunk_episodes",
    "chunk_episodes_named",
    "chunk_episodes_under",
    "declared_kind_entities",
    "edges_of_entity",
    "edges_of_types",
    "edges_with_pointers",
    "entities_by_name",
    "entity_record",
    "entity_uuids_by_keys",
    "episode_by_name_and_hash",
    "episode_group",
    "episode_mentions",
    "episode_record",
    "episode_time_bounds",
    "episodes_by_chunk",
    "episodes_by_source",
    "episodes_present",
    "group_counts",
    "mentions_of_entities",
    "merged_into",
    "other_texts_of_chunk",
    "ping",
    "pointer_counts",
    "query_cypher",
    "source_records",
    "unbound_impacts",
    "unextracted_count",
]

_ENTITY_COLS = select("e", "Entity")
_EDGE_COLS = select("r", "RelatesToNode_", EDGE_FIELDS)


class EpisodeRecord(msgspec.Struct, kw_only=True):
    """An episode as its events describe it, plus its extraction state."""

    uuid: str
    group_id: str
    name: str
    source: str
    source_description: str
    content: str
    created_at: str
    valid_at: str | None
    content_hash: str
    extracted: bool
    mentions: list[str]


class CurrentEdge(msgspec.Struct, frozen=True, kw_only=True):
    """A current edge between two entities as restatement compares it: its ends, its type,
    fact and attributes text, and ``created_at`` as the graph's value prints."""

    source_uuid: str
    target_uuid: str
    uuid: str
    relation_type: str
    fact: str
    created_at: str
    attributes: str


def _ts(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return timestamps.to_text(value)
    return str(value)


def _rows(
    graph: GraphProjection, query: str, params: dict[str, Any] | None = None
) -> list[list[Any]]:
    return graph.query(query, params or {})


def _entity(row: list[Any]) -> tuple[str, EntityRecord]:
    state = entity_from_row(row)
    return row[2], EntityRecord(
        uuid=state.uuid,
        name=state.name,
        labels=state.labels,
        created_at=state.created_at or "",
        summary=state.summary,
        # The commands see "no attributes" one way: "{}" (as for edges below).
        attributes=state.attributes or "{}",
    )


def _edge(row: list[Any]) -> tuple[str, EdgeRecord]:
    group_id, rec = edge_from_row(row)
    # The commands see "no relation type" and "no attributes" one way each: None and "{}".
    if rec.relation_type == "" or rec.attributes == "":
        rec = msgspec.structs.replace(
            rec, relation_type=rec.relation_type or None, attributes=rec.attributes or "{}"
        )
    return group_id, rec


def ping(graph: GraphProjection) -> None:
    """Run a trivial query (readiness probe)."""
    _rows(graph, "RETURN 1")


def entity_record(graph: GraphProjection, uuid: str) -> tuple[str, EntityRecord] | None:
    """``(group_id, record)`` of the entity ``uuid``, or ``None``."""
    rows = _rows(graph, f"MATCH (e:Entity) WHERE e.uuid = $u RETURN {_ENTITY_COLS}", {"u": uuid})
    return _entity(rows[0]) if rows else None


def entities_by_name(graph: GraphProjection, group_id: str, name: str) -> list[EntityRecord]:
    """Entities of the group whose name has ``name``'s lookup key (trimmed, NFC, case-folded:
    ``lookup_key``); oldest first (``created_at``, then uuid: the first is the one a name
    resolves to, also where an older lcg made several)."""
    key = lookup_key(name)
    if not key:
        return []
    # The key column is folded in Python when the row is written; Kuzu's lower() folds
    # differently (final sigma, dotted I) and not at all across NFC/NFD (ADR 0151).
    rows = _rows(
        graph,
        f"MATCH (e:Entity) WHERE e.group_id = $g AND e.name_key = $k "
        f"RETURN {_ENTITY_COLS} ORDER BY e.created_at, e.uuid",
        {"g": group_id, "k": key},
    )
    return [_entity(r)[1] for r in rows]


def merged_into(record: EntityRecord) -> str | None:
    """The ``attributes.merged_into`` uuid of a tombstone, if any."""
    try:
        attrs = msgspec.json.decode(record.attributes or "{}")
    except msgspec.DecodeError:
        return None
    target = attrs.get("merged_into") if isinstance(attrs, dict) else None
    return target if isinstance(target, str) and target else None


def active_edges_between(
    graph: GraphProjection, group_id: str, source_uuid: str, name: str, target_uuid: str
) -> list[EdgeRecord]:
    """Current edges of the group named ``name`` from source to target; oldest first."""
    rows = _rows(
        graph,
        # One hop: an edge has both hops or none, and Kuzu plans one join (ADR 0086).
        "MATCH (s:Entity {uuid: $s})-[:RELATES_TO]->(r:RelatesToNode_) "
        "WHERE r.target_node_uuid = $t "
        f"AND r.name = $n AND r.group_id = $g AND r.invalid_at IS NULL "
        f"RETURN {_EDGE_COLS} ORDER BY r.created_at, r.uuid",
        {"s": source_uuid, "t": target_uuid, "n": name, "g": group_id},
    )
    return [_edge(r)[1] for r in rows]


def edges_of_entity(graph: GraphProjection, uuid: str) -> list[tuple[str, EdgeRecord]]:
    """Every edge touching ``uuid`` (either direction), with its owning group, by uuid."""
    rows = _rows(
        graph,
        # Either hop of a bound edge touches the entity (both, for a self-loop).
        f"MATCH (s:Entity {{uuid: $u}})-[:RELATES_TO]-(r:RelatesToNode_) "
        f"RETURN DISTINCT {_EDGE_COLS} ORDER BY r.uuid",
        {"u": uuid},
    )
    return [_edge(r) for r in rows]


def edges_with_pointers(graph: GraphProjection) -> list[tuple[str, EdgeRecord]]:
    """Every edge (bound or unbound) whose attributes carry cross-group pointers."""
    rows = _rows(
        graph,
        f"MATCH (r:RelatesToNode_) WHERE r.attributes CONTAINS "
        f"'{ATTRIBUTE}' RETURN {_EDGE_COLS} ORDER BY r.uuid",
    )
    return [_edge(r) for r in rows]


def episode_group(graph: GraphProjection, uuid: str) -> str | None:
    """The group of the episode ``uuid``, or ``None``."""
    rows = _rows(graph, "MATCH (p:Episodic) WHERE p.uuid = $u RETURN p.group_id", {"u": uuid})
    return rows[0][0] if rows else None


def _group_filter(group_ids: list[str] | None) -> tuple[str, dict[str, Any]]:
    if group_ids is None:
        return "", {}
    return " AND p.group_id IN $gids", {"gids": list(group_ids)}


def episodes_by_source(
    graph: GraphProjection, source_file: str, group_ids: list[str] | None
) -> dict[str, list[str]]:
    """Episode uuids per group whose source is ``source_file`` or ``source_file:<chunk>``."""
    where, params = _group_filter(group_ids)
    rows = _rows(
        graph,
        "MATCH (p:Episodic) WHERE (p.source_description = $s OR "
        f"starts_with(p.source_description, $prefix)){where} "
        "RETURN p.group_id, p.uuid ORDER BY p.created_at, p.uuid",
        {"s": source_file, "prefix": chunk_description(source_file, ""), **params},
    )
    out: dict[str, list[str]] = {}
    for g, u in rows:
        out.setdefault(g, []).append(u)
    return out


def episodes_by_chunk(
    graph: GraphProjection, chunk_id: str, group_ids: list[str] | None
) -> dict[str, list[str]]:
    """Episode uuids per group named ``chunk_id``."""
    where, params = _group_filter(group_ids)
    rows = _rows(
        graph,
        f"MATCH (p:Episodic) WHERE p.name = $c{where} RETURN p.group_id, p.uuid "
        "ORDER BY p.created_at, p.uuid",
        {"c": chunk_id, **params},
    )
    out: dict[str, list[str]] = {}
    for g, u in rows:
        out.setdefault(g, []).append(u)
    return out


def episode_by_name_and_hash(
    graph: GraphProjection, group_id: str, name: str, content_hash: str
) -> str | None:
    """The uuid of the group's episode with this name and text, if one exists."""
    rows = _rows(
        graph,
        "MATCH (p:Episodic) WHERE p.group_id = $g AND p.name = $n AND p.content_hash = $h "
        "RETURN p.uuid ORDER BY p.created_at, p.uuid LIMIT 1",
        {"g": group_id, "n": name, "h": content_hash},
    )
    return rows[0][0] if rows else None


def group_counts(graph: GraphProjection, group_id: str) -> GroupCounts:
    """What a purge of ``group_id`` would remove."""
    c = graph.counts(group_id)
    return GroupCounts(group_id=group_id, entities=c.entities, episodes=c.episodes, edges=c.edges)


def unbound_impacts(graph: GraphProjection, group_ids: list[str]) -> dict[str, int]:
    """Pointers into ``group_ids`` held by edges of other groups (left unbound by a purge)."""
    purged = set(group_ids)
    out: dict[str, int] = {}
    for owner, edge in edges_with_pointers(graph):
        if owner in purged or edge.invalid_at is not None:
            continue
        pointers = pointers_of(edge.attributes)
        for ptr in pointers.sides() if pointers is not None else []:
            if ptr.source_group_id in purged:
                out[owner] = out.get(owner, 0) + 1
    return out


def pointer_counts(graph: GraphProjection) -> dict[str, int]:
    """Binding states of the pointers of current edges."""
    counts = {"bound": 0, "unbound": 0, "ambiguous": 0}
    for _owner, edge in edges_with_pointers(graph):
        if edge.invalid_at is not None:
            continue
        pointers = pointers_of(edge.attributes)
        for ptr in pointers.sides() if pointers is not None else []:
            counts[ptr.binding_state] += 1
    return counts


def episode_time_bounds(graph: GraphProjection) -> tuple[str | None, str | None]:
    """(oldest as ``…THH:MM:SSZ``, newest as ``YYYY-MM-DD HH:MM:SS``) episode times."""
    rows = _rows(graph, "MATCH (p:Episodic) RETURN min(p.created_at), max(p.created_at)")
    if not rows or rows[0][0] is None:
        return None, None
    oldest, newest = rows[0]
    return timestamps.render_seconds_z(oldest), timestamps.render_seconds(newest)


def query_cypher(
    graph: GraphProjection,
    query: str,
    timeout_ms: int = 30_000,
    max_rows: int = 100_000,
    max_bytes: int | None = None,
) -> list[list[str]]:
    """Run a (checked read-only) query in a read-only transaction on the client connection,
    stopped after ``timeout_ms``, at most ``max_rows`` rows; every value stringified, null
    as ``""``. With ``max_bytes``, refused as soon as the values built so far pass that many
    bytes (UTF-8), so an oversized result is never held whole (ADR 0195)."""
    total = 0
    count = 0

    def row(values: list[Any]) -> list[str]:
        nonlocal total, count
        out = ["" if v is None else _stringify(v) for v in values]
        if max_bytes is not None:
            count += 1
            total += sum(_utf8_len(s) for s in out)
            if total > max_bytes:
                raise ProjectionError(
                    f"graph query failed: its result passed {max_bytes:,} bytes at row "
                    f"{count:,} (LCG_CYPHER_MAX_BYTES); return fewer or shorter values (LIMIT, "
                    "fewer columns, substring) or raise the limit"
                )
        return out

    rows: list[list[str]] = graph.query_read_only(query, timeout_ms, max_rows, row)
    return rows


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return timestamps.render_seconds(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return msgspec.json.encode(value).decode()
    return str(value)


def all_entities(graph: GraphProjection, group_id: str) -> list[EntityRecord]:
    """Every entity of the group, by uuid."""
    rows = _rows(
        graph,
        f"MATCH (e:Entity) WHERE e.group_id = $g RETURN {_ENTITY_COLS} ORDER BY e.uuid",
        {"g": group_id},
    )
    return [_entity(r)[1] for r in rows]


def all_edges(graph: GraphProjection, group_id: str) -> list[EdgeRecord]:
    """Every edge owned by the group (bound and unbound), by uuid."""
    rows = _rows(
        graph,
        f"MATCH (r:RelatesToNode_) WHERE r.group_id = $g RETURN {_EDGE_COLS} ORDER BY r.uuid",
        {"g": group_id},
    )
    return [_edge(r)[1] for r in rows]


#: An episode's columns, in the order ``_episode`` reads them.
_EPISODE_COLS = (
    "p.uuid, p.group_id, p.name, p.source, p.source_description, p.content, p.created_at, "
    "p.valid_at, p.content_hash, p.extracted, p.entity_edges"
)


def _episode(r: list[Any]) -> EpisodeRecord:
    return EpisodeRecord(
        uuid=r[0],
        group_id=r[1] or "",
        name=r[2] or "",
        source=r[3] or "text",
        source_description=r[4] or "",
        content=r[5] or "",
        created_at=_ts(r[6]) or "",
        valid_at=_ts(r[7]),
        content_hash=r[8] or "",
        extracted=bool(r[9]),
        mentions=list(r[10] or []),
    )


def all_episodes(graph: GraphProjection, group_id: str) -> list[EpisodeRecord]:
    """Every episode of the group with its mentions, by creation time then uuid."""
    rows = _rows(
        graph,
        f"MATCH (p:Episodic) WHERE p.group_id = $g RETURN {_EPISODE_COLS} "
        "ORDER BY p.created_at, p.uuid",
        {"g": group_id},
    )
    return [_episode(r) for r in rows]


def episode_record(graph: GraphProjection, uuid: str) -> EpisodeRecord | None:
    """The episode ``uuid`` with its mentions, or ``None``."""
    rows = _rows(graph, f"MATCH (p:Episodic) WHERE p.uuid = $u RETURN {_EPISODE_COLS}", {"u": uuid})
    return _episode(rows[0]) if rows else None


def unextracted_count(graph: GraphProjection, group_id: str) -> int:
    """How many episodes of the group are not extracted yet."""
    rows = _rows(
        graph,
        "MATCH (p:Episodic) WHERE p.group_id = $g AND p.extracted = false RETURN count(p)",
        {"g": group_id},
    )
    return int(rows[0][0]) if rows else 0


def other_texts_of_chunk(
    graph: GraphProjection, group_id: str, name: str, source_description: str, content_hash: str
) -> list[str]:
    """Uuids of the group's episodes of this chunk (name and source) whose text is not
    ``content_hash``'s, by uuid."""
    rows = _rows(
        graph,
        "MATCH (p:Episodic) WHERE p.group_id = $g AND p.name = $n "
        "AND p.source_description = $d AND p.content_hash <> $h RETURN p.uuid ORDER BY p.uuid",
        {"g": group_id, "n": name, "d": source_description, "h": content_hash},
    )
    return [str(u) for (u,) in rows]


def entity_uuids_by_keys(graph: GraphProjection, group_id: str, keys: list[str]) -> list[str]:
    """Uuids of the group's entities whose lookup key (``events.lookup_key`` of the name,
    folded in Python, never by Kuzu's ``lower()``: ADR 0151) is one of ``keys``."""
    rows = _rows(
        graph,
        "MATCH (e:Entity) WHERE e.group_id = $g AND e.name_key IN $keys RETURN e.uuid",
        {"g": group_id, "keys": keys},
    )
    return [r[0] for r in rows]


def active_edges_among(
    graph: GraphProjection, group_id: str, sources: list[str], targets: list[str]
) -> list[CurrentEdge]:
    """Current edges of the group from any of ``sources`` to any of ``targets``, oldest
    first (creation time, then uuid)."""
    rows = _rows(
        graph,
        "MATCH (s:Entity)-[:RELATES_TO]->(r:RelatesToNode_) WHERE s.uuid IN $srcs AND "
        "r.target_node_uuid IN $tgts AND r.group_id = $g AND r.invalid_at IS NULL "
        "RETURN s.uuid, r.target_node_uuid, r.uuid, r.relation_type, r.fact, r.created_at, "
        "r.attributes "
        "ORDER BY r.created_at, r.uuid",
        {"srcs": sources, "tgts": targets, "g": group_id},
    )
    return [
        CurrentEdge(
            source_uuid=r[0],
            target_uuid=r[1],
            uuid=r[2],
            relation_type=r[3] or "",
            fact=r[4] or "",
            created_at=str(r[5]),
            attributes=str(r[6] or ""),
        )
        for r in rows
    ]
