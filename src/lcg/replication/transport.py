"""The replication transport seam: what a publisher delivers and what a follower reads.

A transport's engine is a sibling module implementing two small protocols
(``replication/git.py`` is the first; each also has a registry entry, ``replication.kinds
.Transport``, listed in ``replication.targets.TRANSPORTS``, and its run of the contract suite,
tests/integration/test_transport_contract.py):

* ``Publisher.deliver(staged, reset=..., message=...)`` carries one staged group
  (``replication.staging``: the stream's complete, line-checked lines, its generation, its
  sidecars) to the target, whole or not at all, refusing a target of another generation
  unless ``reset``; ``PublishResult`` says what it did.
* ``Source`` is the follower's side: the groups a publication holds, each group's current
  generation, a ``GroupCursor`` that yields the group's *verified* events (checksum, decode,
  generation, seq = previous + 1; ``TailDefect`` at the first defect, after every event
  verified before it) from the start or from marks saved by a previous run, the publication's
  last (seq, ts) for the lag, and ``changes``, which wakes the follower when new lines may
  have landed.

Every rule of what is applied, reset or stopped is the follower's (``replication.follow``),
the same for every transport. A source reads its publication as untrusted input (ADR 0154):
bounded, never through a link, a defect stopping one group only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

import msgspec

from lcg.events import Event
from lcg.replication.scan import PublicationScan
from lcg.replication.staging import StagedGroup

__all__ = [
    "GroupCursor",
    "PublishResult",
    "Publisher",
    "Puller",
    "Source",
    "SourceTail",
]


class PublishResult(msgspec.Struct, kw_only=True):
    """What one ``lcg publish`` did."""

    group_id: str
    #: The target (git: the working tree's top directory).
    repo: str
    #: Where the group lives in the target (git: its directory in the working tree).
    path: str
    generation: str
    previous_generation: str | None = None
    reset: bool = False
    files_copied: int = 0
    bytes_copied: int = 0
    max_seq: int | None = None
    committed: bool = False
    #: The target's name for this delivery (git: the commit), ``None`` if nothing changed.
    commit: str | None = None


class Publisher(Protocol):
    """Delivers staged groups to one target."""

    @property
    def label(self) -> str:
        """The target, as messages and results name it."""
        ...

    def deliver(
        self, staged: StagedGroup, *, reset: bool = False, message: str | None = None
    ) -> PublishResult:
        """Carry ``staged`` to the target; refuse another generation there unless ``reset``."""
        ...


class SourceTail(msgspec.Struct, frozen=True):
    """The newest line a publication holds for a group: its seq and ``ts`` (for the lag)."""

    seq: int | None = None
    ts: str | None = None


class GroupCursor(Protocol):
    """How far one group of a publication has been verified, and the reader extending it."""

    group_id: str
    #: The seq the next verified line must carry.
    next_seq: int

    @property
    def generation(self) -> str | None:
        """The generation every line must carry (``None`` until the stream names one)."""
        ...

    @generation.setter
    def generation(self, value: str | None) -> None: ...

    def read(self, *, yield_after: int | None) -> Iterator[Event]:
        """Verify what landed since the last read; yield the verified events past ``yield_after``.

        ``yield_after=None`` verifies only. Raises ``TailDefect`` at the first defect, after
        yielding every event verified before it.
        """
        ...


class Source(Protocol):
    """A publication a follower reads: its groups, their generations, their verified lines."""

    @property
    def label(self) -> str:
        """The publication, as statuses and messages name it."""
        ...

    def list_groups(self) -> PublicationScan:
        """The groups the publication holds now (and the entries that are no group)."""
        ...

    def generation(self, group_id: str) -> str | None:
        """The group's current generation (``None``: nothing published); defects raise."""
        ...

    def cursor(self, group_id: str, generation: str | None = None) -> GroupCursor:
        """A cursor at the start of the group's stream (lines must carry ``generation``)."""
        ...

    def resume(self, group_id: str, generation: str, state_dir: Path) -> GroupCursor:
        """A cursor past what a previous run verified and saved under ``state_dir``, re-checked.

        A fresh cursor when nothing usable was saved for ``generation``.
        """
        ...

    def save(self, cursor: GroupCursor, state_dir: Path) -> None:
        """Keep what ``cursor`` verified under ``state_dir`` for the next run (best effort)."""
        ...

    def tail(self, group_id: str) -> SourceTail:
        """The publication's newest line for the group; never raises (unknown: empty)."""
        ...

    def changes(
        self,
        groups: Callable[[], Sequence[str]],
        stop: threading.Event,
        *,
        step_ms: int,
        rescan_ms: int,
    ) -> Iterator[None]:
        """Yield whenever new lines may have landed (and every ``rescan_ms``), until ``stop``."""
        ...


class Puller(Protocol):
    """Brings a publication's new lines within a source's reach in the background."""

    def start(self) -> None:
        """Start in a background thread."""
        ...

    def stop(self) -> None:
        """Stop (work under way may finish in the background)."""
        ...
