"""Graph reads for clients (lcg-api §3.5): rows rendered as the reference renders them.

Every function takes the ``GraphProjection`` and runs on one of its read connections, so
reads run concurrently with each other. ``group_ids=None`` means every group and ``[]``
means none: the caller maps the reference's collapse/preserve-empty parsing onto that.
Relationships are returned only when both endpoints exist (unbound edges are invisible).
Where the reference leaves an order unspecified, rows come sorted by uuid so results are
reproducible. The lookups the commands decide on (by name, between two entities, by
source, counts) are ``records``' only: one implementation each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from lcg.events import attributes_of
from lcg.projections import EdgeRow, EntityRow, EpisodeRow, GraphProjection, render_ts
from lcg.projections import graph_columns as columns
from lcg.projections import graph_records as records

__all__ = [
    "document_of_file",
    "edges_by_group",
    "edges_by_uuids",
    "entities_by_source",
    "entities_by_uuids",
    "entities_with_mentions",
    "entity_neighbors",
    "episode_by_content_hash",
    "episode_names",
    "episodes_by_uuids",
    "find_entity_by_name",
    "get_episodes",
    "list_entities",
    "list_relationships",
    "neighbors_of_entities",
    "nodes_by_group",
    "pending_episodes",
]

_ENTITY: Final = columns.select("e", "Entity")
#: A bound edge's columns, decoded by ``columns.edge_from_row``.
_EDGE: Final = columns.EDGE_COLUMNS
#: An episode as clients see it: every column but lcg's own ``content_hash``/``extracted``.
_EPISODE: Final = columns.select("p", "Episodic", columns.TABLE["Episodic"].column_names()[:9])
#: A bound edge, reached by its source hop. An edge has both hops or none (unbound), so one
#: hop selects exactly the edges of the reference's two-hop pattern, and Kuzu plans it as
#: one join instead of two (≈ 3× faster on listings, ADR 0086); the target is the edge's own
#: ``target_node_uuid``.
_REL: Final = "(a:Entity)-[:RELATES_TO]->(e:RelatesToNode_)"
#: Up to this many uuids are looked up one primary-key statement each (≈ 0.5 ms apiece);
#: more use one ``UNWIND`` (a hash join over a scan of the node table).
_KEYS_ONE_BY_ONE: Final = 16
_MERGED: Final = "Merged"
#: Where an edge row (``_EDGE``) holds its source's and its target's uuid.
_SOURCE: Final = _EDGE.split(", ").index("e.source_node_uuid")
_TARGET: Final = _EDGE.split(", ").index("e.target_node_uuid")


# ---- row builders ---------------------------------------------------------------------


def _entity(row: list[Any]) -> EntityRow:
    state = columns.entity_from_row(row)
    return EntityRow(
        uuid=state.uuid,
        name=state.name,
        group_id=state.group_id,
        labels=state.labels,
        created_at=render_ts(row[4]) or "",
        summary=state.summary,
        attributes=state.attributes,
    )


def _edge(row: list[Any]) -> EdgeRow:
    group_id, rec = columns.edge_from_row(row)
    return EdgeRow(
        uuid=rec.uuid,
        name=rec.name,
        source_node_uuid=rec.source_uuid,
        target_node_uuid=rec.target_uuid,
        group_id=group_id or "",
        fact=rec.fact,
        created_at=render_ts(row[11]) or "",
        valid_at=render_ts(row[6]),
        invalid_at=render_ts(row[7]),
        attributes=rec.attributes,
        relation_type=rec.relation_type or None,
    )


def _episode(row: list[Any]) -> EpisodeRow:
    return EpisodeRow(
        uuid=row[0],
        name=row[1] or "",
        group_id=row[2] or "",
        created_at=render_ts(row[3]) or "",
        source=row[4] or "",
        source_description=row[5] or "",
        content=row[6] or "",
        valid_at=render_ts(row[7]),
        entity_edges=list(row[8] or []),
    )


def _groups(var: str, group_ids: Sequence[str] | None, params: dict[str, Any]) -> str:
    """A ``var.group_id IN $groups`` condition (``"true"`` for every group)."""
    if group_ids is None:
        return "true"
    params["groups"] = list(group_ids)
    return f"{var}.group_id IN $groups"


def _in_order(rows: dict[str, Any], uuids: Sequence[str]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for u in uuids:
        if u in rows and u not in seen:
            seen.add(u)
            out.append(rows[u])
    return out


# ---- by uuid --------------------------------------------------------------------------


def entities_by_uuids(graph: GraphProjection, uuids: Sequence[str]) -> list[EntityRow]:
    """The entities with these uuids, in the given order (missing ones skipped)."""
    if not uuids:
        return []
    rows = graph.query(
        f"UNWIND $keys AS k MATCH (e:Entity {{uuid: k}}) RETURN {_ENTITY}", {"keys": list(uuids)}
    )
    return _in_order({r[0]: _entity(r) for r in rows}, uuids)


def entities_with_mentions(
    graph: GraphProjection, uuids: Sequence[str], group_ids: Sequence[str] | None
) -> list[EntityRow]:
    """The entities with these uuids in these groups, in the given order, each enriched with
    the episodes that mention it (as the listings are)."""
    rows = entities_by_uuids(graph, uuids)
    if group_ids is not None:
        rows = [r for r in rows if r.group_id in group_ids]
    return _enrich_entities(graph, rows, group_ids)


def document_of_file(
    graph: GraphProjection, group_id: str, source: str, path: str
) -> list[EntityRow]:
    """The declared document of the file ``path`` of the source ``source`` (its label) in
    ``group_id``, enriched (none, or one). Kuzu keeps the candidates whose attributes hold
    the path's JSON text; the exact key is checked here."""
    needle = msgspec.json.encode(path).decode()[1:-1]
    rows = graph.query(
        "MATCH (e:Entity) WHERE e.group_id = $g AND list_contains(e.labels, 'Document') "
        f"AND e.attributes CONTAINS $p RETURN {_ENTITY}",
        {"g": group_id, "p": needle},
    )
    found = []
    for r in rows:
        row = _entity(r)
        attrs = attributes_of(row.attributes)
        if attrs.get("origin") == "declared" and (attrs.get("source"), attrs.get("path")) == (
            source,
            path,
        ):
            found.append(row)
    return _enrich_entities(graph, found[:1], [group_id])


