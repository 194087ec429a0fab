"""The single writer of a group stream: seq assignment, rotation, durability, group commit.

Contract:

* One writer per group, in any process: an advisory ``flock`` on ``.writer.lock``. A second
  writer fails at once with ``StreamLockedError``.
* ``append`` stamps ``seq`` (contiguous from the stream's last line + 1), ``ts`` and ``gen`` on
  each event, writes the lines with one ``os.write`` loop, and returns the stamped events.
* Durability by ``fsync`` policy: ``always`` returns only after the lines are on disk; many
  threads appending at once share one ``write`` and one ``fsync`` (group commit: appenders
  queue their encoded lines; one of them, the leader, writes everything queued so far, syncs
  it, and wakes the others). ``batch`` writes at once and syncs in the background every
  ``batch_interval_s``; ``off`` syncs only on rotation and close. Under every policy an
  append has reached the OS when it returns, so a killed process loses nothing acknowledged.
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
import time
from pathlib import Path
from typing import Literal

import msgspec

from lcg import telemetry, timestamps
from lcg.errors import StreamError, StreamLockedError
from lcg.events.codec import admit, decode_line
from lcg.events.files import (
    DIR_MODE,
    FILE_MODE,
    describe_os_error,
    fsync_dir,
    private_dir,
    probe_write,
    sweep_temps,
)
from lcg.events.groups import (
    check_group_dir,
    check_wal_root,
    encode_group,
    guard_case_collision,
)
from lcg.events.layout import LOCK_FILE, segment_name
from lcg.events.model import Event
from lcg.events.opening import recover_tail, resolve_generation
from lcg.events.reference_files import reference_stream
from lcg.events.segments import list_segments, read_tail

__all__ = ["FsyncPolicy", "StreamWriter"]

FsyncPolicy = Literal["always", "batch", "off"]

#: How many back-to-back group commits one leader runs before handing over (bounds its wait).
_MAX_LEADER_ROUNDS = 8
#: The longest a group-commit leader waits for other appenders to join its fsync.
_MAX_COMMIT_DELAY_S = 0.010


class _Waiter:
    """An appender blocked on a group commit; the leader releases its ``gate``."""

    __slots__ = ("error", "gate", "lead", "ticket")

    def __init__(self, ticket: int) -> None:
        self.ticket = ticket
        self.gate = threading.Lock()
        self.gate.acquire()
        self.error: str | None = None
        #: Set when the leader hands leadership to this waiter instead of covering it.
        self.lead = False


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

        check_wal_root(wal_root)
        if not wal_root.is_dir():
            private_dir(wal_root)
        guard_case_collision(wal_root, dir_name)
        check_group_dir(self.group_dir)
        found = reference_stream(self.group_dir, group_id)
        if found is not None and not list_segments(self.group_dir):
            # Another writer's stream: a seq 0 of ours beside it would fork it (ADR 0212).
            raise StreamError(f"writes to group {group_id!r} are refused: {found.note}")
        if not self.group_dir.is_dir():
            self.group_dir.mkdir(mode=DIR_MODE, exist_ok=True)
            if fsync != "off":
                fsync_dir(wal_root)
        self._lock_fd = self._acquire_lock()
        try:
            sweep_temps(self.group_dir)
            recover_tail(self.group_dir)
            self.generation = resolve_generation(self.group_dir, group_id)
            self._open_last_segment()
        except BaseException:
            os.close(self._lock_fd)
            raise

        # Lock order: ``_lock`` (seqs, the queue, durability bookkeeping) before ``_io_lock``
        # (the open file, held by whoever writes or syncs it).
        self._lock = threading.Lock()
        self._io_lock = threading.Lock()
        # Every append takes a ticket; ``_synced`` is the highest ticket known to be on disk.
        self._ticket = 0
        self._synced = 0
        # Group commit (``always``): chunks queued for the leader, the appenders waiting for it,
        # and how many chunks its last round held (it waits briefly for as many again).
        self._queue: list[tuple[int, int, int, bytes]] = []
        self._waiters: list[_Waiter] = []
        self._leading = False
        self._last_round = 1
        self._commit_delay_s = 0.0
        self._gather_cond = threading.Condition(self._lock)
        self._gathering = False
        self._broken: str | None = None
        #: Why the last write failed (``disk full writing <path>``); cleared by the next write
        #: that succeeds. A failed write that was undone leaves the writer usable.
        self.fault: str | None = None
        self._closed = False
        self._stop = threading.Event()
        self._syncer: threading.Thread | None = None
        if self.fsync_policy == "batch":
            self._syncer = threading.Thread(
                target=self._batch_loop, name=f"lcg-wal-sync-{group_id}", daemon=True
            )
            self._syncer.start()

    # ---- opening -------------------------------------------------------------------------

    def _acquire_lock(self) -> int:
        fd = os.open(self.group_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, FILE_MODE)
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
            self._check_usable()
            first = self.next_seq
            # Only lines that decode are written, and the events returned are those lines
            # decoded: a replay applies exactly what the live apply did (ADR 0150).
            data, stamped = admit(self._stamp(events))
            if self.fsync_policy != "always":
                with self._io_lock:
                    self._write_chunk(first, len(stamped), data)
                self.fault = None
                self.next_seq = first + len(stamped)
                self._ticket += 1
                return stamped
            self._ticket += 1
            ticket = self._ticket
            self._queue.append((ticket, first, len(stamped), data))
            self.next_seq = first + len(stamped)
            waiter = self._enlist(ticket)
            if self._gathering and len(self._queue) >= self._last_round:
                self._gather_cond.notify()
        self._await(waiter, ticket)
        return stamped

    def _stamp(self, events: list[Event]) -> list[Event]:
        ts = timestamps.now()
        seq = self.next_seq
        stamped: list[Event] = []
        for event in events:
            if event.group_id != self.group_id:
                raise StreamError(
                    f"event for group {event.group_id!r} sent to the writer of {self.group_id!r}"
                )
            stamped.append(msgspec.structs.replace(event, seq=seq, ts=ts, gen=self.generation))
            seq += 1
        return stamped

    def _check_usable(self) -> None:
        if self._closed:
            raise StreamError(f"the writer of group {self.group_id!r} is closed")
        if self._broken is not None:
            raise StreamError(
                f"the writer of group {self.group_id!r} failed earlier ({self._broken}); "
                "restart lcg to re-open the stream"
            )

    # ---- group commit --------------------------------------------------------------------
    #
    # An appender queues its encoded chunk. If no commit is in progress it becomes the leader:
    # it writes every queued chunk with one write per chunk, syncs once, and wakes the
    # appenders it covered, each through its own lock (no herd on a shared one). While more
    # chunks arrived during its fsync it runs another round; after _MAX_LEADER_ROUNDS it hands
    # leadership to the oldest waiter, so its own latency stays bounded.

    def _enlist(self, ticket: int) -> _Waiter | None:
        """Under ``_lock``: ``None`` if the caller leads, else the waiter it blocks on."""
        if not self._leading:
            self._leading = True
            return None
        waiter = _Waiter(ticket)
        self._waiters.append(waiter)
        return waiter

    def _await(self, waiter: _Waiter | None, ticket: int) -> None:
        if waiter is not None:
            waiter.gate.acquire()
            if waiter.error is not None:
                raise StreamError(f"group {self.group_id!r}: {waiter.error}")
            if not waiter.lead:
                return
        self._lead(ticket)

    def _gather(self) -> None:
        """Under ``_lock``: wait, at most about one fsync's time, for last round's company."""
        if len(self._queue) >= self._last_round or self._commit_delay_s <= 0:
            return
        deadline = time.monotonic() + self._commit_delay_s
        self._gathering = True
        try:
            while len(self._queue) < self._last_round:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._gather_cond.wait(remaining)
        finally:
            self._gathering = False

    def _lead(self, own: int) -> None:
        """Run group commits until nothing is queued (or hand over); raise if ``own`` failed."""
        rounds = 0
        own_error: str | None = None
        while True:
            with self._lock:
                self._gather()
                batch, self._queue = self._queue, []
                target = self._ticket
            started = time.monotonic()
            written, failure = self._commit(batch)
            rounds += 1
            handoff: _Waiter | None = None
            with self._lock:
                if failure is None:
                    ok_below = target + 1
                    self._last_round = max(1, len(batch))
                    self._commit_delay_s = min(_MAX_COMMIT_DELAY_S, time.monotonic() - started)
                elif self._broken is None:
                    # The failed chunk was taken back, so the file ends on a whole line: the
                    # chunks before it are durable, it and every later one (queued meanwhile,
                    # with higher seqs) are refused, and their seqs are handed out again.
                    ok_below = batch[written][0]
                    self.next_seq = batch[written][1]
                    self._queue = []
                else:
                    ok_below = 0
                error = None if failure is None else str(failure)
                self._synced = max(self._synced, ok_below - 1)
                covered = [w for w in self._waiters if w.ticket <= target or failure is not None]
                self._waiters = [w for w in self._waiters if w not in covered]
                again = failure is None and bool(self._queue)
                if again and rounds >= _MAX_LEADER_ROUNDS and self._waiters:
                    handoff = self._waiters.pop(0)
                    handoff.lead = True
                    again = False
                elif not again:
                    self._leading = False
            if failure is None:
                self.fault = None
            for waiter in covered:
                waiter.error = None if waiter.ticket < ok_below else error
                waiter.gate.release()
            if handoff is not None:
                handoff.gate.release()
            if failure is not None and own >= ok_below:
                own_error = error
            if not again:
                break
        if own_error is not None:
            raise StreamError(f"group {self.group_id!r}: {own_error}")

    def _commit(self, batch: list[tuple[int, int, int, bytes]]) -> tuple[int, StreamError | None]:
        """Write and sync ``batch``: (chunks written and synced, the error that stopped it).

        When a chunk fails cleanly, the chunks written before it are still synced, so that
        they can be acknowledged; if that sync fails, the writer is broken and none is.
        """
        written = 0
        failure: StreamError | None = None
        with self._io_lock:
            try:
                for _, first, n_events, data in batch:
                    self._write_chunk(first, n_events, data)
                    written += 1
            except StreamError as exc:
                failure = exc
            except BaseException as exc:
                # Whatever failed (too many open files, a bug), the waiters are told.
                if self._broken is None:
                    self._broken = f"a group commit failed: {exc}"
                return written, StreamError(self._broken)
            if self._broken is not None:
                return written, failure or StreamError(self._broken)
            try:
                if written and self._fd is not None:
                    self._sync_now(self._fd)
            except StreamError as exc:
                return written, exc
        return written, failure

    def _write_chunk(self, first_seq: int, n_events: int, data: bytes) -> None:
        try:
            self._maybe_rotate(first_seq, n_events, len(data))
            self._write_all(data)
        except (OSError, StreamError) as exc:
            cause = exc if isinstance(exc, OSError) else exc.__cause__
            where = self.group_dir / segment_name(
                first_seq if self._fd is None else self._file_first_seq
            )
            self.fault = describe_os_error(cause, where) if isinstance(cause, OSError) else str(exc)
            if self._broken is not None:
                raise StreamError(
                    f"{self.fault}; the writer stopped ({self._broken}): restart lcg to "
                    "re-open the stream"
                ) from exc
            full = isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT)
            remedy = "free space" if full else f"make {self.group_dir} writable again"
            raise StreamError(
                f"{self.fault}; nothing was written (the stream is intact): {remedy}, then retry"
            ) from exc
        self._file_events += n_events
        self._file_bytes += len(data)

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
            raise

    def _maybe_rotate(self, first_seq: int, n_events: int, n_bytes: int) -> None:
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
            telemetry.emit(
                telemetry.WalRotated(
                    from_file_seq=from_seq,
                    to_file_seq=first_seq,
                    closed_bytes=closed_bytes,
                    closed_events=closed_events,
                )
            )
        path = self.group_dir / segment_name(first_seq)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        self._file_first_seq = first_seq
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

    def _batch_loop(self) -> None:
        # ``batch``: lines are written at once; this thread makes them durable every interval.
        while not self._stop.wait(self.batch_interval_s):
            with self._lock:
                target = self._ticket
                if self._synced >= target:
                    continue
            with self._io_lock:
                if self._closed or self._broken is not None:
                    return
                try:
                    if self._fd is not None:
                        self._sync_now(self._fd)
                except StreamError:
                    return
            with self._lock:
                self._synced = max(self._synced, target)

    def recheck(self) -> None:
        """Clear ``fault`` if the stream's directory takes a write again (space came back)."""
        if self.fault is not None and self._broken is None:
            if probe_write(self.group_dir) is None:
                self.fault = None

    def sync(self) -> None:
        """Make everything appended so far durable, whatever the policy."""
        if self._broken is not None:
            raise StreamError(f"group {self.group_id!r} is not durable: {self._broken}")
        if self.fsync_policy == "always":
            with self._lock:
                if self._synced >= self._ticket:
                    return
                ticket = self._ticket
                waiter = self._enlist(ticket)
            self._await(waiter, ticket)
            return
        with self._lock:
            target = self._ticket
        with self._io_lock:
            if self._fd is not None:
                os.fsync(self._fd)
        with self._lock:
            self._synced = max(self._synced, target)

    def close_segment(self) -> bool:
        """Close the current segment (the next append starts a new one); True if one was open."""
        self.sync()
        with self._lock, self._io_lock:
            if self._fd is None or self._file_events == 0:
                return False
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
            self._file_events = 0
            self._file_bytes = 0
            return True

    def close(self) -> None:
        """Sync and release the stream; the writer cannot be used afterwards."""
        with self._lock:
            if self._closed:
                return
        if self._broken is None:
            try:
                self.sync()
            except (StreamError, OSError):
                pass
        self._stop.set()
        if self._syncer is not None:
            self._syncer.join()
        with self._lock, self._io_lock:
            if self._closed:
                return
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
        os.close(self._lock_fd)

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
