"""One group's failure in a read over many groups is that group's, not the read's (ADR 0151).

A search over several groups (or every group) asks each projection for the groups' hits in
one call. When such a call raises, ``GroupFailures.isolate`` asks again group by group: the
groups that raise again are recorded as failed (with why, and the remedy), and the call is
made once more over the groups that answered, so their results are exactly what they would
have been without the broken group. Once failed, a group takes no further part in the same
read. Only when every group asked failed is the error the read's own (``raise_if_all``): an
empty answer would then read as "no match" to a client that does not look at the failures.

A read also records a *leg* that could not run at all (the vector legs while the embedder is
away, ADR 0171): the read answers from the other legs and says which one is missing.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import msgspec

__all__ = ["GroupFailure", "GroupFailures", "MissingLeg"]

R = TypeVar("R")


class GroupFailure(msgspec.Struct, frozen=True, kw_only=True):
    """A group left out of a read's answer because its part of the read failed."""

    group_id: str
    reason: str


class MissingLeg(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A leg of a search that did not run (``vector``: no query vector could be made), or
    ran over part of what it searches: ``group_ids`` names the groups whose vectors are still
    being made (ADR 0201; their passages without one are judged by their words)."""

    leg: str
    reason: str
    group_ids: list[str] = []


def _reason(group_id: str, exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    g = shlex.quote(group_id)
    return (
        f"this group's part of the search failed ({type(exc).__name__}: {text}); its "
        f"projections may be damaged: check with `lcg verify --group {g}`, rebuild with "
        f"`lcg replay --group {g} --force-clear`"
    )


class GroupFailures:
    """The groups whose part of one read failed; later steps of the read skip them."""

    def __init__(self) -> None:
        self._failed: dict[str, str] = {}
        self._errors: dict[str, Exception] = {}
        self._legs: dict[str, str] = {}
        self._partial: dict[str, dict[str, int]] = {}

    def skip_leg(self, leg: str, exc: Exception) -> None:
        """Record that the read's ``leg`` did not run, and why (the first reason is kept)."""
        self._legs.setdefault(leg, str(exc) or type(exc).__name__)

    def incomplete_leg(self, leg: str, group_id: str, waiting: int) -> None:
        """Record that ``leg`` ran without ``waiting`` vectors of ``group_id`` (being made)."""
        self._partial.setdefault(leg, {})[group_id] = waiting

    def missing_legs(self) -> list[MissingLeg]:
        """The legs that did not run, then those that ran over part of their groups, sorted
        by name."""
        out = [MissingLeg(leg=k, reason=r) for k, r in sorted(self._legs.items())]
        for leg, groups in sorted(self._partial.items()):
            if leg in self._legs:
                continue  # it did not run at all: that says more
            waiting = sum(groups.values())
            out.append(
                MissingLeg(
                    leg=leg,
                    reason=f"{waiting} vectors of these groups are still being made; their "
                    "passages are judged by their words until then",
                    group_ids=sorted(groups),
                )
            )
        return out

    def __contains__(self, group_id: object) -> bool:
        return group_id in self._failed

    def __bool__(self) -> bool:
        return bool(self._failed)

    def record(self, group_id: str, exc: Exception) -> None:
        """Record ``group_id`` as failed by ``exc`` (the first failure of a group is kept)."""
        if group_id not in self._failed:
            self._failed[group_id] = _reason(group_id, exc)
            self._errors[group_id] = exc

    def raise_if_all(self, groups: Iterable[str]) -> None:
        """Raise the first group's error when every one of ``groups`` (at least one) failed."""
        asked = sorted(set(groups))
        if asked and all(g in self._failed for g in asked):
            raise self._errors[asked[0]]

    def listing(self) -> list[GroupFailure]:
        """The failed groups, sorted by group id."""
        return [GroupFailure(group_id=g, reason=r) for g, r in sorted(self._failed.items())]

    def live(self, groups: Iterable[str]) -> list[str]:
        """``groups`` without the failed ones, in order."""
        return [g for g in groups if g not in self._failed]

    def isolate(
        self,
        groups: Sequence[str] | None,
        every: Callable[[], Sequence[str]],
        call: Callable[[list[str] | None], R],
    ) -> R:
        """``call(groups)``; if it raises, the same over the groups that answer alone.

        ``groups`` ``None`` means every group (``every()`` lists them when they must be
        named). Groups already failed are left out. When no group answers alone, the first
        error is raised: the read has nothing to answer with.
        """
        if groups is None and not self._failed:
            asked: list[str] | None = None
        else:
            asked = self.live(every() if groups is None else groups)
        try:
            return call(asked)
        except Exception as exc:  # noqa: BLE001 - one group's damage must not fail the read
            first = exc
        healthy: list[str] = []
        for g in self.live(every() if asked is None else asked):
            try:
                call([g])
            except Exception as exc:  # noqa: BLE001 - recorded and reported in the answer
                self.record(g, exc)
            else:
                healthy.append(g)
        if not healthy:
            raise first
        return call(healthy)

    def each(self, group_id: str, call: Callable[[], R]) -> R | None:
        """``call()`` for one group's step; ``None`` if the group failed (now or before)."""
        if group_id in self._failed:
            return None
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - recorded and reported in the answer
            self.record(group_id, exc)
            return None
