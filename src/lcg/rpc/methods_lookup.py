"""Lookups (lcg's own reads, ADR 0224): entities and episodes by uuid, as the reference's
``knowledge_get_edges_by_uuids`` looks up relationships, a file's declared document, and the
neighbours of several entities at once.

The page of ``lcg ui`` shows one entity, one episode, one file's chunks: each a bounded
lookup of rows it already knows the uuids of (from a search hit, a neighbour, a source's
manifest). No other read answers "this entity" or "this episode": the listings are of a
whole group, and the neighbourhood read leaves its centre out; a document is keyed by its
file, which no search is. At most ``MAX_UUIDS`` per call. The graph of an entity page asks
the neighbours of its centre's neighbours: one read for them all (at most ``MAX_CENTRES``)
costs what one ``knowledge_get_entity_neighbors`` does, where a read each cost that each.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Final

import msgspec
from msgspec import Meta

from lcg.errors import InvalidParamsError
from lcg.query import graph_reads
from lcg.rpc.host import ServiceHost
from lcg.rpc.methods_read import EpisodesResult, NeighborsResult, NodesResult
from lcg.rpc.params import (
    Count500,
    GroupId,
    ReadGroupIds,
    read_group_ids,
    strings,
    write_group,
)
from lcg.rpc.registry import CallContext, MethodDef, Params

__all__ = ["LOOKUP_METHODS", "MAX_CENTRES", "MAX_UUIDS"]

#: The most uuids one lookup takes: a page's worth, never a group.
MAX_UUIDS: Final = 500
#: The most entities one neighbours read takes (each with at most 500 edges).
MAX_CENTRES: Final = 20

_UUIDS = f"uuids to look up (non-strings are ignored; at most {MAX_UUIDS})"


class EntitiesByUuidsParams(Params):
    """``knowledge_get_entities_by_uuids``."""

    uuids: Annotated[list[Any], Meta(description=_UUIDS)]
    group_ids: ReadGroupIds = None
    examples: ClassVar[dict[str, Any]] = {"uuids": ["8c1f0d2e-…"]}


class DocumentParams(Params):
    """``knowledge_get_document``."""

    file: Annotated[
        str,
        Meta(
            min_length=1,
            description='the file as served: "<folder label>/<path in it>", or a file '
            "source's label",
        ),
    ]
    group_id: GroupId = None
    examples: ClassVar[dict[str, Any]] = {"file": "notes/moon.md"}


class EpisodesByUuidsParams(Params):
    """``knowledge_get_episodes_by_uuids``."""

    uuids: Annotated[list[Any], Meta(description=_UUIDS)]
    examples: ClassVar[dict[str, Any]] = {"uuids": ["5b0e7a91-…"]}


class EntitiesNeighborsParams(Params):
    """``knowledge_get_entities_neighbors``."""

    entity_uuids: Annotated[
        list[Any],
        Meta(description=f"center entities (non-strings are ignored; at most {MAX_CENTRES})"),
    ]
    num_results: Annotated[
        Count500, Meta(description="maximum edges of each center (1-500, default 50)")
    ] = 50
    group_ids: ReadGroupIds = None
    examples: ClassVar[dict[str, Any]] = {"entity_uuids": ["8c1f0d2e-…", "5b0e7a91-…"]}


class EntitiesNeighborsResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_get_entities_neighbors``: one neighbourhood a center."""

    neighborhoods: list[NeighborsResult]
    count: int


def _keys(uuids: list[Any]) -> list[str]:
    keys = list(dict.fromkeys(strings(uuids)))
    if len(keys) > MAX_UUIDS:
        raise InvalidParamsError(f"uuids: at most {MAX_UUIDS} per call (got {len(keys)})")
    return keys


async def entities_by_uuids(
    app: ServiceHost, ctx: CallContext, p: EntitiesByUuidsParams
) -> NodesResult:
    """``knowledge_get_entities_by_uuids``: in the given order, missing ones left out,
    each with the episodes that mention it (``episode_uuids``, ``source_descriptions``)."""
    keys = _keys(p.uuids)
    groups = read_group_ids(p.group_ids, preserve_empty=False)
    rows = await app.read(graph_reads.entities_with_mentions, app.ws.graph, keys, groups)
    return NodesResult(nodes=rows, count=len(rows))


async def document(app: ServiceHost, ctx: CallContext, p: DocumentParams) -> NodesResult:
    """``knowledge_get_document``: the declared ``Document`` of a file (none or one), with
    the episodes that mention it; its links are its edges (``knowledge_get_entity_neighbors``)."""
    source, slash, path = p.file.partition("/")
    if not slash:
        path = source  # a file given alone is its own source (ADR 0200)
    rows = await app.read(
        graph_reads.document_of_file, app.ws.graph, write_group(p.group_id), source, path
    )
    return NodesResult(nodes=rows, count=len(rows))


async def episodes_by_uuids(
    app: ServiceHost, ctx: CallContext, p: EpisodesByUuidsParams
) -> EpisodesResult:
    """``knowledge_get_episodes_by_uuids``: in the given order, missing ones left out."""
    rows = await app.read(graph_reads.episodes_by_uuids, app.ws.graph, _keys(p.uuids))
    return EpisodesResult(episodes=rows, count=len(rows))


async def entities_neighbors(
    app: ServiceHost, ctx: CallContext, p: EntitiesNeighborsParams
) -> EntitiesNeighborsResult:
    """``knowledge_get_entities_neighbors``: for each center (in the given order, repeats
    once), what ``knowledge_get_entity_neighbors`` answers for it, without the mentions."""
    keys = list(dict.fromkeys(strings(p.entity_uuids)))
    if len(keys) > MAX_CENTRES:
        raise InvalidParamsError(f"entity_uuids: at most {MAX_CENTRES} per call (got {len(keys)})")
    groups = read_group_ids(p.group_ids, preserve_empty=False)
    found = await app.read(
        graph_reads.neighbors_of_entities, app.ws.graph, keys, p.num_results, groups
    )
    hoods = [
        NeighborsResult(
            center_uuid=centre,
            nodes=nodes,
            edges=edges,
            count=len(nodes),
            node_count=len(nodes),
            edge_count=len(edges),
        )
        for centre, nodes, edges in found
    ]
    return EntitiesNeighborsResult(neighborhoods=hoods, count=len(hoods))


#: The lookups by uuid.
LOOKUP_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_get_entities_by_uuids",
        "read",
        entities_by_uuids,
        "The entities with these uuids (at most 500), each with the episodes that mention it.",
        EntitiesByUuidsParams,
        own=True,
    ),
    MethodDef(
        "knowledge_get_episodes_by_uuids",
        "read",
        episodes_by_uuids,
        "The episodes with these uuids (at most 500): name, time, source and text.",
        EpisodesByUuidsParams,
        own=True,
    ),
    MethodDef(
        "knowledge_get_document",
        "read",
        document,
        "The declared Document of a file of a source (by its path as served), with the "
        "episodes that mention it.",
        DocumentParams,
        own=True,
    ),
    MethodDef(
        "knowledge_get_entities_neighbors",
        "read",
        entities_neighbors,
        "The neighbors of several entities at once (at most 20), each as "
        "knowledge_get_entity_neighbors answers it, without the episodes that mention them.",
        EntitiesNeighborsParams,
        own=True,
    ),
)
