"""The background drainer of vectors that wait (ADR 0201): text first, vectors follow.

A source sync records its chunks with the vectors deferred (``CachedTextEmbedder.deferring``):
graph and text apply at once, the vector projection's position stays behind, and the group
is in ``projector.embedder_failures`` with the ``DEFERRED`` reason — the same lag an away
embedder leaves (ADR 0171). What is missing is never recorded anywhere else: it is the
stream past the vector projection's position, so a replay, a restart or ``lcg verify`` see
the same thing a live process does.

``drain_step`` makes one batch of a group's missing vectors:

1. with no lock held, read the stream past the vector projection's position, count the
   texts still to embed (``VectorBacklog``), and embed those of the next ``DRAIN_BATCHES``
   replay batches through the cache — the model runs here, readers and writers go on;
2. under the group's lock (and the workspace's apply lock), catch the group up, deferring
   with the vectors just made: the replay applies every batch whose vectors are cached or
   made and stops at the first that is not, leaving the rest for the next step.

Other writes to the group meanwhile are never blocked for longer than one apply. A group
whose embedder fails for real stays lagging with that reason (``EmbedderError`` raised to
the caller), as before.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Final, Protocol

from lcg.config import Config
from lcg.errors import GenerationError, LcgError
from lcg.events import ReadReport, StreamReader, WalStore
from lcg.projections import (
    CachedTextEmbedder,
    Projector,
    VectorProjection,
    derive_ops,
    texts_to_embed,
)

__all__ = ["DRAIN_BATCHES", "DrainHost", "DrainLocks", "drain_group", "drain_step", "next_lagging"]

#: Replay batches (``LCG_REPLAY_BATCH_SIZE`` events each) whose vectors one step makes: 1,024
#: texts at the default, so that a step's own reading and catch-up (about 0.1 s) stay small
#: beside the model's time (ADR 0206; 4 before). The apply under the lock is one step's.
DRAIN_BATCHES: Final = 16


class DrainLocks(Protocol):
    """The workspace's lock the drainer applies under."""

    def applying(self) -> AbstractContextManager[None]: ...


class DrainHost(Protocol):
    """What the drainer needs of the workspace (``Workspace`` is one)."""

    @property
    def config(self) -> Config: ...
    @property
    def store(self) -> WalStore: ...
    @property
    def projector(self) -> Projector: ...
    @property
    def vectors(self) -> VectorProjection: ...
    @property
    def text_embedder(self) -> CachedTextEmbedder: ...
    @property
    def rw(self) -> DrainLocks: ...
    def group_lock(self, group_id: str) -> AbstractContextManager[object]: ...
    def record_embedding_model(self, group_id: str) -> None: ...


def next_lagging(ws: DrainHost, after: str | None) -> str | None:
    """The lagging group to drain next: the first after ``after`` in name order (round
    robin, so that one big group does not starve the others), ``None`` when none lags."""
    lagging = sorted(ws.projector.embedder_failures)
    if not lagging:
        return None
    later = [g for g in lagging if after is None or g > after]
    return later[0] if later else lagging[0]


def _missing_texts(ws: DrainHost, group_id: str, known: int | None) -> tuple[list[str], int]:
    """The texts of the next ``DRAIN_BATCHES`` replay batches past the vector projection's
    position, and how many texts wait in all (read from the stream, no lock held).

    ``known``: the backlog's count of the group, trusted when it exceeds the head, so that a
    step reads only the head (counting the whole backlog at every step read it again and
    again, ADR 0206); else, or when the head is all that is left, the stream is counted.
    """
    generation = ws.store.generation(group_id)
    try:
        start = ws.vectors.position(group_id).next_seq(generation)
    except GenerationError:
        return [], 0  # a reset: the catch-up under the lock replays the group in full
    size = max(1, ws.config.replay_batch_size)
    reader = StreamReader(ws.store.group_dir(group_id), generation=generation)
    head: list[str] = []
    total = 0
    for i, batch in enumerate(reader.batches(start, None, batch_size=size, report=ReadReport())):
        texts = texts_to_embed([op for e in batch for op in derive_ops(e)])
        total += len(texts)
        if i < DRAIN_BATCHES:
            head.extend(texts)
        elif known is not None and known > total:
            return list(dict.fromkeys(head)), known
    return list(dict.fromkeys(head)), total


def drain_step(ws: DrainHost, group_id: str) -> bool:
    """Make and apply one batch of ``group_id``'s missing vectors; True while it still
    lags after. Raises ``EmbedderError`` when the embedder fails (the group keeps lagging)."""
    backlog = ws.vectors.backlog
    texts, waiting = _missing_texts(ws, group_id, backlog.pending().get(group_id))
    backlog.set_pending(group_id, waiting)
    before = ws.text_embedder.stats.embeddings_recomputed
    # The model runs here, with no lock held (the vectors land in the cache too).
    made = ws.text_embedder.vectors(texts)
    backlog.made(ws.text_embedder.stats.embeddings_recomputed - before)
    with ws.group_lock(group_id), ws.rw.applying(), ws.text_embedder.deferring(made):
        ws.projector.catch_up(group_id)
    if group_id in ws.projector.embedder_failures:
        backlog.set_pending(group_id, max(0, waiting - len(texts)))
        return True
    backlog.set_pending(group_id, 0)
    with ws.group_lock(group_id), ws.rw.applying():
        ws.projector.save()
    ws.text_embedder.flush()
    ws.record_embedding_model(group_id)
    return False


def drain_group(ws: DrainHost, group_id: str) -> None:
    """Drain ``group_id`` until its vectors are whole (``EmbedderError`` if the embedder
    fails; another error of the group's own is left to its status)."""
    try:
        while drain_step(ws, group_id):
            pass
    except LcgError as exc:
        from lcg.errors import EmbedderError

        if isinstance(exc, EmbedderError):
            raise
