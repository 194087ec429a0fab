"""Positions in a stream: ``(group, generation, seq)`` values.

A seq means something only within its generation: after a reset (a new generation) seq 5 is
another event than the old seq 5. So a ``Position`` is compared through its methods, which
refuse (``GenerationError``) to weigh seqs of two generations, as litestream's ``ComparePos``
does; a question that is *about* the generation (was the stream reset since? is this the next
event?) is asked as such and answered ``True``/``False``. A position that holds nothing
(``seq`` ``None``) stands before every seq of any generation.
"""

from __future__ import annotations

import msgspec

from lcg.errors import GenerationError

__all__ = ["Position"]


class Position(msgspec.Struct, frozen=True, kw_only=True):
    """A place in one group's stream. ``seq`` is the last applied line (``None`` = none)."""

    group_id: str
    generation: str | None
    seq: int | None

    @classmethod
    def none(cls, group_id: str) -> Position:
        """The position of a group of which nothing is applied."""
        return cls(group_id=group_id, generation=None, seq=None)

    @property
    def empty(self) -> bool:
        """True if nothing of the group is applied."""
        return self.seq is None

    def _check(self, other: Position) -> None:
        if self.group_id != other.group_id:
            raise GenerationError(
                f"cannot compare positions of groups {self.group_id!r} and {other.group_id!r}"
            )
        if self.generation != other.generation:
            raise GenerationError(
                f"cannot compare positions of generations {self.generation!r} and "
                f"{other.generation!r} in group {self.group_id!r}"
            )

    def behind(self, other: Position) -> bool:
        """True if ``other`` holds lines this position has not applied (same generation only)."""
        self._check(other)
        mine = -1 if self.seq is None else self.seq
        theirs = -1 if other.seq is None else other.seq
        return mine < theirs

    def next_seq(self, generation: str | None) -> int:
        """The first seq of ``generation`` not applied here (0 when nothing is).

        ``GenerationError`` if this position holds seqs of another generation: they say
        nothing of where ``generation``'s stream stands.
        """
        if self.seq is None:
            return 0
        if self.generation != generation:
            raise GenerationError(
                f"group {self.group_id!r}: a position in generation {self.generation!r} "
                f"(seq {self.seq}) says nothing of generation {generation!r}"
            )
        return self.seq + 1

    def stale_generation(self, generation: str | None) -> str | None:
        """The generation this position was recorded in, if not ``generation`` (the stream
        was reset since: what it holds must be purged and replayed); else ``None``."""
        if self.generation is not None and self.generation != generation:
            return self.generation
        return None

    def continues(self, seq: int, generation: str) -> bool:
        """True if ``seq`` of ``generation`` is the very next event to apply here (a position
        of no or the same generation, at ``seq - 1``)."""
        if self.generation not in (None, generation):
            return False
        return (-1 if self.seq is None else self.seq) == seq - 1
