"""The single writer of a group stream: seq assignment, rotation, durability, group commit.

Contract:

* One writer per group, in any process: an advisory ``flock`` on ``.writer.lock``. A second
  writer fails at once with ``StreamLockedError``.
* ``append`` stamps ``seq`` (contiguous from the stream's last line + 1), ``ts`` and ``gen`` on
  each event, writes the lines with one ``os.write`` loop, and returns the stamped events.
* Durability by ``fsync`` policy: ``always`` returns only after the lines are on disk; many
  threads appending at once share one ``fsync`` (group commit: the first waiter syncs
  everything written so far, the others wait for it). ``batch`` syncs in the background every
  ``batch_interval_s``; ``off`` syncs only on rotation and close.
* Rotation before a chunk: a new segment if the current one holds events and the chunk would
  pass ``max_events`` or (when > 0) ``max_bytes``. A chunk is never split.
* On open, a torn final line (no newline, or not JSON) is cut off and its bytes are kept in
  ``.quarantine/``: it is a write that was never acknowledged.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import msgspec

from lcg import telemetry
from lcg.errors import GenerationError, StreamError, StreamLockedError
from lcg.events._fs import fsync_dir, sweep_temps
from lcg.events.codec import decode_line, encode_events
from lcg.events.generation import mint_generation, read_generation, write_generation
from lcg.events.groups import encode_group, guard_case_collision
from lcg.events.layout import LOCK_FILE, QUARANTINE_DIR, segment_name
from lcg.events.model import Event
from lcg.events.reader import generation_from_lines
from lcg.events.segments import list_segments, read_tail

__all__ = ["FsyncPolicy", "StreamWriter", "utc_now"]

FsyncPolicy = Literal["always", "batch", "off"]


def utc_now() -> str:
    """The current time as RFC 3339 UTC with microseconds (``…T12:00:00.000000Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class StreamWriter:
    """Appends events to one group's stream. Thread-safe; one instance per group and process."""

    def __init__(
        self,
        wal_root: Path,
        group_id: str,
        *,
        fsync: FsyncPolicy = "always",
        max_events_per_file: int = 10_000,
        max_bytes_per_file: int = 5 * 1024 * 1024,
        batch_interval_s: float = 0.05,
    ) -> None:
        self.wal_root = wal_root
        self.group_id = group_id
        self.fsync_policy: FsyncPolicy = fsync
        self.max_events = max(1, max_events_per_file)
        self.max_bytes = max(0, max_bytes_per_file)
        self.batch_interval_s = batch_interval_s
        dir_name = encode_group(group_id)
        self.group_dir = wal_root / dir_name

        wal_root.mkdir(parents=True, exist_ok=True)
        guard_case_collision(wal_root, dir_name)
        self.group_dir.mkdir(exist_ok=True)
        self._lock_fd = self._acquire_lock()
        try:
            sweep_temps(self.group_dir)
            self._recover_tail()
            self.generation = self._resolve_generation()
            self._open_last_segment()
        except BaseException:
            os.close(self._lock_fd)
            raise

        self._lock = threading.Lock()
        self._sync_cond = threading.Condition(threading.Lock())
        self._ticket = 0
        self._synced = 0
        self._syncing = False
        self._broken: str | None = None
        self._closed = False
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        if self.fsync_policy == "batch":
            self._flusher = threading.Thread(
                target=self._flush_loop, name=f"lcg-wal-flush-{group_id}", daemon=True
            )
            self._flusher.start()

    # ---- opening -------------------------------------------------------------------------

    def _acquire_lock(self) -> int:
        fd = os.open(self.group_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StreamLockedError(
                    f"group {self.group_id!r} already has a writer "
                    f"(lock {self.group_dir / LOCK_FILE} is held); stop the other lcg process "
                    "or talk to it through its socket"
                ) from None
            raise StreamError(f"cannot lock {self.group_dir / LOCK_FILE}: {exc}") from exc
        return fd

    def _recover_tail(self) -> None:
        """Cut a torn or undecodable final line off the last segment, keeping its bytes."""
        segments = list_segments(self.group_dir)
        if not segments:
            return
        path = segments[-1].path
        while True:
            tail = read_tail(path)
            cut = tail.good_end
            if tail.last_line is not None and decode_line(tail.last_line).problem == "unparseable":
                # A complete but undecodable last line is a torn write too.
                cut = tail.good_end - len(tail.last_line) - 1
            if cut >= tail.size:
                return
            self._quarantine(path, cut)

    def _quarantine(self, path: Path, offset: int) -> None:
        qdir = self.group_dir / QUARANTINE_DIR
        qdir.mkdir(exist_ok=True)
        with open(path, "r+b") as fh:
            fh.seek(offset)
            torn = fh.read()
            target = qdir / f"{path.name}.{offset}.torn"
            with open(target, "wb") as out:
                out.write(torn)
                out.flush()
                os.fsync(out.fileno())
            fh.truncate(offset)
            fh.flush()
            os.fsync(fh.fileno())
        fsync_dir(qdir)

    def _resolve_generation(self) -> str:
        recorded = read_generation(self.group_dir)
        from_lines = generation_from_lines(self.group_dir)
        if recorded is None:
            if from_lines is not None:
                # The dot-file was dropped (a glob copy) but every line carries the generation.
                write_generation(self.group_dir, from_lines)
                return from_lines
            return mint_generation(self.group_dir)
        last_gen = self._last_line_generation()
        for seen in (from_lines, last_gen):
            if seen is not None and seen != recorded:
                raise GenerationError(
                    f"group {self.group_id!r}: lines carry generation {seen!r} but "
                    f"{self.group_dir}/.wal-generation.json says {recorded!r}; the stream mixes "
                    "two generations - restore it from its publication or dump it to a new stream"
                )
        return recorded

    def _last_line_generation(self) -> str | None:
        for seg in reversed(list_segments(self.group_dir)):
            tail = read_tail(seg.path)
            if tail.last_line is not None:
                decoded = decode_line(tail.last_line)
                return decoded.event.gen if decoded.event is not None else None
        return None

    def _open_last_segment(self) -> None:
        self._fd: int | None = None
        self._file_first_seq = 0
        self._file_events = 0
        self._file_bytes = 0
        self.next_seq = 0
        segments = list_segments(self.group_dir)
        for seg in reversed(segments):
            tail = read_tail(seg.path)
            if tail.last_line is not None:
                seq = decode_line(tail.last_line).seq
                if seq is not None:
                    self.next_seq = seq + 1
                    break
        if segments:
            last = segments[-1]
            fd = os.open(last.path, os.O_WRONLY | os.O_APPEND)
            with open(last.path, "rb") as fh:
                data = fh.read()
            self._fd = fd
            self._file_first_seq = last.first_seq
            self._file_events = data.count(b"\n")
            self._file_bytes = len(data)

    # ---- appending -----------------------------------------------------------------------

    def append(self, events: list[Event]) -> list[Event]:
        """Append ``events`` as one chunk; return them stamped. Durable per the fsync policy."""
        if not events:
            return []
        with self._lock:
            if self._closed:
                raise StreamError(f"the writer of group {self.group_id!r} is closed")
            if self._broken is not None:
                raise StreamError(
                    f"the writer of group {self.group_id!r} failed earlier ({self._broken}); "
                    "restart lcg to re-open the stream"
                )
            ts = utc_now()
            stamped: list[Event] = []
            seq = self.next_seq
            for event in events:
                if event.group_id != self.group_id:
                    raise StreamError(
                        f"event for group {event.group_id!r} "
                        f"sent to the writer of {self.group_id!r}"
                    )
                stamped.append(msgspec.structs.replace(event, seq=seq, ts=ts, gen=self.generation))
                seq += 1
            data = encode_events(stamped)
            self._maybe_rotate(len(stamped), len(data))
            self._write_all(data)
            self._file_events += len(stamped)
            self._file_bytes += len(data)
            self.next_seq = seq
            self._ticket += 1
            ticket = self._ticket
        if self.fsync_policy == "always":
            self._wait_durable(ticket)
        return stamped

    def _write_all(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        written = 0
        try:
            while written < len(view):
                written += os.write(self._fd, view[written:])
        except OSError as exc:
            # Take back a partial line so the file ends on a whole line again.
            try:
                os.ftruncate(self._fd, self._file_bytes)
            except OSError:
                self._broken = f"write failed and could not be undone: {exc}"
            raise StreamError(f"cannot append to group {self.group_id!r}: {exc}") from exc

    def _maybe_rotate(self, n_events: int, n_bytes: int) -> None:
        if self._fd is not None:
            over_events = self._file_events > 0 and self._file_events + n_events > self.max_events
            over_bytes = (
                self.max_bytes > 0
                and self._file_bytes > 0
                and self._file_bytes + n_bytes > self.max_bytes
            )
            if not (over_events or over_bytes):
                return
            closed_bytes, closed_events, from_seq = (
                self._file_bytes,
                self._file_events,
                self._file_first_seq,
            )
            self._sync_now(self._fd)
            os.close(self._fd)
            self._fd = None
            with self._sync_cond:
                self._synced = max(self._synced, self._ticket)
                self._sync_cond.notify_all()
            telemetry.emit(
                telemetry.WalRotated(
                    from_file_seq=from_seq,
                    to_file_seq=self.next_seq,
                    closed_bytes=closed_bytes,
                    closed_events=closed_events,
                )
            )
        path = self.group_dir / segment_name(self.next_seq)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._file_first_seq = self.next_seq
        self._file_events = 0
        self._file_bytes = os.fstat(self._fd).st_size
        if self.fsync_policy != "off":
            fsync_dir(self.group_dir)

    def _sync_now(self, fd: int) -> None:
        if self.fsync_policy == "off":
            return
        try:
            os.fsync(fd)
        except OSError as exc:
            # After a failed fsync the page cache cannot be trusted: stop writing.
            self._broken = f"fsync failed: {exc}"
            raise StreamError(f"cannot make group {self.group_id!r} durable: {exc}") from exc

    def _wait_durable(self, ticket: int) -> None:
        while True:
            with self._sync_cond:
                while self._synced < ticket and self._syncing:
                    self._sync_cond.wait()
                if self._synced >= ticket:
                    return
                self._syncing = True
            target = 0
            try:
                with self._lock:
                    target = self._ticket
                    fd = os.dup(self._fd) if self._fd is not None else None
                if fd is not None:
                    try:
                        self._sync_now(fd)
                    finally:
                        os.close(fd)
            finally:
                with self._sync_cond:
                    self._syncing = False
                    if self._broken is None:
                        self._synced = max(self._synced, target)
                    self._sync_cond.notify_all()
            if self._broken is not None:
                raise StreamError(f"group {self.group_id!r} is not durable: {self._broken}")

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.batch_interval_s):
            with self._sync_cond:
                pending = self._synced < self._ticket
            if pending:
                try:
                    self._wait_durable(self._ticket)
                except StreamError:
                    return

    def sync(self) -> None:
        """Make everything appended so far durable, whatever the policy."""
        with self._lock:
            fd = self._fd
            target = self._ticket
            if fd is not None:
                os.fsync(fd)
        with self._sync_cond:
            self._synced = max(self._synced, target)
            self._sync_cond.notify_all()

    def close_segment(self) -> bool:
        """Close the current segment (the next append starts a new one); True if one was open."""
        with self._lock:
            if self._fd is None:
                return False
            if self._file_events == 0:
                return False
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
            # An empty new segment would reuse this name; mark the position for the next open.
            self._file_events = 0
            self._file_bytes = 0
            return True

    def close(self) -> None:
        """Sync and release the stream; the writer cannot be used afterwards."""
        self._stop.set()
        if self._flusher is not None:
            self._flusher.join(timeout=5)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._fd is not None:
                if self._broken is None:
                    try:
                        os.fsync(self._fd)
                    except OSError:
                        pass
                os.close(self._fd)
                self._fd = None
        os.close(self._lock_fd)

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
