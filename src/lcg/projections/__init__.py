"""Derived state, the write side: the graph (Kuzu), vector (hnswlib) and text (BM25)
projections, the projector that feeds them from the streams, digests and the embedding
cache. What reads them for clients (search, Cypher, the graph reads) is ``lcg.query``'s."""

from __future__ import annotations

from lcg.projections._layout import CLEARED_FILE, DAMAGE_FILE, RESETS_FILE
from lcg.projections.base import Projection, Projections, RecordProjection
from lcg.projections.cache import EMBEDDINGS_DIR, EmbeddingCache, cache_dir_name, embed_with_cache
from lcg.projections.embedding import CachedTextEmbedder, TextEmbedder
from lcg.projections.fanout import GroupFailure, GroupFailures, MissingLeg
from lcg.projections.graph import (
    DB_FILE,
    GraphProjection,
    StaleGraphError,
    forget_prepared,
    query_rows,
    render_ts,
)
from lcg.projections.graph import columns as graph_columns
from lcg.projections.graph import pointers as graph_pointers
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
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection, snapshot_identities

__all__ = [
    "CLEARED_FILE",
    "DAMAGE_FILE",
    "DB_FILE",
    "EMBEDDINGS_DIR",
    "MERGED_LABEL",
    "RESETS_FILE",
    "BindingState",
    "CachedTextEmbedder",
    "ClearGroup",
    "Delete",
    "EdgeRow",
    "EmbeddingCache",
    "EntityRow",
    "EpisodeRow",
    "GraphCounts",
    "GraphProjection",
    "GroupFailure",
    "GroupFailures",
    "MissingLeg",
    "Op",
    "Pointer",
    "Pointers",
    "ProgressFn",
    "Projection",
    "Projections",
    "Projector",
    "RecordProjection",
    "ReplayProgress",
    "ReplayResult",
    "StaleGraphError",
    "TextEmbedder",
    "TextProjection",
    "Upsert",
    "VectorProjection",
    "cache_dir_name",
    "derive_ops",
    "embed_with_cache",
    "forget_prepared",
    "graph_columns",
    "graph_pointers",
    "graph_records",
    "pointers_of",
    "query_rows",
    "render_ts",
    "snapshot_identities",
    "texts_to_embed",
    "with_pointers",
]
