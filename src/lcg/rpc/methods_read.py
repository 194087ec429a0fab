"""Read methods: searches and graph reads (MCP scope ``read``)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from lcg.errors import InvalidParamsError
from lcg.projections import (
    EdgeRow,
    EntityRow,
    EpisodeRow,
    GroupFailure,
    GroupFailures,
    MissingLeg,
)
from lcg.query import (
    DEFAULT_HALF_LIFE_DAYS,
    FUSIONS,
    FloorReport,
    PassageRow,
    graph_reads,
    parse_time,
)
from lcg.rpc.host import ServiceHost
from lcg.rpc.params import (
    Count100,
    Count100k,
    Count500,
    GroupId,
    PositiveCount,
    ReadGroupIds,
    Strings,
    read_group_ids,
    strings,
    write_group,
)
from lcg.rpc.registry import CallContext, MethodDef, Params

__all__ = ["READ_METHODS"]


# ``failed_groups`` (ADR 0151) is lcg's addition to the three searches' results: present only
# when a group's part of the search failed, so an answer without one reads as the reference's.
_FAILED = "groups left out because their part of the search failed (only when one did)"
# ``missing_legs`` (ADR 0171), the same kind of addition: present only when a leg did not run
# (``vector`` while the embedder is away); the hits are then the other legs' alone.
_MISSING = "search legs that did not run, and why (only when one did not)"
# ``filtered_by_min_score`` (ADR 0198), the same kind of addition: present only when the cosine
# floor left out some of the ``num_results`` best passages, so an empty answer says why.
_FILTERED = (
    "how many of the num_results best passages were left out for a similarity under "
    "min_score (only when some were)"
)


class NodesResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``{nodes, count}`` (and ``failed_groups`` when a group's part of a search failed)."""

    nodes: list[EntityRow]
    count: int
    failed_groups: Annotated[list[GroupFailure], Meta(description=_FAILED)] = []
    missing_legs: Annotated[list[MissingLeg], Meta(description=_MISSING)] = []


class FactsResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``{facts, count}`` (and ``failed_groups`` when a group's part of a search failed)."""

    facts: list[EdgeRow]
    count: int
    failed_groups: Annotated[list[GroupFailure], Meta(description=_FAILED)] = []
    missing_legs: Annotated[list[MissingLeg], Meta(description=_MISSING)] = []


class EdgesResult(msgspec.Struct, kw_only=True):
    """``{edges, count}``."""

    edges: list[EdgeRow]
    count: int


class EpisodesResult(msgspec.Struct, kw_only=True):
    """``{episodes, count}``."""

    episodes: list[EpisodeRow]
    count: int


class PassagesResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``{passages, count}`` (and ``failed_groups`` when a group's part of the search failed,
    ``filtered_by_min_score`` when the floor left some of the best passages out)."""

    passages: list[PassageRow]
    count: int
    failed_groups: Annotated[list[GroupFailure], Meta(description=_FAILED)] = []
    missing_legs: Annotated[list[MissingLeg], Meta(description=_MISSING)] = []
    filtered_by_min_score: Annotated[int, Meta(description=_FILTERED)] = 0


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


_NUM = "maximum number of results"
#: A century: longer half-lives rank as if the prior were off anyway.
_MAX_HALF_LIFE_DAYS = 36_500.0


class _Search(Params):
    """Shared by the two hybrid searches (``num_results`` clamped to 1..500)."""

    # Required as the reference's MCP schema marks it; "" is allowed (it matches nothing).
    query: Annotated[str, Meta(description="search text")]
    group_ids: ReadGroupIds = None
    num_results: Annotated[Count500, Meta(description=_NUM + " (1-500)")] = 10
    examples: ClassVar[dict[str, Any]] = {"query": "Apollo 11"}


class FindEntitiesParams(_Search):
    """``knowledge_find_entities``."""


class FindRelationshipsParams(_Search):
    """``knowledge_find_relationships``."""

    current_only: Annotated[bool, Meta(description="drop invalidated facts")] = False


class SearchPassagesParams(Params):
    """``knowledge_search_passages`` (``num_results`` clamped 1..100, ``min_score`` 0..1)."""

    query: Annotated[
        str,
        Meta(
            pattern=r"\S",
            description="search text (non-blank)",
            extra={"required": "query is required and must be non-empty"},
        ),
    ]
    num_results: Annotated[Count100, Meta(description=_NUM + " (1-100)")] = 10
    # ADR 0198: omitted, the floor is the one calibrated for the embedder in use.
    min_score: Annotated[
        float | None,
        Meta(
            description="minimum cosine similarity (0-1); omitted: the floor calibrated for the "
            "embedder in use (0.5 for a server's model, as the reference)"
        ),
    ] = None
    group_ids: ReadGroupIds = None
    # Issue 14 (ADR 0092): the fusion, the asking time and reference-time bounds.
    fusion: Annotated[
        str, Meta(description="weighted (default) or rrf (the reference's rank fusion)")
    ] = "weighted"
    as_of: Annotated[
        str | None, Meta(description="asking time, RFC 3339: later passages are left out")
    ] = None
    valid_after: Annotated[str | None, Meta(description="earliest reference time, RFC 3339")] = None
    valid_before: Annotated[str | None, Meta(description="latest reference time, RFC 3339")] = None
    # ADR 0094: the recency prior of the weighted fusion.
    recency_half_life_days: Annotated[
        float,
        Meta(
            description="weighted fusion: days in which a passage's recency bonus halves "
            "(default 5; 0 turns it off; chunks of files ingested from a tree get none)"
        ),
    ] = DEFAULT_HALF_LIFE_DAYS
    examples: ClassVar[dict[str, Any]] = {"query": "Moon landing"}

    def __post_init__(self) -> None:
        """Apply the documented clamp of ``min_score``; check the fusion and the timestamps."""
        if self.min_score is not None:
            self.min_score = min(1.0, max(0.0, self.min_score))
        if self.fusion not in FUSIONS:
            raise InvalidParamsError(
                f"fusion must be one of {', '.join(FUSIONS)} (got {self.fusion!r})"
            )
        if not 0.0 <= self.recency_half_life_days <= _MAX_HALF_LIFE_DAYS:
            raise InvalidParamsError(
                "recency_half_life_days must be between 0 (off) and "
                f"{_MAX_HALF_LIFE_DAYS:g} (got {self.recency_half_life_days!r})"
            )
        for name in ("as_of", "valid_after", "valid_before"):
            value = getattr(self, name)
            if value is not None:
                try:
                    parse_time(value)
                except ValueError:
                    raise InvalidParamsError(
                        f"{name} must be an RFC 3339 timestamp such as "
                        f"2024-05-01T12:00:00Z (got {value!r})"
                    ) from None


class GetEpisodesParams(Params):
    """``knowledge_get_episodes``."""

    group_id: GroupId = None
    last_n: Annotated[Count100k, Meta(description="how many, newest first (1-100000)")] = 50


class GroupsParams(Params):
    """``knowledge_get_nodes_by_group`` and ``knowledge_get_edges_by_group``."""

    group_ids: ReadGroupIds = None


class EdgesByUuidsParams(Params):
    """``knowledge_get_edges_by_uuids``."""

    uuids: Annotated[Strings, Meta(description="edge uuids (non-strings are ignored)")] = None


class _Listing(Params):
    """Shared by the two listings: ``num_results`` must be positive (reference wording)."""

    group_ids: ReadGroupIds = None


class ListEntitiesParams(_Listing):
    """``knowledge_list_entities``."""

    num_results: Annotated[PositiveCount, Meta(description=_NUM + " (default 500)")] = 500


class ListRelationshipsParams(_Listing):
    """``knowledge_list_relationships``."""

    num_results: Annotated[PositiveCount, Meta(description=_NUM + " (default 1000)")] = 1000


class NeighborsParams(Params):
    """``knowledge_get_entity_neighbors``."""

    entity_uuid: Annotated[str, Meta(min_length=1, description="center entity")]
    num_results: Annotated[Count100k, Meta(description=_NUM + " (1-100000)")] = 50
    group_ids: ReadGroupIds = None
    examples: ClassVar[dict[str, Any]] = {"entity_uuid": "8c1f0d2e-…"}


class BySourceParams(Params):
    """``knowledge_get_entities_by_source``."""

    source: Annotated[str, Meta(min_length=1, description="source file or text (substring)")]
    num_results: Annotated[Count100k, Meta(description=_NUM + " (1-100000)")] = 100
    group_ids: ReadGroupIds = None
    examples: ClassVar[dict[str, Any]] = {"source": "mission.txt"}


async def find_entities(app: ServiceHost, ctx: CallContext, p: FindEntitiesParams) -> NodesResult:
    """``knowledge_find_entities``."""
    groups = read_group_ids(p.group_ids, preserve_empty=True)
    failures = GroupFailures()
    rows = await app.read(
        app.searcher.find_entities, p.query, groups, p.num_results, failures=failures
    )
    return NodesResult(
        nodes=rows,
        count=len(rows),
        failed_groups=failures.listing(),
        missing_legs=failures.missing_legs(),
    )


async def find_relationships(
    app: ServiceHost, ctx: CallContext, p: FindRelationshipsParams
) -> FactsResult:
    """``knowledge_find_relationships``."""
    groups = read_group_ids(p.group_ids, preserve_empty=True)
    failures = GroupFailures()
    rows = await app.read(
        app.searcher.find_relationships,
        p.query,
        groups,
        p.num_results,
        current_only=p.current_only,
        failures=failures,
    )
    return FactsResult(
        facts=rows,
        count=len(rows),
        failed_groups=failures.listing(),
        missing_legs=failures.missing_legs(),
    )


async def search_passages(
    app: ServiceHost, ctx: CallContext, p: SearchPassagesParams
) -> PassagesResult:
    """``knowledge_search_passages``."""
    groups = read_group_ids(p.group_ids, preserve_empty=False)
    failures = GroupFailures()
    report = FloorReport()
    rows = await app.read(
        app.searcher.search_passages,
        p.query,
        groups,
        p.num_results,
        p.min_score,
        fusion=p.fusion,  # checked against FUSIONS above
        as_of=p.as_of,
        valid_after=p.valid_after,
        valid_before=p.valid_before,
        recency_half_life_days=p.recency_half_life_days,
        failures=failures,
        report=report,
    )
    return PassagesResult(
        passages=rows,
        count=len(rows),
        failed_groups=failures.listing(),
        missing_legs=failures.missing_legs(),
        filtered_by_min_score=report.filtered_by_min_score,
    )


async def get_episodes(app: ServiceHost, ctx: CallContext, p: GetEpisodesParams) -> EpisodesResult:
    """``knowledge_get_episodes``."""
    gid = write_group(p.group_id)
    rows = await app.read(graph_reads.get_episodes, app.ws.graph, gid, p.last_n)
    return EpisodesResult(episodes=rows, count=len(rows))


async def nodes_by_group(app: ServiceHost, ctx: CallContext, p: GroupsParams) -> NodesResult:
    """``knowledge_get_nodes_by_group``."""
    groups = read_group_ids(p.group_ids, preserve_empty=True)
    rows = await app.read(graph_reads.nodes_by_group, app.ws.graph, groups)
    return NodesResult(nodes=rows, count=len(rows))


async def edges_by_group(app: ServiceHost, ctx: CallContext, p: GroupsParams) -> EdgesResult:
    """``knowledge_get_edges_by_group``."""
    groups = read_group_ids(p.group_ids, preserve_empty=True)
    rows = await app.read(graph_reads.edges_by_group, app.ws.graph, groups)
    return EdgesResult(edges=rows, count=len(rows))


async def edges_by_uuids(app: ServiceHost, ctx: CallContext, p: EdgesByUuidsParams) -> EdgesResult:
    """``knowledge_get_edges_by_uuids``."""
    rows = await app.read(graph_reads.edges_by_uuids, app.ws.graph, strings(p.uuids))
    return EdgesResult(edges=rows, count=len(rows))


async def list_entities(app: ServiceHost, ctx: CallContext, p: ListEntitiesParams) -> NodesResult:
    """``knowledge_list_entities``."""
    groups = read_group_ids(p.group_ids, preserve_empty=False)
    rows = await app.read(graph_reads.list_entities, app.ws.graph, p.num_results, groups)
    return NodesResult(nodes=rows, count=len(rows))


async def list_relationships(
    app: ServiceHost, ctx: CallContext, p: ListRelationshipsParams
) -> FactsResult:
    """``knowledge_list_relationships``."""
    groups = read_group_ids(p.group_ids, preserve_empty=False)
    rows = await app.read(graph_reads.list_relationships, app.ws.graph, p.num_results, groups)
    return FactsResult(facts=rows, count=len(rows))


async def neighbors(app: ServiceHost, ctx: CallContext, p: NeighborsParams) -> NeighborsResult:
    """``knowledge_get_entity_neighbors``."""
    groups = read_group_ids(p.group_ids, preserve_empty=False)
    nodes, edges = await app.read(
        graph_reads.entity_neighbors, app.ws.graph, p.entity_uuid, p.num_results, groups
    )
    return NeighborsResult(
        center_uuid=p.entity_uuid,
        nodes=nodes,
        edges=edges,
        count=len(nodes),
        node_count=len(nodes),
        edge_count=len(edges),
    )


async def by_source(app: ServiceHost, ctx: CallContext, p: BySourceParams) -> BySourceResult:
    """``knowledge_get_entities_by_source``."""
    groups = read_group_ids(p.group_ids, preserve_empty=False)
    rows = await app.read(
        graph_reads.entities_by_source, app.ws.graph, p.source, p.num_results, groups
    )
    return BySourceResult(source=p.source, nodes=rows, count=len(rows))


#: The read methods of ``app``.
READ_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_find_entities",
        "read",
        find_entities,
        "Hybrid (BM25 + vector) search for entities, best first; a document another"
        " supersedes comes after its successor and says superseded_by.",
        FindEntitiesParams,
    ),
    MethodDef(
        "knowledge_find_relationships",
        "read",
        find_relationships,
        "Hybrid search for relationship facts, best first; a fact about a superseded"
        " document comes after the SUPERSEDES fact naming its successor.",
        FindRelationshipsParams,
    ),
    MethodDef(
        "knowledge_search_passages",
        "read",
        search_passages,
        "Search episode text (BM25 + vector over each passage and its source file, a bonus"
        " for recent passages other than file chunks, and for times the query names): score is"
        " the cosine similarity (at least min_score, by default the embedder's floor), passages"
        " come in the order of fused_score, a superseded document's after its successor's"
        " (marked superseded_by).",
        SearchPassagesParams,
    ),
    MethodDef(
        "knowledge_get_episodes",
        "read",
        get_episodes,
        "The newest episodes of a group.",
        GetEpisodesParams,
    ),
    MethodDef(
        "knowledge_get_nodes_by_group",
        "read",
        nodes_by_group,
        "Every entity of the given groups.",
        GroupsParams,
    ),
    MethodDef(
        "knowledge_get_edges_by_group",
        "read",
        edges_by_group,
        "Every relationship owned by the given groups.",
        GroupsParams,
    ),
    MethodDef(
        "knowledge_get_edges_by_uuids",
        "read",
        edges_by_uuids,
        "Relationships by uuid.",
        EdgesByUuidsParams,
    ),
    MethodDef(
        "knowledge_list_entities",
        "read",
        list_entities,
        "Entities by uuid descending, with their episodes and sources.",
        ListEntitiesParams,
    ),
    MethodDef(
        "knowledge_list_relationships",
        "read",
        list_relationships,
        "Relationships by uuid descending, with their episodes and sources.",
        ListRelationshipsParams,
    ),
    MethodDef(
        "knowledge_get_entity_neighbors",
        "read",
        neighbors,
        "The entities and relationships one hop from an entity.",
        NeighborsParams,
    ),
    MethodDef(
        "knowledge_get_entities_by_source",
        "read",
        by_source,
        "Entities mentioned by episodes whose source description contains `source`.",
        BySourceParams,
    ),
)
