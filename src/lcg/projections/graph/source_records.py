"""The record reads a source sync and the declared pass decide on (ADR 0226): a group's
sources, the episodes of its chunks, its declared documents, tags, edges and mentions.

Part of ``records`` (offered there, on the face's ``graph_records``): the write side's reads,
made by the commands under the group's lock, each a named read with a typed answer so
``ingest`` spells no Cypher of the graph's schema.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from lcg.events import EdgeRecord, EntityRecord
from lcg.projections.graph._schema import select
from lcg.projections.graph._sources import SOURCE_COLUMNS
from lcg.projections.graph._statements import EDGE_FIELDS
from lcg.projections.graph._states import edge_from_row, entity_from_row, ts_text
from lcg.projections.graph.projection import GraphProjection

__all__ = [
    "ChunkEpisode",
    "EpisodeMention",
    "SourceRecord",
    "chunk_episodes",
    "chunk_episodes_named",
    "chunk_episodes_under",
    "declared_kind_entities",
    "edges_of_types",
    "episode_mentions",
    "episodes_present",
    "mentions_of_entities",
    "source_records",
]

_ENTITY_COLS: Final = select("e", "Entity")
_EDGE_COLS: Final = select("r", "RelatesToNode_", EDGE_FIELDS)
_CHUNK_COLS: Final = "p.uuid, p.name, p.source_description, p.content_hash"
_MENTION: Final = "MATCH (p:Episodic)-[:MENTIONS]->(n:Entity) WHERE p.group_id = $g"
_MENTION_COLS: Final = "p.uuid, n.uuid, p.entity_edges, n.attributes"


class SourceRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A ``Source`` row of a group: its root, label, kind and last sync (RFC 3339; ``None``
    when the row has none)."""

    root: str
    label: str
    kind: str
    synced_at: str | None


class ChunkEpisode(msgspec.Struct, frozen=True, kw_only=True):
    """An episode as a sync compares it: its uuid, name (the chunk id), source description
    and content hash (``""`` when it has none)."""

    uuid: str
    name: str
    source_description: str
    content_hash: str


class EpisodeMention(msgspec.Struct, frozen=True, kw_only=True):
    """A ``MENTIONS`` from an episode to an entity; ``extracted`` when extraction states it
    too (the entity is among the episode's ``entity_edges``); the entity's attributes text."""

    episode_uuid: str
    entity_uuid: str
    extracted: bool
    attributes: str


def _rows(graph: GraphProjection, query: str, params: dict[str, Any]) -> list[list[Any]]:
    return graph.query(query, params)


def source_records(graph: GraphProjection, group_id: str) -> list[SourceRecord]:
    """The group's ``Source`` rows, by root."""
    rows = _rows(
        graph,
        f"MATCH (s:Source) WHERE s.group_id = $g RETURN {SOURCE_COLUMNS} ORDER BY s.root",
        {"g": group_id},
    )
    return [
        SourceRecord(root=str(r[0]), label=str(r[1]), kind=str(r[2]), synced_at=ts_text(r[3]))
        for r in rows
    ]


def _chunks(rows: list[list[Any]]) -> list[ChunkEpisode]:
    return [
        ChunkEpisode(
            uuid=str(u), name=str(n), source_description=str(d or ""), content_hash=str(h or "")
        )
        for u, n, d, h in rows
    ]


def chunk_episodes(graph: GraphProjection, group_id: str) -> list[ChunkEpisode]:
    """Every episode of the group, as a sync compares it (in no set order)."""
    rows = _rows(
        graph, f"MATCH (p:Episodic) WHERE p.group_id = $g RETURN {_CHUNK_COLS}", {"g": group_id}
    )
    return _chunks(rows)