def edges_by_uuids(graph: GraphProjection, uuids: Sequence[str]) -> list[EdgeRow]:
    """The (bound) relationships with these uuids, in the given order."""
    if not uuids:
        return []
    keys = list(dict.fromkeys(uuids))
    if len(keys) <= _KEYS_ONE_BY_ONE:
        rows = [
            row
            for k in keys
            for row in graph.query(
                "MATCH (e:RelatesToNode_ {uuid: $k}) MATCH (a:Entity)-[:RELATES_TO]->(e) "
                f"RETURN {_EDGE}",
                {"k": k},
            )
        ]
    else:
        rows = graph.query(
            "UNWIND $keys AS k MATCH (a:Entity)-[:RELATES_TO]->(e:RelatesToNode_ {uuid: k}) "
            f"RETURN {_EDGE}",
            {"keys": keys},
        )
    return _in_order({r[0]: _edge(r) for r in rows}, uuids)


def episodes_by_uuids(graph: GraphProjection, uuids: Sequence[str]) -> list[EpisodeRow]:
    """The episodes with these uuids, in the given order."""
    if not uuids:
        return []
    rows = graph.query(
        f"UNWIND $keys AS k MATCH (p:Episodic {{uuid: k}}) RETURN {_EPISODE}",
        {"keys": list(uuids)},
    )
    return _in_order({r[0]: _episode(r) for r in rows}, uuids)


