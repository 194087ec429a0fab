"""The verifying tail-reader: read what was appended to a stream directory since the last read,
and verify it, without a lock (a replica reading a publication that ``git pull`` replaces).

``VerifiedTail`` remembers, per segment, how many bytes were verified and a BLAKE2b hash of
them. Each ``read``:

* checks every line past that point with the one line check (``linecheck.LineCheck``: checksum,
  decodes, checksum order, the stream's generation) and that its seq is the previous one + 1;
* re-hashes a verified prefix whenever the file's stat changed: a shrunk, vanished or
  rewritten prefix is a defect in the same generation (streams are append-only);
* reads complete lines only; a partial line is waited for, unless a later segment exists;
* reads the directory as untrusted input (``events.guarded``, ADR 0154): never through a
  symlink, regular files only, a segment no larger than ``ReadLimits.max_segment_bytes``, a
  line no longer than ``max_line_bytes``, in chunks, so neither ``/dev/zero``, a FIFO nor a
  huge file can stall the reader or exhaust its memory.

It stops with ``TailDefect`` at the first defect, after yielding every event verified before it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from lcg.errors import StreamError
from lcg.events.guarded import ReadLimits, check_real_dir, open_regular
from lcg.events.linecheck import LineCheck
from lcg.events.model import Event
from lcg.events.segments import list_segments

__all__ = ["FileMark", "TailDefect", "VerifiedTail", "prefix_hasher", "stat_key"]

_CHUNK = 1 << 20

#: ``(size, mtime_ns, inode)``: a change means the file must be re-hashed before trusting it.
StatKey = tuple[int, int, int]


class TailDefect(StreamError):
    """A stream read by ``VerifiedTail`` failed verification; the message says what to do."""


def stat_key(st: os.stat_result) -> StatKey:
    """What identifies one state of a file cheaply: size, mtime and inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def prefix_hasher(path: Path, length: int) -> hashlib.blake2b:
    """A BLAKE2b hasher fed the first ``length`` bytes of ``path`` (a regular file)."""
    with open_regular(path) as fh:
        return _hash_prefix(fh, length)


def _hash_prefix(fh: BinaryIO, length: int) -> hashlib.blake2b:
    h = hashlib.blake2b(digest_size=16)
    fh.seek(0)
    remaining = length
    while remaining:
        chunk = fh.read(min(_CHUNK, remaining))
        if not chunk:
            break
        h.update(chunk)
        remaining -= len(chunk)
    return h


class FileMark:
    """How much of one segment has been verified, and a hash of that prefix."""

    __slots__ = ("consumed", "hasher", "lines", "stat_key")

    def __init__(self) -> None:
        self.consumed = 0
        self.lines = 0
        self.hasher = hashlib.blake2b(digest_size=16)
        self.stat_key: StatKey = (0, 0, 0)


