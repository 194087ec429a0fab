"""Derived state: the graph (Kuzu), vector (hnswlib) and text (BM25) projections, the
projector that feeds them from the streams, digests, search and the embedding cache."""

from __future__ import annotations

from lcg.projections.base import Projection, Projections, RecordProjection
from lcg.projections.cache import EMBEDDINGS_DIR, EmbeddingCache, cache_dir_name, embed_with_cache
from lcg.projections.cypher import check_read_only
from lcg.projections.embedding import CachedTextEmbedder
from lcg.projections.fanout import GroupFailure, GroupFailures, MissingLeg
from lcg.projections.graph import (
    DB_FILE,
    GraphProjection,
    StaleGraphError,
    forget_prepared,
    query_rows,
)
from lcg.projections.graph import pointers as graph_pointers
from lcg.projections.graph import reads as graph_reads
from lcg.projections.graph import records as graph_records
from lcg.projections.graph.pointers import (
    BindingState,
    Pointer,
    Pointers,
    pointers_of,
    with_pointers,
)
from lcg.projections.graph.rows import EdgeRow, EntityRow, EpisodeRow, GraphCounts
from lcg.projections.ops import (
    MERGED_LABEL,
    ClearGroup,
    Delete,
    Op,
    Upsert,
    derive_ops,
    texts_to_embed,
)
from lcg.projections.projector import ProgressFn, Projector, ReplayProgress, ReplayResult
from lcg.projections.sandbox import CypherSandbox, SandboxLimits, Target
from lcg.projections.search import (
    DEFAULT_HALF_LIFE_DAYS,
    DEFAULT_WEIGHTS,
    FUSIONS,
    FloorReport,
    PassageRow,
    PassageWeights,
    Searcher,
    is_file_chunk,
    parse_time,
    rrf_fuse,
)
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection, snapshot_identities

__all__ = [
    "DB_FILE",
    "DEFAULT_HALF_LIFE_DAYS",
    "DEFAULT_WEIGHTS",
    "EMBEDDINGS_DIR",
    "FUSIONS",
    "MERGED_LABEL",
    "BindingState",
    "CachedTextEmbedder",
    "ClearGroup",
    "CypherSandbox",
    "Delete",
    "EdgeRow",
    "EmbeddingCache",
    "EntityRow",
    "EpisodeRow",
    "FloorReport",
    "GraphCounts",
    "GraphProjection",
    "GroupFailure",
    "GroupFailures",
    "MissingLeg",
    "Op",
    "PassageRow",
    "PassageWeights",
    "Pointer",
    "Pointers",
    "ProgressFn",
    "Projection",
    "Projections",
    "Projector",
    "RecordProjection",
    "ReplayProgress",
    "ReplayResult",
    "SandboxLimits",
    "Searcher",
    "StaleGraphError",
    "Target",
    "TextProjection",
    "Upsert",
    "VectorProjection",
    "cache_dir_name",
    "check_read_only",
    "derive_ops",
    "embed_with_cache",
    "forget_prepared",
    "graph_pointers",
    "graph_reads",
    "graph_records",
    "is_file_chunk",
    "parse_time",
    "pointers_of",
    "query_rows",
    "rrf_fuse",
    "snapshot_identities",
    "texts_to_embed",
    "with_pointers",
]
