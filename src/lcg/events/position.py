"""Positions in a stream: ``(group, generation, seq)`` values."""

from __future__ import annotations

import msgspec

from lcg.errors import GenerationError

__all__ = ["Position"]


class Position(msgspec.Struct, frozen=True, kw_only=True):
    """A place in one group's stream. ``seq`` is the last applied line (``None`` = none)."""

    group_id: str
    generation: str | None
    seq: int | None

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
