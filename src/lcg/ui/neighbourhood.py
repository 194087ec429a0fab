"""An entity's neighbourhood for the graph view: one to two hops through
``knowledge_get_entities_neighbors``, capped at ``MAX_NODES`` nodes (ADR 0224).

The first hop asks for up to ``FIRST_HOP`` edges of the centre; unless that made a hub's
picture already (``HUB_NODES``), the second asks, of the first ``SECOND_HOP_CALLS``
neighbours, up to ``SECOND_HOP`` edges each — one read for them all, which costs the service
what one neighbourhood costs (a read each cost six) — and keeps them in order while there is
room. Neither read carries mentions: the graph and the facts need none. Every read names the
group (the centre's when the page names none): a neighbourhood read across every group costs
several times one of its group. ``capped`` says some of the neighbourhood was left out (a
bound was reached), so the page can say so. Every call is bounded: the neighbourhood of a hub
costs what a small one does.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from lcg.ui.site import Site

__all__ = ["MAX_NODES", "GraphData", "GraphEdge", "GraphNode", "first_hop", "neighbourhood"]

#: The most nodes a graph shows (the centre included).
MAX_NODES: Final = 200
#: Edges of the centre asked for.
FIRST_HOP: Final = 150
#: Neighbours whose own edges are asked for, and edges asked of each.
SECOND_HOP_CALLS: Final = 6
SECOND_HOP: Final = 25
#: A first hop of this many nodes or more is a hub's: no second hop is asked.
HUB_NODES: Final = MAX_NODES // 2


class GraphNode(msgspec.Struct, kw_only=True):
    """A node: the entity, its name and labels, and how many hops from the centre."""

    uuid: str
    name: str
    labels: list[str]
    hop: int


class GraphEdge(msgspec.Struct, kw_only=True):
    """An edge between two nodes: its relation type and its fact."""

    uuid: str
    source: str
    target: str
    relation: str
    fact: str
    ended: bool = False


class GraphData(msgspec.Struct, kw_only=True):
    """The graph a page draws (embedded as JSON, and ``/entity/<uuid>/graph.json``)."""

    centre: str
    group: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    capped: bool = False


def _node(row: dict[str, Any], hop: int) -> GraphNode:
    labels = [str(x) for x in row.get("labels") or [] if x != "Entity"]
    return GraphNode(uuid=str(row["uuid"]), name=str(row.get("name", "")), labels=labels, hop=hop)


def _edge(row: dict[str, Any]) -> GraphEdge:
    return GraphEdge(
        uuid=str(row.get("uuid", "")),
        source=str(row.get("source_node_uuid", "")),
        target=str(row.get("target_node_uuid", "")),
        relation=str(row.get("relation_type") or row.get("name") or ""),
        fact=str(row.get("fact", "")),
        ended=bool(row.get("invalid_at")),
    )


def _around(site: Site, uuids: list[str], edges: int, group: str | None) -> list[dict[str, Any]]:
    """The neighbourhood of each of ``uuids`` (``edges`` edges at most each), in order."""
    found = site.reads.call(
        "knowledge_get_entities_neighbors",
        {"entity_uuids": uuids, "num_results": edges, "group_ids": [group] if group else None},
    )
    hoods: list[dict[str, Any]] = found["neighborhoods"]
    return hoods


def first_hop(site: Site, uuid: str, group: str | None) -> dict[str, Any]:
    """The first hop around the entity ``uuid`` in ``group``: its edges and their far ends."""
    return _around(site, [uuid], FIRST_HOP, group)[0]


def neighbourhood(
    site: Site, centre: dict[str, Any], group: str | None, first: dict[str, Any] | None = None
) -> tuple[GraphData, list[dict[str, Any]], list[dict[str, Any]]]:
    """The graph around ``centre`` (an entity row), the centre's own edges (its facts), and
    the entities at their other ends. ``first`` is the centre's ``first_hop`` when the
    caller asked it already (at once with the centre itself)."""
    group = group or str(centre.get("group_id") or "") or None
    uuid = str(centre["uuid"])
    if first is None:
        first = first_hop(site, uuid, group)
    nodes: dict[str, GraphNode] = {uuid: _node(centre, 0)}
    edges: dict[str, GraphEdge] = {}
    capped = len(first["edges"]) >= FIRST_HOP
    own: list[dict[str, Any]] = list(first["edges"])
    for row in first["nodes"]:
        if len(nodes) >= MAX_NODES:
            capped = True
            break
        nodes.setdefault(str(row["uuid"]), _node(row, 1))
    for row in own:
        e = _edge(row)
        if e.source in nodes and e.target in nodes:
            edges.setdefault(e.uuid, e)
    hop1 = [n for n in nodes.values() if n.hop == 1]
    if len(hop1) > SECOND_HOP_CALLS:
        capped = True
    # A hub's first hop is its picture already: its neighbours' own are not asked.
    asked = hop1[:SECOND_HOP_CALLS] if len(nodes) < HUB_NODES else []
    capped = capped or len(nodes) >= HUB_NODES
    answers = _around(site, [n.uuid for n in asked], SECOND_HOP, group) if asked else []
    for got in answers:
        if len(nodes) >= MAX_NODES:
            capped = True
            break
        capped = capped or len(got["edges"]) >= SECOND_HOP
        for row in got["nodes"]:
            if str(row["uuid"]) in nodes:
                continue
            if len(nodes) >= MAX_NODES:
                capped = True
                break
            nodes[str(row["uuid"])] = _node(row, 2)
        for row in got["edges"]:
            e = _edge(row)
            if e.source in nodes and e.target in nodes:
                edges.setdefault(e.uuid, e)
    data = GraphData(
        centre=uuid,
        group=group or str(centre.get("group_id", "")),
        nodes=list(nodes.values()),
        edges=list(edges.values()),
        capped=capped,
    )
    return data, own, list(first["nodes"])
