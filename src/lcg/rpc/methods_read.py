"""Read methods: searches and graph reads (MCP scope ``read``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from lcg.projections import graph_reads
from lcg.projections.rows import EdgeRow, EntityRow, EpisodeRow
from lcg.projections.search import PassageRow
from lcg.rpc.params import (
    bool_param,
    group_id,
    int_param,
    read_group_ids,
    str_param,
    uuid_list,
)
from lcg.rpc.registry import CallContext, MethodSpec, ParamSpec

if TYPE_CHECKING:
    from lcg.rpc.app import ServiceApp

__all__ = ["read_methods"]

R = TypeVar("R")


class NodesResult(msgspec.Struct, kw_only=True):
    """``{nodes, count}``."""

    nodes: list[EntityRow]
    count: int


class FactsResult(msgspec.Struct, kw_only=True):
    """``{facts, count}``."""

    facts: list[EdgeRow]
    count: int


class EdgesResult(msgspec.Struct, kw_only=True):
    """``{edges, count}``."""

    edges: list[EdgeRow]
    count: int


class EpisodesResult(msgspec.Struct, kw_only=True):
    """``{episodes, count}``."""

    episodes: list[EpisodeRow]
    count: int


class PassagesResult(msgspec.Struct, kw_only=True):
    """``{passages, count}``."""

    passages: list[PassageRow]
    count: int


class NeighborsResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_get_entity_neighbors``."""

    center_uuid: str
    nodes: list[EntityRow]
    edges: list[EdgeRow]
    count: int
    node_count: int
    edge_count: int


class BySourceResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_get_entities_by_source``."""

    source: str
    nodes: list[EntityRow]
    count: int


class _Box(msgspec.Struct, Generic[R]):
    value: R


_GROUP_IDS = ParamSpec(
    "group_ids", ("array", "string", "null"), items="string", description="groups to read"
)
_QUERY = ParamSpec("query", "string", required=True, description="search text")


def read_methods(app: ServiceApp) -> list[MethodSpec]:
    """The read methods of ``app``."""

    async def find_entities(ctx: CallContext, p: dict[str, Any]) -> NodesResult:
        query = str_param(p, "query")
        groups = read_group_ids(p, preserve_empty=True)
        n = int_param(p, "num_results", 10, minimum=1, maximum=500, clamp=True)
        rows = await app.read(app.searcher.find_entities, query, groups, n)
        return NodesResult(nodes=rows, count=len(rows))

    async def find_relationships(ctx: CallContext, p: dict[str, Any]) -> FactsResult:
        query = str_param(p, "query")
        groups = read_group_ids(p, preserve_empty=True)
        n = int_param(p, "num_results", 10, minimum=1, maximum=500, clamp=True)
        current = bool_param(p, "current_only", False)
        rows = await app.read(
            app.searcher.find_relationships, query, groups, n, current_only=current
        )
        return FactsResult(facts=rows, count=len(rows))

    async def search_passages(ctx: CallContext, p: dict[str, Any]) -> PassagesResult:
        from lcg.errors import InvalidParamsError

        query = p.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidParamsError("query is required and must be non-empty")
        n = int_param(p, "num_results", 10, minimum=1, maximum=100, clamp=True)
        raw_min = p.get("min_score", 0.5)
        min_score = float(raw_min) if isinstance(raw_min, int | float) else 0.5
        min_score = min(1.0, max(0.0, min_score))
        groups = read_group_ids(p, preserve_empty=False)
        rows = await app.read(app.searcher.search_passages, query, groups, n, min_score)
        return PassagesResult(passages=rows, count=len(rows))

    async def get_episodes(ctx: CallContext, p: dict[str, Any]) -> EpisodesResult:
        gid = group_id(p)
        n = int_param(p, "last_n", 50, minimum=1, maximum=100_000, clamp=True)
        rows = await app.read(graph_reads.get_episodes, app.ws.graph, gid, n)
        return EpisodesResult(episodes=rows, count=len(rows))

    async def nodes_by_group(ctx: CallContext, p: dict[str, Any]) -> NodesResult:
        groups = read_group_ids(p, preserve_empty=True)
        rows = await app.read(graph_reads.nodes_by_group, app.ws.graph, groups)
        return NodesResult(nodes=rows, count=len(rows))

    async def edges_by_group(ctx: CallContext, p: dict[str, Any]) -> EdgesResult:
        groups = read_group_ids(p, preserve_empty=True)
        rows = await app.read(graph_reads.edges_by_group, app.ws.graph, groups)
        return EdgesResult(edges=rows, count=len(rows))

    async def edges_by_uuids(ctx: CallContext, p: dict[str, Any]) -> EdgesResult:
        uuids = uuid_list(p, "uuids")
        rows = await app.read(graph_reads.edges_by_uuids, app.ws.graph, uuids)
        return EdgesResult(edges=rows, count=len(rows))

    async def list_entities(ctx: CallContext, p: dict[str, Any]) -> NodesResult:
        n = int_param(p, "num_results", 500, positive_message="num_results must be > 0")
        groups = read_group_ids(p, preserve_empty=False)
        rows = await app.read(graph_reads.list_entities, app.ws.graph, n, groups)
        return NodesResult(nodes=rows, count=len(rows))

    async def list_relationships(ctx: CallContext, p: dict[str, Any]) -> FactsResult:
        n = int_param(p, "num_results", 1000, positive_message="num_results must be > 0")
        groups = read_group_ids(p, preserve_empty=False)
        rows = await app.read(graph_reads.list_relationships, app.ws.graph, n, groups)
        return FactsResult(facts=rows, count=len(rows))

    async def neighbors(ctx: CallContext, p: dict[str, Any]) -> NeighborsResult:
        from lcg.errors import InvalidParamsError

        center = p.get("entity_uuid")
        if not isinstance(center, str) or not center:
            raise InvalidParamsError("entity_uuid is required")
        n = int_param(p, "num_results", 50, minimum=1, maximum=100_000, clamp=True)
        groups = read_group_ids(p, preserve_empty=False)
        nodes, edges = await app.read(graph_reads.entity_neighbors, app.ws.graph, center, n, groups)
        return NeighborsResult(
            center_uuid=center,
            nodes=nodes,
            edges=edges,
            count=len(nodes),
            node_count=len(nodes),
            edge_count=len(edges),
        )

    async def by_source(ctx: CallContext, p: dict[str, Any]) -> BySourceResult:
        from lcg.errors import InvalidParamsError

        source = p.get("source")
        if not isinstance(source, str) or not source:
            raise InvalidParamsError("source is required")
        n = int_param(p, "num_results", 100, minimum=1, maximum=100_000, clamp=True)
        groups = read_group_ids(p, preserve_empty=False)
        rows = await app.read(graph_reads.entities_by_source, app.ws.graph, source, n, groups)
        return BySourceResult(source=source, nodes=rows, count=len(rows))

    num = ParamSpec("num_results", "integer", description="maximum number of results")
    return [
        MethodSpec(
            "knowledge_find_entities",
            "read",
            find_entities,
            "Hybrid (BM25 + vector) search for entities, best first.",
            (_QUERY, _GROUP_IDS, num),
        ),
        MethodSpec(
            "knowledge_find_relationships",
            "read",
            find_relationships,
            "Hybrid search for relationship facts, best first.",
            (
                _QUERY,
                _GROUP_IDS,
                num,
                ParamSpec("current_only", "boolean", description="drop invalidated facts"),
            ),
        ),
        MethodSpec(
            "knowledge_search_passages",
            "read",
            search_passages,
            "Search episode text (BM25 + vector), with cosine similarity as the score.",
            (
                _QUERY,
                num,
                ParamSpec("min_score", "number", description="minimum cosine similarity (0-1)"),
                _GROUP_IDS,
            ),
        ),
        MethodSpec(
            "knowledge_get_episodes",
            "read",
            get_episodes,
            "The newest episodes of a group.",
            (
                ParamSpec("group_id", "string", description="group (default liminis)"),
                ParamSpec("last_n", "integer", description="how many (default 50)"),
            ),
        ),
        MethodSpec(
            "knowledge_get_nodes_by_group",
            "read",
            nodes_by_group,
            "Every entity of the given groups.",
            (_GROUP_IDS,),
        ),
        MethodSpec(
            "knowledge_get_edges_by_group",
            "read",
            edges_by_group,
            "Every relationship owned by the given groups.",
            (_GROUP_IDS,),
        ),
        MethodSpec(
            "knowledge_get_edges_by_uuids",
            "read",
            edges_by_uuids,
            "Relationships by uuid.",
            (ParamSpec("uuids", "array", items="string", description="edge uuids"),),
        ),
        MethodSpec(
            "knowledge_list_entities",
            "read",
            list_entities,
            "Entities by uuid descending, with their episodes and sources.",
            (num, _GROUP_IDS),
        ),
        MethodSpec(
            "knowledge_list_relationships",
            "read",
            list_relationships,
            "Relationships by uuid descending, with their episodes and sources.",
            (num, _GROUP_IDS),
        ),
        MethodSpec(
            "knowledge_get_entity_neighbors",
            "read",
            neighbors,
            "The entities and relationships one hop from an entity.",
            (
                ParamSpec("entity_uuid", "string", required=True, description="center entity"),
                num,
                _GROUP_IDS,
            ),
        ),
        MethodSpec(
            "knowledge_get_entities_by_source",
            "read",
            by_source,
            "Entities mentioned by episodes whose source description contains `source`.",
            (
                ParamSpec("source", "string", required=True, description="source file or text"),
                num,
                _GROUP_IDS,
            ),
        ),
    ]
