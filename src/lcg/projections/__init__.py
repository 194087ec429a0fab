"""Derived state: the graph (Kuzu), vector (hnswlib) and text (BM25) projections, the
projector that feeds them from the streams, digests, search and the workspace write path."""

from __future__ import annotations

from lcg.projections.cache import EmbeddingCache, embed_with_cache
from lcg.projections.dump import DumpResult, dump_groups
from lcg.projections.graph import GraphProjection
from lcg.projections.ops import ClearGroup, Delete, Op, Upsert, derive_ops, texts_to_embed
from lcg.projections.projector import Projector, ReplayProgress, ReplayResult
from lcg.projections.rows import EdgeRow, EntityRow, EpisodeRow, GraphCounts
from lcg.projections.search import PassageRow, Searcher, rrf_fuse
from lcg.projections.status import StatusReport, build_status
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection
from lcg.projections.verify import VerifyReport, verify_workspace
from lcg.projections.workspace import Workspace

__all__ = [
    "ClearGroup",
    "Delete",
    "DumpResult",
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
    "StatusReport",
    "TextProjection",
    "Upsert",
    "VectorProjection",
    "VerifyReport",
    "Workspace",
    "build_status",
    "derive_ops",
    "dump_groups",
    "embed_with_cache",
    "rrf_fuse",
    "texts_to_embed",
    "verify_workspace",
]