class VerifiedTail:
    """How far one group's stream directory has been verified, and the reader that extends it."""

    def __init__(
        self,
        group_id: str,
        group_dir: Path,
        generation: str | None = None,
        *,
        limits: ReadLimits | None = None,
    ) -> None:
        self.group_id = group_id
        self.group_dir = group_dir
        #: The bounds every file of the directory is read under.
        self.limits = limits or ReadLimits()
        #: The line check, carrying the stream's generation and whether checksums were seen.
        self.lines = LineCheck(generation)
        #: The seq the next line must carry.
        self.next_seq = 0
        self.files: dict[str, FileMark] = {}
        #: The ``ts`` of the last verified event.
        self.last_ts: str | None = None

    @property
    def generation(self) -> str | None:
        """The generation every line must carry (``None`` until the stream names one)."""
        return self.lines.generation

    @generation.setter
    def generation(self, value: str | None) -> None:
        self.lines.generation = value

    def _open(self, path: Path) -> BinaryIO:
        """``path`` opened as untrusted input (``UnsafeFileError`` for a link, FIFO, huge file)."""
        return open_regular(path, max_bytes=self.limits.max_segment_bytes)

    def restore(self, name: str, consumed: int, lines: int, digest: bytes) -> None:
        """Trust ``consumed`` bytes of segment ``name`` again, once they still hash to ``digest``.

        Raises ``FileNotFoundError`` if the segment is gone, ``TailDefect`` if it changed.
        """
        path = self.group_dir / name
        check_real_dir(self.group_dir)
        with self._open(path) as fh:
            st = os.fstat(fh.fileno())
            mark = FileMark()
            mark.hasher = self._check_prefix(fh, path, consumed, digest, st)
        mark.consumed, mark.lines = consumed, lines
        mark.stat_key = stat_key(st)
        self.files[name] = mark

    def read(self, *, yield_after: int | None) -> Iterator[Event]:
        """Verify the stream's unread bytes; yield the verified events past ``yield_after``.

        ``yield_after=None`` verifies only. Raises ``TailDefect`` at the first defect, after
        yielding every verified event before it.
        """
        # A symlinked directory would be listed and read wherever it points.
        check_real_dir(self.group_dir)
        segments = list_segments(self.group_dir)
        names = {s.path.name for s in segments}
        for name in self.files:
            if name not in names:
                raise TailDefect(
                    f"segment {name} of group {self.group_id!r} disappeared from the publication "
                    f"while its generation {self.generation} stayed the same; a stream is "
                    "append-only - the publisher must publish a reset as a new generation "
                    "(`lcg publish --reset`)"
                )
        for index, seg in enumerate(segments):
            name = seg.path.name
            mark = self.files.get(name)
            try:
                fh = self._open(seg.path)
            except FileNotFoundError:
                raise TailDefect(
                    f"segment {name} of group {self.group_id!r} vanished mid-read"
                ) from None
            with fh:
                # The descriptor's stat, not the path's: what is read is what was judged.
                st = os.fstat(fh.fileno())
                if mark is not None:
                    if stat_key(st) != mark.stat_key:
                        self._check_prefix(fh, seg.path, mark.consumed, mark.hasher.digest(), st)
                else:
                    # Registered before reading: a defect mid-file keeps what was verified.
                    mark = self.files[name] = FileMark()
                is_last = index == len(segments) - 1
                yield from self._read_new(fh, seg.path, mark, is_last, yield_after)
            mark.stat_key = stat_key(st)

    def _check_prefix(
        self, fh: BinaryIO, path: Path, consumed: int, expected: bytes, st: os.stat_result
    ) -> hashlib.blake2b:
        if st.st_size < consumed:
            raise TailDefect(
                f"segment {path.name} of group {self.group_id!r} shrank from {consumed} to "
                f"{st.st_size} bytes in the same generation (a seq regression); the publisher "
                "must publish a rewritten stream as a new generation (`lcg publish --reset`)"
            )
        hasher = _hash_prefix(fh, consumed)
        if hasher.digest() != expected:
            raise TailDefect(
                f"segment {path.name} of group {self.group_id!r} was rewritten in place: its "
                f"first {consumed} bytes changed while the generation stayed the same; refusing "
                "to guess - the publisher must publish a rewritten stream as a new generation "
                "(`lcg publish --reset`), or delete this replica's workspace state and follow "
                "again"
            )
        return hasher

    def _read_new(
        self, fh: BinaryIO, path: Path, mark: FileMark, is_last: bool, yield_after: int | None
    ) -> Iterator[Event]:
        """Verify the complete lines past ``mark``, a chunk at a time (memory: a line + a chunk)."""
        max_line = self.limits.max_line_bytes
        max_size = self.limits.max_segment_bytes
        fh.seek(mark.consumed)
        offset = mark.consumed
        pending = b""
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            offset += len(chunk)
            if offset > max_size:
                # It grew after it was opened: the limit holds for what is read, too.
                raise TailDefect(
                    f"segment {path.name} of group {self.group_id!r} grew past the "
                    f"{max_size:,} bytes a segment may hold while it was read; this group "
                    "stops (the others go on)"
                )
            data = pending + chunk if pending else chunk
            end = data.rfind(b"\n") + 1
            pos = 0
            while pos < end:
                nl = data.index(b"\n", pos)
                if nl + 1 - pos > max_line:
                    raise self._long_line(path, mark, max_line)
                line = data[pos : nl + 1]
                pos = nl + 1
                mark.lines += 1
                if line.strip():
                    event = self._check(f"{path.name}:{mark.lines}", line[:-1])
                    self.next_seq = event.seq + 1
                    self.last_ts = event.ts
                    mark.hasher.update(line)
                    mark.consumed += len(line)
                    if yield_after is not None and event.seq > yield_after:
                        yield event
                else:
                    mark.hasher.update(line)
                    mark.consumed += len(line)
            pending = data[end:]
            if len(pending) > max_line:
                raise self._long_line(path, mark, max_line)
        if pending and not is_last:
            raise TailDefect(
                f"segment {path.name} of group {self.group_id!r} ends in a partial line but is "
                "not the last segment (a copy or pull in progress?); waiting for the whole file"
            )

    def _long_line(self, path: Path, mark: FileMark, max_line: int) -> TailDefect:
        return TailDefect(
            f"line {mark.lines + 1} of segment {path.name} of group {self.group_id!r} is "
            f"longer than the {max_line:,} bytes a line may hold; it was not read further and "
            "this group stops (the others go on) - the publisher must republish the group, or "
            "`lcg follow --max-line-bytes` must allow such lines"
        )

    def _check(self, where: str, line: bytes) -> Event:
        """The line's event, if it passes the line check and carries the next seq."""
        checked = self.lines.check(line)
        event = checked.event
        if event is None:
            raise TailDefect(
                f"a line of group {self.group_id!r} in {where} cannot be applied "
                f"({checked.problem}: {checked.detail}); the replica stops rather than skip "
                "it - upgrade lcg if the publisher runs a newer version, else republish"
            )
        if checked.problem == "generation_mismatch":
            raise TailDefect(
                f"the publication of group {self.group_id!r} mixes generations: line seq "
                f"{event.seq} in {where} carries generation {event.gen!r}, the stream's is "
                f"{self.generation!r}; refusing it - the publisher must republish the whole "
                "directory (`lcg publish --reset` for a replaced stream)"
            )
        if event.seq != self.next_seq:
            kind = "gap" if event.seq > self.next_seq else "regression"
            raise TailDefect(
                f"seq {kind} in group {self.group_id!r}: {where} has seq {event.seq} where "
                f"{self.next_seq} was expected; the replica stops at seq "
                f"{self.next_seq - 1} rather than guess - the publisher must republish the "
                "whole stream directory"
            )
        return event
