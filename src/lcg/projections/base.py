"""The protocols every projection implements, so the projector treats them alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from lcg.events.model import Event
from lcg.projections.graph.rows import GraphCounts
from lcg.projections.ops import Op

__all__ = ["EventProjection", "OpProjection", "PositionTuple", "VectorOpProjection"]

#: ``(applied seq, generation)``; ``(None, None)`` when nothing of the group is applied.
PositionTuple = tuple[int | None, str | None]


class _Positioned(Protocol):
    def position(self, group_id: str) -> PositionTuple: ...

    def purge_group(self, group_id: str) -> None: ...

    def digest(self, group_id: str) -> str: ...

    def close(self) -> None: ...


class EventProjection(_Positioned, Protocol):
    """A projection that applies events directly (the graph)."""

    def apply(self, group_id: str, generation: str, events: list[Event]) -> None: ...

    def counts(self, group_id: str | None = None) -> GraphCounts: ...


class OpProjection(_Positioned, Protocol):
    """A projection that applies derived text ops (BM25)."""

    #: Groups whose snapshot was found damaged on open (not loaded): the path and the fault.
    damaged: dict[str, str]

    def apply(self, group_id: str, generation: str, last_seq: int, ops: list[Op]) -> None: ...

    def begin_bulk(self, group_id: str) -> None: ...

    def end_bulk(self, group_id: str) -> None: ...

    def save(self) -> None: ...


class VectorOpProjection(_Positioned, Protocol):
    """A projection that applies derived ops with their embeddings (hnswlib)."""

    #: Groups whose snapshot was found damaged on open (not loaded): the path and the fault.
    damaged: dict[str, str]

    def apply(
        self,
        group_id: str,
        generation: str,
        last_seq: int,
        ops: list[Op],
        vectors: Mapping[str, np.ndarray],
    ) -> None: ...

    def begin_bulk(self, group_id: str) -> None: ...

    def end_bulk(self, group_id: str) -> None: ...

    def save(self) -> None: ...