def episode_names(graph: GraphProjection, uuids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``uuid -> (name, source_description)`` of the episodes found (a third of the cost of
    whole rows: passage search asks it of every candidate, ADR 0198)."""
    if not uuids:
        return {}
    rows = graph.query(
        "UNWIND $keys AS k MATCH (p:Episodic {uuid: k}) "
        "RETURN p.uuid, p.name, p.source_description",
        {"keys": list(uuids)},
    )
    return {str(r[0]): (str(r[1]), str(r[2])) for r in rows}


# ---- by group -------------------------------------------------------------------------


def get_episodes(graph: GraphProjection, group_id: str, last_n: int) -> list[EpisodeRow]:
    """The ``last_n`` newest episodes of a group (created_at descending, then uuid)."""
    if last_n <= 0:
        return []
    rows = graph.query(
        f"MATCH (p:Episodic) WHERE p.group_id = $g RETURN {_EPISODE} "
        "ORDER BY p.created_at DESC, p.uuid LIMIT $n",
        {"g": group_id, "n": last_n},
    )
    return [_episode(r) for r in rows]


def nodes_by_group(graph: GraphProjection, group_ids: Sequence[str] | None) -> list[EntityRow]:
    """Every entity of these groups (by uuid, no enrichment)."""
    if group_ids == []:
        return []
    params: dict[str, Any] = {}
    cond = _groups("e", group_ids, params)
    rows = graph.query(f"MATCH (e:Entity) WHERE {cond} RETURN {_ENTITY} ORDER BY e.uuid", params)
    return [_entity(r) for r in rows]


def edges_by_group(graph: GraphProjection, group_ids: Sequence[str] | None) -> list[EdgeRow]:
    """Every relationship owned by these groups (the edge's own group; by uuid)."""
    if group_ids == []:
        return []
    params: dict[str, Any] = {}
    cond = _groups("e", group_ids, params)
    rows = graph.query(f"MATCH {_REL} WHERE {cond} RETURN {_EDGE} ORDER BY e.uuid", params)
    return [_edge(r) for r in rows]


# ---- enrichment -----------------------------------------------------------------------


def _mentioning(
    graph: GraphProjection, entity_uuids: Sequence[str], group_ids: Sequence[str] | None
) -> dict[str, list[tuple[str, str]]]:
    """entity uuid → [(episode uuid, source_description)] of the episodes mentioning it."""
    if not entity_uuids:
        return {}
    params: dict[str, Any] = {"keys": list(dict.fromkeys(entity_uuids))}
    cond = "true" if not group_ids else _groups("p", group_ids, params)
    rows = graph.query(
        "UNWIND $keys AS k MATCH (p:Episodic)-[:MENTIONS]->(e:Entity {uuid: k}) "
        f"WHERE {cond} RETURN e.uuid, p.uuid, p.source_description "
        "ORDER BY p.created_at, p.uuid",
        params,
    )
    out: dict[str, list[tuple[str, str]]] = {}
    for en, ep, desc in rows:
        out.setdefault(en, []).append((ep, desc or ""))
    return out


def _enrich_entities(
    graph: GraphProjection, rows: list[EntityRow], group_ids: Sequence[str] | None
) -> list[EntityRow]:
    found = _mentioning(graph, [r.uuid for r in rows], group_ids)
    for row in rows:
        pairs = found.get(row.uuid, [])
        row.episode_uuids = [p[0] for p in pairs]
        row.source_descriptions = [p[1] for p in pairs]
    return rows


def _enrich_edges(
    graph: GraphProjection, rows: list[EdgeRow], group_ids: Sequence[str] | None
) -> list[EdgeRow]:
    ends = [u for r in rows for u in (r.source_node_uuid, r.target_node_uuid)]
    found = _mentioning(graph, ends, group_ids)
    for row in rows:
        merged: dict[str, str] = {}
        for end in (row.source_node_uuid, row.target_node_uuid):
            for ep, desc in found.get(end, []):
                merged.setdefault(ep, desc)
        row.episode_uuids = list(merged)
        row.source_descriptions = list(merged.values())
    return rows


# ---- listings -------------------------------------------------------------------------


def list_entities(
    graph: GraphProjection, num_results: int, group_ids: Sequence[str] | None
) -> list[EntityRow]:
    """Up to ``num_results`` entities, uuid descending, enriched with their episodes."""
    if group_ids == [] or num_results <= 0:
        return []
    params: dict[str, Any] = {"n": num_results}
    cond = _groups("e", group_ids, params)
    rows = graph.query(
        f"MATCH (e:Entity) WHERE {cond} RETURN {_ENTITY} ORDER BY e.uuid DESC LIMIT $n", params
    )
    return _enrich_entities(graph, [_entity(r) for r in rows], group_ids)


def list_relationships(
    graph: GraphProjection, num_results: int, group_ids: Sequence[str] | None
) -> list[EdgeRow]:
    """Up to ``num_results`` relationships, uuid descending, enriched with their episodes."""
    if group_ids == [] or num_results <= 0:
        return []
    params: dict[str, Any] = {"n": num_results}
    cond = _groups("e", group_ids, params)
    rows = graph.query(
        f"MATCH {_REL} WHERE {cond} RETURN {_EDGE} ORDER BY e.uuid DESC LIMIT $n", params
    )
    return _enrich_edges(graph, [_edge(r) for r in rows], group_ids)


def entity_neighbors(
    graph: GraphProjection,
    entity_uuid: str,
    num_results: int,
    group_ids: Sequence[str] | None,
) -> tuple[list[EntityRow], list[EdgeRow]]:
    """(far endpoints, edges) around an entity: outgoing then incoming, uuid desc, ≤ n edges.

    ``group_ids`` filters the edges' own group. Both lists are enriched.
    """
    if group_ids == [] or num_results <= 0:
        return [], []
    params: dict[str, Any] = {"u": entity_uuid, "n": num_results}
    cond = _groups("e", group_ids, params)
    out_rows = graph.query(
        "MATCH (a:Entity {uuid: $u})-[:RELATES_TO]->(e:RelatesToNode_) "
        f"WHERE {cond} RETURN {_EDGE} ORDER BY e.uuid DESC LIMIT $n",
        params,
    )
    in_rows = graph.query(
        "MATCH (e:RelatesToNode_)-[:RELATES_TO]->(b:Entity {uuid: $u}) "
        f"WHERE {cond} RETURN {_EDGE} ORDER BY e.uuid DESC LIMIT $n",
        params,
    )
    edges = [_edge(r) for r in [*out_rows, *in_rows][:num_results]]
    far = [
        e.target_node_uuid if e.source_node_uuid == entity_uuid else e.source_node_uuid
        for e in edges
    ]
    nodes = entities_by_uuids(graph, list(dict.fromkeys(far)))
    return _enrich_entities(graph, nodes, group_ids), _enrich_edges(graph, edges, group_ids)


def _far_end(edge: EdgeRow, centre: str) -> str:
    return edge.target_node_uuid if edge.source_node_uuid == centre else edge.source_node_uuid


def neighbors_of_entities(
    graph: GraphProjection,
    entity_uuids: Sequence[str],
    num_results: int,
    group_ids: Sequence[str] | None,
) -> list[tuple[str, list[EntityRow], list[EdgeRow]]]:
    """``(centre, far endpoints, edges)`` of each entity, in the given order (repeats once):
    what ``entity_neighbors`` answers for each — outgoing then incoming, uuid descending, at
    most ``num_results`` edges a centre, ``group_ids`` filtering the edges' own group — but
    not enriched with mentions.

    One scan of the relationships finds every centre's bound edges at once: Kuzu answers a
    hop from one entity by scanning the relationship table anyway (a hash join, not an index
    walk), so a neighbourhood read per centre costs a scan each. The rows read are the
    centres' edges (their degree); each centre's cut is made here, and only the edges kept
    are decoded. The far endpoints are one lookup for every centre.
    """
    keys = list(dict.fromkeys(entity_uuids))
    if group_ids == [] or num_results <= 0 or not keys:
        return [(k, [], []) for k in keys]
    params: dict[str, Any] = {"keys": keys}
    cond = _groups("e", group_ids, params)
    # Bound edges only (an edge has both hops or none): its source hop says it is bound.
    rows = graph.query(
        "MATCH (:Entity)-[:RELATES_TO]->(e:RelatesToNode_) "
        f"WHERE (e.source_node_uuid IN $keys OR e.target_node_uuid IN $keys) AND {cond} "
        f"RETURN {_EDGE}",
        params,
    )
    out: dict[str, list[list[Any]]] = {}
    into: dict[str, list[list[Any]]] = {}
    for r in sorted(rows, key=lambda r: str(r[0]), reverse=True):
        # An edge whose both ends are the centre is out of it and into it, as in one read.
        out.setdefault(r[_SOURCE], []).append(r)
        into.setdefault(r[_TARGET], []).append(r)
    cut = [
        (k, [_edge(r) for r in [*out.get(k, [])[:num_results], *into.get(k, [])][:num_results]])
        for k in keys
    ]
    far = {k: list(dict.fromkeys(_far_end(e, k) for e in edges)) for k, edges in cut}
    ends = list(dict.fromkeys(u for us in far.values() for u in us))
    found = {n.uuid: n for n in entities_by_uuids(graph, ends)}
    return [(k, [found[u] for u in far[k] if u in found], edges) for k, edges in cut]


def entities_by_source(
    graph: GraphProjection, source: str, num_results: int, group_ids: Sequence[str] | None
) -> list[EntityRow]:
    """Distinct entities mentioned by episodes whose source_description contains ``source``."""
    if group_ids == [] or num_results <= 0:
        return []
    params: dict[str, Any] = {"s": source, "n": num_results}
    cond = _groups("e", group_ids, params)
    rows = graph.query(
        "MATCH (p:Episodic)-[:MENTIONS]->(e:Entity) "
        f"WHERE contains(p.source_description, $s) AND {cond} "
        f"WITH DISTINCT e RETURN {_ENTITY} ORDER BY e.uuid LIMIT $n",
        params,
    )
    return _enrich_entities(graph, [_entity(r) for r in rows], group_ids)


# ---- lookups used by commands ---------------------------------------------------------


def find_entity_by_name(graph: GraphProjection, group_id: str, name: str) -> EntityRow | None:
    """The group's entity named ``name`` (trimmed, any case), rendered for a client.

    Of several, a live one before a ``Merged`` tombstone, then the earliest created_at, then
    uuid; ``None`` when no entity has that name. The name match is ``records``' (one place).
    """
    found = records.entities_by_name(graph, group_id, name)  # created_at, uuid order
    found.sort(key=lambda e: _MERGED in e.labels)  # stable: keeps that order among equals
    return entities_by_uuids(graph, [found[0].uuid])[0] if found else None


def episode_by_content_hash(
    graph: GraphProjection, group_id: str, content_hash: str
) -> EpisodeRow | None:
    """The earliest episode of the group with this content hash (``None`` if none)."""
    if not content_hash:
        return None
    rows = graph.query(
        "MATCH (p:Episodic) WHERE p.group_id = $g AND p.content_hash = $h "
        f"RETURN {_EPISODE} ORDER BY p.created_at, p.uuid LIMIT 1",
        {"g": group_id, "h": content_hash},
    )
    return _episode(rows[0]) if rows else None


def pending_episodes(graph: GraphProjection, group_id: str, limit: int) -> list[EpisodeRow]:
    """Up to ``limit`` episodes of the group not extracted yet, oldest first."""
    if limit <= 0:
        return []
    rows = graph.query(
        "MATCH (p:Episodic) WHERE p.group_id = $g AND p.extracted = false "
        f"RETURN {_EPISODE} ORDER BY p.created_at, p.uuid LIMIT $n",
        {"g": group_id, "n": limit},
    )
    return [_episode(r) for r in rows]
