"""A second replication transport, in memory and for the tests only (no tests here).

It shows what a transport is: this one module, written against ``lcg.replication.transport``
and nothing of git's. A ``MemoryLog`` is the "server": per group, a generation and the event
lines in order, as a line transport (JetStream) carries them. ``MemoryPublisher`` appends a
staged group's new lines (``StagedGroup.lines``); ``MemorySource`` is what a follower reads,
verifying every line as the directory source does (the one line check, the generation, seq =
previous + 1) and stopping at the first defect after yielding what came before it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lcg.events.codec import decode_line
from lcg.events.linecheck import LineCheck
from lcg.events.model import Event
from lcg.events.tail import TailDefect
from lcg.replication.scan import PublicationScan
from lcg.replication.staging import StagedGroup, refuse_other_generation
from lcg.replication.transport import GroupCursor, PublishResult, SourceTail


@dataclass
class _Stream:
    generation: str
    lines: list[bytes] = field(default_factory=list)


class MemoryLog:
    """The in-memory "server": one stream per group; a condition wakes waiting sources."""

    def __init__(self, name: str = "test") -> None:
        self.label = f"memory://{name}"
        self.streams: dict[str, _Stream] = {}
        self.changed = threading.Condition()
        #: Bumped on every delivery, so a waiter can tell a change from a timeout.
        self.version = 0

    def notify(self) -> None:
        """Wake every source waiting for new lines."""
        with self.changed:
            self.version += 1
            self.changed.notify_all()


class MemoryPublisher:
    """Appends staged groups' new lines to a ``MemoryLog`` (a ``Publisher``)."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log

    @property
    def label(self) -> str:
        """The log's name."""
        return self.log.label

    def deliver(
        self, staged: StagedGroup, *, reset: bool = False, message: str | None = None
    ) -> PublishResult:
        """Append what the log lacks; another generation only with ``reset`` (replacing it)."""
        group_id, generation = staged.group_id, staged.generation
        stream = self.log.streams.get(group_id)
        previous = stream.generation if stream is not None else None
        if previous is not None and previous != generation and not reset:
            raise refuse_other_generation(group_id, previous, generation)
        result = PublishResult(
            group_id=group_id,
            repo=self.label,
            path=f"{self.label}/{group_id}",
            generation=generation,
            previous_generation=previous,
            reset=previous is not None and previous != generation,
        )
        if stream is None or result.reset:
            stream = self.log.streams[group_id] = _Stream(generation)
        have = len(stream.lines) - 1  # seqs are 0-based and dense: the last one held
        new = [line.data for line in staged.lines(after=have)]
        stream.lines.extend(new)
        result.bytes_copied = sum(len(d) + 1 for d in new)
        result.max_seq = decode_line(stream.lines[-1]).seq if stream.lines else None
        if new or result.reset:
            result.committed = True
            result.commit = f"{generation}:{result.max_seq}"
            self.log.notify()
        return result


class MemoryCursor:
    """How far one group of the log was verified (a ``GroupCursor``)."""

    def __init__(self, log: MemoryLog, group_id: str, generation: str | None) -> None:
        self.log = log
        self.group_id = group_id
        self.lines = LineCheck(generation)
        self.next_seq = 0
        #: How many of the stream's lines were read (verified).
        self.consumed = 0

    @property
    def generation(self) -> str | None:
        """The generation every line must carry."""
        return self.lines.generation

    @generation.setter
    def generation(self, value: str | None) -> None:
        self.lines.generation = value

    def read(self, *, yield_after: int | None) -> Iterator[Event]:
        """Verify the lines past ``consumed``; yield the events past ``yield_after``."""
        stream = self.log.streams.get(self.group_id)
        if stream is None:
            return
        if len(stream.lines) < self.consumed:
            raise TailDefect(f"group {self.group_id!r}: the log went backwards")
        for line in stream.lines[self.consumed :]:
            checked = self.lines.check(line)
            event = checked.event
            if event is None:
                raise TailDefect(
                    f"a line of group {self.group_id!r} cannot be applied "
                    f"({checked.problem}: {checked.detail}); the replica stops rather than skip it"
                )
            if checked.problem == "generation_mismatch":
                raise TailDefect(f"group {self.group_id!r} mixes generations: {checked.detail}")
            if event.seq != self.next_seq:
                raise TailDefect(
                    f"seq gap in group {self.group_id!r}: seq {event.seq} where "
                    f"{self.next_seq} was expected"
                )
            self.consumed += 1
            self.next_seq = event.seq + 1
            if yield_after is not None and event.seq > yield_after:
                yield event


class MemorySource:
    """A ``MemoryLog`` read by a follower (a ``Source``)."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log
        #: What each replica (by its workspace) verified: (generation, lines, next seq).
        self.saved: dict[tuple[Path, str], tuple[str, int, int]] = {}

    @property
    def label(self) -> str:
        """The log's name."""
        return self.log.label

    def list_groups(self) -> PublicationScan:
        """Every group the log holds."""
        return PublicationScan(groups=sorted(self.log.streams))

    def generation(self, group_id: str) -> str | None:
        """The group's generation (``None``: never published)."""
        stream = self.log.streams.get(group_id)
        return stream.generation if stream is not None else None

    def cursor(self, group_id: str, generation: str | None = None) -> MemoryCursor:
        """A cursor at the start of the group."""
        return MemoryCursor(self.log, group_id, generation)

    def resume(self, group_id: str, generation: str, state_dir: Path) -> MemoryCursor:
        """A cursor where this replica's last run left it, if that was in ``generation``."""
        cursor = self.cursor(group_id)
        saved = self.saved.get((state_dir, group_id))
        if saved is not None and saved[0] == generation == self.generation(group_id):
            cursor.generation, cursor.consumed, cursor.next_seq = saved
        return cursor

    def save(self, cursor: GroupCursor, state_dir: Path) -> None:
        """Remember where ``cursor`` is, per replica workspace."""
        if isinstance(cursor, MemoryCursor) and cursor.generation is not None:
            key = (state_dir, cursor.group_id)
            self.saved[key] = (cursor.generation, cursor.consumed, cursor.next_seq)

    def tail(self, group_id: str) -> SourceTail:
        """The seq and ``ts`` of the group's last line."""
        stream = self.log.streams.get(group_id)
        if stream is None or not stream.lines:
            return SourceTail()
        decoded = decode_line(stream.lines[-1])
        return SourceTail(decoded.seq, decoded.event.ts if decoded.event is not None else None)

    def changes(
        self,
        groups: Callable[[], Sequence[str]],
        stop: threading.Event,
        *,
        step_ms: int,
        rescan_ms: int,
    ) -> Iterator[None]:
        """Yield after each delivery (or every ``rescan_ms``) until ``stop``."""
        seen = self.log.version
        while not stop.is_set():
            with self.log.changed:
                self.log.changed.wait_for(
                    lambda seen=seen: self.log.version != seen or stop.is_set(),
                    timeout=rescan_ms / 1000,
                )
                seen = self.log.version
            if stop.is_set():
                return
            yield
