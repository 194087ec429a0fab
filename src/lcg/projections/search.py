"""Hybrid search over the projections: BM25 and vector legs fused by reciprocal rank.

Fusion (as the reference): each ranked list adds ``1 / (rank + 60)`` to a document, rank
0-based, equal weights, raw scores ignored; sorted by fused score, ties by uuid. Each leg
retrieves ``3 × num_results`` candidates. Unlike the reference, results are returned in fused
order (see docs/compatibility.md).

Legs per read:

* entities – BM25 over name + summary, vectors of the name and of the summary;
* relationships – BM25 over name + fact, vectors of the fact;
* passages – BM25 over the episode content and its vector; a passage is kept if its cosine
  similarity reaches ``min_score`` or it is a BM25 hit, and reports its cosine as ``score``.

``group_ids=None`` searches every group; ``[]`` matches nothing (callers apply the
reference's collapse/preserve rules before calling).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec
import numpy as np

from lcg.projections.embedding import TextEmbedder
from lcg.projections.graph import GraphProjection
from lcg.projections.graph_reads import edges_by_uuids, entities_by_uuids, episodes_by_uuids
from lcg.projections.rows import EdgeRow, EntityRow, EpisodeRow
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection

__all__ = [
    "RRF_K",
    "PassageRow",
    "SearchMode",
    "Searcher",
    "rrf_fuse",
]

RRF_K = 60
SearchMode = Literal["hybrid", "bm25", "vector"]


class PassageRow(msgspec.Struct, kw_only=True):
    """A passage hit: an episode with the cosine similarity of its content to the query."""

    uuid: str
    name: str
    content: str
    source_description: str
    group_id: str
    created_at: str
    valid_at: str | None
    score: float


def rrf_fuse(legs: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse ranked uuid lists by reciprocal rank; best first, ties by uuid ascending."""
    scores: dict[str, float] = {}
    for leg in legs:
        for rank, uuid in enumerate(leg):
            scores[uuid] = scores.get(uuid, 0.0) + 1.0 / (rank + k)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


class Searcher:
    """Runs the three searches over one workspace's projections."""

    def __init__(
        self,
        graph: GraphProjection,
        text: TextProjection,
        vectors: VectorProjection,
        embedder: TextEmbedder,
    ) -> None:
        self.graph = graph
        self.text = text
        self.vectors = vectors
        self.embedder = embedder

    def _query_vector(self, query: str) -> np.ndarray:
        return self.embedder.vectors([query])[query]

    def _legs(
        self,
        kind: str,
        vector_fields: Sequence[str],
        query: str,
        group_ids: list[str] | None,
        pool: int,
        mode: SearchMode,
    ) -> tuple[list[list[str]], dict[str, float]]:
        legs: list[list[str]] = []
        cosines: dict[str, float] = {}
        if mode in ("hybrid", "bm25"):
            hits = self.text.search_groups(group_ids, kind, query, pool)
            legs.append([uuid for uuid, _score, _g in hits])
        if mode in ("hybrid", "vector"):
            qvec = self._query_vector(query)
            for field in vector_fields:
                vhits = self.vectors.search_groups(group_ids, field, qvec, pool)
                legs.append([uuid for uuid, _sim, _g in vhits])
                for uuid, sim, _g in vhits:
                    cosines[uuid] = max(sim, cosines.get(uuid, -1.0))
        return legs, cosines

    def find_entities(
        self,
        query: str,
        group_ids: list[str] | None,
        num_results: int = 10,
        *,
        mode: SearchMode = "hybrid",
    ) -> list[EntityRow]:
        """Entities matching ``query``, best first."""
        if not query.strip() or num_results <= 0 or group_ids == []:
            return []
        legs, _ = self._legs(
            "entity", ("entity.name", "entity.summary"), query, group_ids, 3 * num_results, mode
        )
        fused = [uuid for uuid, _ in rrf_fuse(legs)[:num_results]]
        return entities_by_uuids(self.graph, fused)

    def find_relationships(
        self,
        query: str,
        group_ids: list[str] | None,
        num_results: int = 10,
        *,
        current_only: bool = False,
        mode: SearchMode = "hybrid",
    ) -> list[EdgeRow]:
        """Relationships matching ``query``, best first; ``current_only`` drops invalidated."""
        if not query.strip() or num_results <= 0 or group_ids == []:
            return []
        pool = 3 * num_results * (2 if current_only else 1)
        legs, _ = self._legs("edge", ("edge.fact",), query, group_ids, pool, mode)
        fused = [uuid for uuid, _ in rrf_fuse(legs)]
        rows = edges_by_uuids(self.graph, fused)
        if current_only:
            rows = [r for r in rows if r.invalid_at is None]
        return rows[:num_results]

    def search_passages(
        self,
        query: str,
        group_ids: list[str] | None,
        num_results: int = 10,
        min_score: float = 0.5,
        *,
        mode: SearchMode = "hybrid",
    ) -> list[PassageRow]:
        """Episodes whose content matches ``query``, best first."""
        if not query.strip() or group_ids == []:
            return []
        pool = 3 * num_results
        legs, cosines = self._legs("episode", ("episode.content",), query, group_ids, pool, mode)
        lexical = set(legs[0]) if mode in ("hybrid", "bm25") and legs else set()
        fused = [uuid for uuid, _ in rrf_fuse(legs)]
        if mode != "bm25":
            qvec = self._query_vector(query)
            for uuid in fused:
                if uuid not in cosines:
                    cosines[uuid] = self._cosine_of(uuid, qvec, group_ids)
        kept = [u for u in fused if u in lexical or cosines.get(u, 0.0) >= min_score]
        kept = kept[:num_results]
        rows = episodes_by_uuids(self.graph, kept)
        return [_passage(row, cosines.get(row.uuid, 0.0)) for row in rows]

    def _cosine_of(self, uuid: str, qvec: np.ndarray, group_ids: list[str] | None) -> float:
        groups = group_ids if group_ids is not None else self.vectors.groups()
        for group_id in groups:
            vec = self.vectors.get_vector(group_id, "episode.content", uuid)
            if vec is not None:
                return float(np.dot(vec, qvec))
        return 0.0


def _passage(row: EpisodeRow, score: float) -> PassageRow:
    return PassageRow(
        uuid=row.uuid,
        name=row.name,
        content=row.content,
        source_description=row.source_description,
        group_id=row.group_id,
        created_at=row.created_at,
        valid_at=row.valid_at,
        score=round(score, 6),
    )
