"""Derived state: the graph (Kuzu), vector (hnswlib) and text (BM25) projections, the
projector that feeds them from the streams, digests, search and the embedding cache."""

from __future__ import annotations

from lcg.projections.cache import EmbeddingCache, embed_with_cache
from lcg.projections.graph import DB_FILE, GraphProjection
from lcg.projections.graph.rows import EdgeRow, EntityRow, EpisodeRow, GraphCounts
from lcg.projections.ops import ClearGroup, Delete, Op, Upsert, derive_ops, texts_to_embed
from lcg.projections.projector import Projector, ReplayProgress, ReplayResult
from lcg.projections.search import PassageRow, Searcher, rrf_fuse
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection

__all__ = [
    "DB_FILE",
    "ClearGroup",
    "Delete",
    "EdgeRow",
    "EmbeddingCache",
    "EntityRow",
    "EpisodeRow",
    "GraphCounts",
    "GraphProjection",
    "Op",
    "PassageRow",
    "Projector",
    "ReplayProgress",
    "ReplayResult",
    "Searcher",
    "TextProjection",
    "Upsert",
    "VectorProjection",
    "derive_ops",
    "embed_with_cache",
    "rrf_fuse",
    "texts_to_embed",
]
