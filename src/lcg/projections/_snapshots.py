"""The per-group bookkeeping of a projection snapshotted group by group (text, vectors).

Each group's state carries its applied position; the book knows which groups changed since
their last save, and what opening found: a *damaged* snapshot (ADR 0155) is listed with its
fault and — unless the projection is read-only and when the fault is in the content — deleted,
so with no position the projector rebuilds the group from its stream; a *discarded* one (an
older format, another analyzer or embedder) is deleted unless read-only and listed, and the
projector replays its group. The other groups load as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from lcg.events import Position
from lcg.projections._checksum import DamagedFile

__all__ = ["Positioned", "SnapshotBook"]


class Positioned(Protocol):
    """A group's state: it knows the seq and generation it has applied."""

    seq: int | None
    generation: str | None


S = TypeVar("S", bound=Positioned)


class SnapshotBook(Generic[S]):
    """Each group's state, the groups changed since saved, and what opening found."""

    def __init__(self, *, read_only: bool) -> None:
        self.read_only = read_only
        #: group → its state (and applied position).
        self.states: dict[str, S] = {}
        #: Groups changed since their last save.
        self.dirty: set[str] = set()
        #: Groups whose snapshot was damaged, not loaded: group → the path and the fault.
        self.damaged: dict[str, str] = {}
        #: Groups whose snapshot was of an older format, analyzer or embedder: not loaded.
        self.discarded: list[str] = []

    def open(
        self, group_id: str, load: Callable[[], S | None], remove: Callable[[], object]
    ) -> None:
        """Load ``group_id`` with ``load`` (``None``: it decided not to keep it); a
        ``DamagedFile`` it raises lists the group as damaged and, unless read-only and when
        the fault is in the content, deletes the snapshot with ``remove``."""
        try:
            state = load()
        except DamagedFile as exc:
            # One group's damaged file is that group's: the others load, and this one (with
            # no position) is rebuilt from its stream.
            self.damaged[group_id] = str(exc)
            if not self.read_only and exc.content:
                remove()
            return
        if state is not None:
            self.states[group_id] = state

    def discard(self, group_id: str, remove: Callable[[], object]) -> None:
        """A snapshot this projection cannot use: deleted (unless read-only) and listed."""
        if not self.read_only:
            remove()
        self.discarded.append(group_id)

    def position(self, group_id: str) -> Position:
        """Where ``group_id`` stands (``Position.none`` if it holds nothing of it)."""
        state = self.states.get(group_id)
        if state is None:
            return Position.none(group_id)
        return Position(group_id=group_id, generation=state.generation, seq=state.seq)

    def names(self) -> list[str]:
        """The groups held, sorted."""
        return sorted(self.states)

    def applied(self, group_id: str, state: S, last_seq: int, generation: str) -> None:
        """``state`` of ``group_id`` now stands at ``last_seq`` of ``generation``: changed."""
        state.seq, state.generation = last_seq, generation
        self.dirty.add(group_id)

    def changed(self) -> list[tuple[str, S]]:
        """The groups changed since their last save, sorted, with their states."""
        return [(g, self.states[g]) for g in sorted(self.dirty) if g in self.states]

    def saved(self, group_id: str) -> None:
        """``group_id``'s snapshot is written: unchanged until it changes again."""
        self.dirty.discard(group_id)

    def drop(self, group_id: str) -> None:
        """Forget ``group_id`` (purged)."""
        self.states.pop(group_id, None)
        self.dirty.discard(group_id)
