"""The projector's view of embedding: texts in, unit vectors out, through the cache.

``CachedTextEmbedder`` wraps an ``Embedder`` and an ``EmbeddingCache`` so a batch of texts costs
one embedder call for the misses only, and counts what was computed and what was reused.
"""

from __future__ import annotations

from typing import Protocol

import msgspec
import numpy as np

from lcg.errors import EmbedderError
from lcg.extract import Embedder
from lcg.projections.cache import EmbeddingCache

__all__ = ["CachedTextEmbedder", "EmbeddingStats", "TextEmbedder"]


class EmbeddingStats(msgspec.Struct, kw_only=True):
    """How the texts of a replay were embedded."""

    embeddings_recomputed: int = 0
    embeddings_cached: int = 0
    embeddings_recompute_failed: int = 0
    embedder_calls: int = 0


class TextEmbedder(Protocol):
    """Maps texts to unit vectors for the vector projection."""

    model_id: str
    dim: int
    stats: EmbeddingStats

    @property
    def default_min_score(self) -> float:
        """The cosine floor of a passage search that names no ``min_score`` (ADR 0198)."""
        ...

    def vectors(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Vectors for ``texts`` (raises ``EmbedderError``)."""
        ...


class CachedTextEmbedder:
    """An embedder behind the content-addressed cache (``cache=None`` disables caching)."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None) -> None:
        self.embedder = embedder
        self.cache = cache
        self.model_id = embedder.model_id
        self.dim = embedder.dim
        self.stats = EmbeddingStats()

    @property
    def default_min_score(self) -> float:
        """The wrapped embedder's default cosine floor (ADR 0198)."""
        return self.embedder.default_min_score

    def vectors(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Vectors for ``texts``: cached ones reused, the rest embedded in one call."""
        if not texts:
            return {}
        if self.cache is not None:
            hits, misses = self.cache.get_many(texts)
        else:
            hits, misses = {}, list(texts)
        out = dict(hits)
        if misses:
            try:
                computed = self.embedder.embed(misses)
            except EmbedderError:
                self.stats.embeddings_recompute_failed += len(misses)
                raise
            self.stats.embedder_calls += 1
            self.stats.embeddings_recomputed += len(misses)
            if self.cache is not None:
                self.cache.put_many(misses, computed)
            for text, vec in zip(misses, computed, strict=True):
                out[text] = vec
        self.stats.embeddings_cached += len(hits)
        return out

    def flush(self) -> None:
        """Persist the cache's new entries."""
        if self.cache is not None:
            self.cache.flush()
