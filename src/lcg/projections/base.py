"""What every projection is to the projector, the workspace and verify: one ``Projection``.

A projection is fed ``Batch``es (a run of a group's stream past its own position, with the
ops derived from it and, when it declares ``embeds``, their embeddings) and keeps its own
position per group. What sets one apart is declared in its ``Capabilities``, never probed.
The projection *of record* (the graph) is a ``RecordProjection``: it may bulk-load an empty
group, and its position and rows speak for the group (ADR 0182).

``Projections`` is the ordered sequence a workspace holds; everything that must reach every
projection (purge, digests, save, close, the groups known) iterates it.

A group's events create and change only that group's rows (ADR 0196): an event that names a
row another group holds, or that names another group at all, is a ``ForeignRowError``, which
stops its group alone where it stands (``_feed``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np

from lcg.errors import ProjectionError
from lcg.events import Event, Position
from lcg.projections.ops import Op

__all__ = [
    "Batch",
    "Capabilities",
    "ForeignRowError",
    "Projection",
    "Projections",
    "RecordProjection",
]

P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a projection asks of the projector beyond the plain batch."""

    #: Its batches carry the embeddings of their ops' texts; while the embedder fails it
    #: lags (held back per group) and nothing else waits.
    embeds: bool = False
    #: A ``ProjectionError`` from ``apply_batch`` is the fault of an event: the projector
    #: bisects the batch and skips only the failing events (otherwise the error is raised).
    isolates_events: bool = False


@dataclass(frozen=True, slots=True)
class Batch:
    """A run of one group's events past a projection's position, as that projection gets it."""

    group_id: str
    generation: str
    #: The events past the projection's position, in seq order; empty only when each was
    #: skipped (ADR 0196): then the position just moves to ``last_seq``.
    events: Sequence[Event]
    #: The ops derived from ``events``, in order (``ops.derive_ops``).
    ops: Sequence[Op]
    #: The last seq of the stream batch: the position the projection has after applying.
    last_seq: int
    #: The embeddings of ``texts_to_embed(ops)``; empty unless the projection ``embeds``.
    vectors: Mapping[str, np.ndarray] = field(default_factory=dict)


class ForeignRowError(ProjectionError):
    """An event of one group's stream names a row another group holds, or another group."""

    def __init__(self, event: Event, group_id: str, owner: str, what: str) -> None:
        """``event`` of ``group_id``'s stream ``what`` (``writes entity <uuid>, which group
        'a' holds``; ``names group 'a'``): group ``owner``'s."""
        self.seq = event.seq
        self.group_id = group_id
        self.owner = owner
        kind = event.__struct_config__.tag
        super().__init__(
            f"group {group_id!r}: event seq {event.seq} ({kind}) {what}; a group's stream "
            f"creates and changes only its own rows (is it a copy of the stream of group "
            f"{owner!r}, or a hostile one?)"
        )


class Projection(Protocol):
    """One projection: fed batches, positioned per group, purged, digested, saved, closed."""

    @property
    def name(self) -> str:
        """Its name in positions, digests and messages (``graph``, ``text``, ``vectors``)."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """What it asks of the projector (declared, never probed)."""
        ...

    @property
    def damaged(self) -> Mapping[str, str]:
        """Groups whose files were found damaged on open (not loaded): path and fault."""
        ...

    def position(self, group_id: str) -> Position:
        """Where it stands in ``group_id``'s stream (``Position.none`` if nothing applied)."""
        ...

    def groups(self) -> list[str]:
        """Every group it holds anything of."""
        ...

    def apply_batch(self, batch: Batch) -> None:
        """Apply ``batch``; its position becomes ``batch.last_seq`` of ``batch.generation``."""
        ...

    def purge_group(self, group_id: str) -> None:
        """Drop everything of ``group_id``, its position included."""
        ...

    def digest(self, group_id: str) -> str:
        """A canonical digest of what it holds of ``group_id`` (equal state, equal digest)."""
        ...

    def begin_bulk(self, group_id: str) -> None:
        """A full replay of ``group_id`` starts: upkeep may wait for ``end_bulk``."""
        ...

    def end_bulk(self, group_id: str) -> None:
        """The full replay of ``group_id`` ended (or failed): do the upkeep deferred."""
        ...

    def save(self) -> None:
        """Persist what is not yet on disk (a projection that commits as it goes: nothing)."""
        ...

    def close(self) -> None:
        """Release its files; it is not used again."""
        ...


class RecordProjection(Projection, Protocol):
    """The projection of record (the graph): its position and rows speak for the group."""

    def load_group(self, group_id: str, generation: str, batches: Iterable[list[Event]]) -> int:
        """Load an empty group from ``batches`` in one pass; ``ProjectionError`` if it fails."""
        ...

    def holds_rows(self, group_id: str) -> bool:
        """True if it holds any row of ``group_id`` (a replay from 0 would lay over them)."""
        ...

    def bulk_loadable(self, group_id: str) -> bool:
        """True if ``group_id`` is empty enough for ``load_group``."""
        ...


class Projections:
    """The ordered projections of a workspace; the first is the projection of record."""

    def __init__(self, record: RecordProjection, *others: Projection) -> None:
        self.record = record
        self._all: tuple[Projection, ...] = (record, *others)
        names = [p.name for p in self._all]
        if len(set(names)) != len(names):
            raise ValueError(f"two projections share a name: {names}")

    def __iter__(self) -> Iterator[Projection]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def names(self) -> list[str]:
        """The projections' names, in order."""
        return [p.name for p in self._all]

    def named(self, name: str) -> Projection:
        """The projection called ``name`` (``KeyError`` if none is)."""
        for p in self._all:
            if p.name == name:
                return p
        raise KeyError(name)

    def role(self, name: str, kind: type[P]) -> P:
        """The projection called ``name``, typed as the ``kind`` its role needs."""
        found = self.named(name)
        if not isinstance(found, kind):
            raise TypeError(f"the {name} projection is a {type(found).__name__}, not a {kind}")
        return found

    def groups(self) -> set[str]:
        """Every group any projection holds anything of."""
        return {g for p in self._all for g in p.groups()}

    def digests(self, group_id: str) -> dict[str, str]:
        """Each projection's digest of ``group_id``, by name."""
        return {p.name: p.digest(group_id) for p in self._all}

    def purge_group(self, group_id: str) -> None:
        """Purge ``group_id`` from every projection, in order."""
        for p in self._all:
            p.purge_group(group_id)
