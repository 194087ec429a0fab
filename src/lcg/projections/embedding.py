"""The projector's view of embedding: texts in, unit vectors out, through the cache.

``CachedTextEmbedder`` wraps an ``Embedder`` and an ``EmbeddingCache`` so a batch of texts costs
one embedder call for the misses only, and counts what was computed and what was reused.

Text first, vectors follow (ADR 0201): inside ``deferring()`` (this thread only) a batch whose
texts are not all cached raises ``EmbedderError(DEFERRED)`` instead of running the model, so
the projector applies graph and text and leaves the vector projection behind, as it does for
an embedder that is away (ADR 0171). ``VectorBacklog`` counts what is left per group and how
fast a background drainer makes it; the drainer computes the vectors outside every lock (they
land in the cache) and applies them with the projector, deferring again, under the group's.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final, Protocol

import msgspec
import numpy as np

from lcg.errors import EmbedderError
from lcg.extract import Embedder
from lcg.projections.cache import EmbeddingCache

__all__ = [
    "DEFERRED",
    "CachedTextEmbedder",
    "EmbeddingStats",
    "TextEmbedder",
    "VectorBacklog",
    "deferring_now",
]

#: Why a group's vectors lag while the background drainer computes them.
DEFERRED: Final = (
    "vectors are being computed in the background (text first, ADR 0201); "
    "BM25 answers for these passages meanwhile"
)
#: The window over which ``VectorBacklog.rate`` is measured, seconds.
RATE_WINDOW_S: Final = 60.0

_deferral = threading.local()


def deferring_now() -> bool:
    """True inside ``CachedTextEmbedder.deferring()`` in this thread: vectors not cached are
    left to the background drainer."""
    return getattr(_deferral, "known", None) is not None


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
        deferred: dict[str, np.ndarray] | None = getattr(_deferral, "known", None)
        if misses and deferred is not None:
            if not all(t in deferred for t in misses):
                # Left to the background drainer: the vector projection waits, nothing else.
                raise EmbedderError(DEFERRED)
            out.update((t, deferred[t]) for t in misses)
            self.stats.embeddings_cached += len(texts)
            return out
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

    @contextmanager
    def deferring(self, known: Mapping[str, np.ndarray] | None = None) -> Iterator[None]:
        """In this thread, a batch with texts neither cached nor in ``known`` (vectors the
        drainer just made: a read-only or full cache may not have kept them) raises
        ``EmbedderError(DEFERRED)`` rather than running the model."""
        before = getattr(_deferral, "known", None)
        _deferral.known = dict(known or {})
        try:
            yield
        finally:
            _deferral.known = before


class VectorBacklog:
    """Texts whose vectors the vector projection still lacks, per group, and the rate at
    which the drainer makes them (thread-safe; a count, never a record: the stream and the
    projection's position are what say which vectors are missing)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, int] = {}
        self._made: deque[tuple[float, int]] = deque()
        #: A background drainer serves this workspace: source syncs may leave vectors to it.
        self.drained_in_background = False

    def set_pending(self, group_id: str, count: int) -> None:
        """``group_id`` lacks ``count`` vectors (0 forgets it)."""
        with self._lock:
            if count > 0:
                self._pending[group_id] = count
            else:
                self._pending.pop(group_id, None)

    def add(self, group_id: str, count: int) -> None:
        """``count`` more texts of ``group_id`` wait for their vectors."""
        with self._lock:
            self._pending[group_id] = self._pending.get(group_id, 0) + count

    def made(self, count: int) -> None:
        """The drainer computed ``count`` vectors just now."""
        now = time.monotonic()
        with self._lock:
            self._made.append((now, count))
            self._trim(now)

    def pending(self) -> dict[str, int]:
        """Texts still without vectors, by group (groups with none left out)."""
        with self._lock:
            return dict(self._pending)

    def total(self) -> int:
        """Texts still without vectors, over every group."""
        return sum(self.pending().values())

    def rate(self) -> float:
        """Vectors made per second over the last ``RATE_WINDOW_S`` seconds."""
        now = time.monotonic()
        with self._lock:
            self._trim(now)
            if not self._made:
                return 0.0
            span = max(now - self._made[0][0], 1.0)
            return sum(n for _, n in self._made) / span

    def _trim(self, now: float) -> None:
        while self._made and now - self._made[0][0] > RATE_WINDOW_S:
            self._made.popleft()