def chunk_episodes_under(graph: GraphProjection, group_id: str, prefix: str) -> list[ChunkEpisode]:
    """The group's episodes whose source description starts with ``prefix`` (a source's
    files: ``notes/``, ``README.md:``), in no set order."""
    rows = _rows(
        graph,
        "MATCH (p:Episodic) WHERE p.group_id = $g AND starts_with(p.source_description, $s) "
        f"RETURN {_CHUNK_COLS}",
        {"g": group_id, "s": prefix},
    )
    return _chunks(rows)


def chunk_episodes_named(
    graph: GraphProjection, group_id: str, names: list[str]
) -> list[ChunkEpisode]:
    """The group's episodes named (chunk id) one of ``names``, in no set order."""
    if not names:
        return []
    rows = _rows(
        graph,
        f"MATCH (p:Episodic) WHERE p.group_id = $g AND p.name IN $n RETURN {_CHUNK_COLS}",
        {"g": group_id, "n": names},
    )
    return _chunks(rows)


def episodes_present(graph: GraphProjection, group_id: str, uuids: list[str]) -> set[str]:
    """Those of ``uuids`` that are episodes of the group."""
    if not uuids:
        return set()
    rows = _rows(
        graph,
        "MATCH (p:Episodic) WHERE p.group_id = $g AND p.uuid IN $u RETURN p.uuid",
        {"g": group_id, "u": uuids},
    )
    return {str(u) for (u,) in rows}


def declared_kind_entities(graph: GraphProjection, group_id: str) -> list[EntityRecord]:
    """The group's entities labelled ``Document`` or ``Tag`` (the kinds the declared pass
    writes, whoever wrote each: the caller reads its ``origin``), in no set order. An entity
    with no creation time has ``created_at`` ``""``."""
    rows = _rows(
        graph,
        "MATCH (e:Entity) WHERE e.group_id = $g AND "
        "(list_contains(e.labels, 'Document') OR list_contains(e.labels, 'Tag')) "
        f"RETURN {_ENTITY_COLS}",
        {"g": group_id},
    )
    out = []
    for row in rows:
        s = entity_from_row(row)
        out.append(
            EntityRecord(
                uuid=s.uuid,
                name=s.name,
                labels=s.labels,
                created_at=s.created_at or "",
                summary=s.summary,
                attributes=s.attributes,
            )
        )
    return out


def edges_of_types(graph: GraphProjection, group_id: str, types: list[str]) -> list[EdgeRecord]:
    """The group's edges (current or not, bound or not) whose relation type is one of
    ``types``, in no set order. An edge with no creation time has ``created_at`` ``""``."""
    rows = _rows(
        graph,
        f"MATCH (r:RelatesToNode_) WHERE r.group_id = $g AND r.relation_type IN $t "
        f"RETURN {_EDGE_COLS}",
        {"g": group_id, "t": types},
    )
    return [edge_from_row(r)[1] for r in rows]


def _mentions(rows: list[list[Any]]) -> list[EpisodeMention]:
    return [
        EpisodeMention(
            episode_uuid=str(ep),
            entity_uuid=str(en),
            extracted=str(en) in (edges or []),
            attributes=str(attrs or ""),
        )
        for ep, en, edges, attrs in rows
    ]


def mentions_of_entities(
    graph: GraphProjection, group_id: str, entity_uuids: list[str]
) -> list[EpisodeMention]:
    """The ``MENTIONS`` from the group's episodes to any of ``entity_uuids``, in no set order."""
    if not entity_uuids:
        return []
    rows = _rows(
        graph,
        f"{_MENTION} AND n.uuid IN $d RETURN {_MENTION_COLS}",
        {"g": group_id, "d": entity_uuids},
    )
    return _mentions(rows)


def episode_mentions(graph: GraphProjection, group_id: str) -> list[EpisodeMention]:
    """Every ``MENTIONS`` from the group's episodes, by episode then entity uuid."""
    rows = _rows(
        graph, f"{_MENTION} RETURN {_MENTION_COLS} ORDER BY p.uuid, n.uuid", {"g": group_id}
    )
    return _mentions(rows)
