"""Replicas: follow a publication of group streams and keep a read-only workspace current.

The follower reads a ``Source`` (``replication.transport``; the git transport's is a
directory of ``<encoded group>/`` stream directories, ``replication.tree``) and applies only
what the source's cursor verified. The rules are the follower's, the same for every source:

* **new lines** – complete lines only; every line must pass the one line check
  (``events.linecheck``: checksum, decodes, checksum order, the stream's generation) and have
  ``seq`` = previous + 1;
* **rewritten history** – what was verified must not change in the same generation (the
  directory source re-hashes a consumed prefix whenever a file's stat changes: ``git pull``
  replaces files); a shrunk, vanished or changed prefix stops the group;
* **generation change** – a sidecar or first line naming another generation than the applied
  one is a publisher reset: the new stream is verified whole, then the group's projections
  are purged and rebuilt from it (``reset_detected``);
* **mixed generations** – a sidecar that disagrees with the lines, or a line of another
  generation, is refused: the publication was copied partially or by hand;
* **seq gap / regression** – stops the group with the seq numbers rather than guessing.

* **untrusted input** – the publication is someone else's (ADR 0154): whatever the source
  refuses (``UnsafeFileError``: a symlink, a FIFO, a device, a file over its limit, a line
  longer than the line limit) stops that group; an entry that names no group is listed in
  ``skipped``, never opened.

A stopped group is re-examined on every change, so a transient state (a ``git pull`` caught
half-way) heals by itself once the files are whole; a persistent defect stays stopped with
its reason and remedy in ``replica_status``. A defect in one group never holds another: each
group's pass is its own, and every read is bounded. Events are applied in batches under the
workspace write lock, so reads see whole batches. Between passes the follower waits on the
source's ``changes``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

import msgspec

from lcg import telemetry
from lcg.errors import LcgError
from lcg.events import GENERATION_FILE, Event, ReadLimits, TailDefect, UnsafeFileError
from lcg.replication.scan import PublicationScan
from lcg.replication.status import (
    ReplicaApplied,
    ReplicaResetDetected,
    ReplicaStatus,
    ReplicaStopped,
    now,
    refresh_lag,
)
from lcg.replication.transport import GroupCursor, Source
from lcg.replication.tree import TreeSource
from lcg.workspace import Workspace

__all__ = ["Follower"]

log = logging.getLogger(__name__)


class Follower:
    """Applies a publication's group streams to a workspace opened on that publication.

    The workspace must have been opened *without* catching up (``Workspace(config)`` or
    ``Workspace.open(..., catch_up=False)``) so that nothing unverified is applied. Its stream
    directory (``config.wal_dir``) holds what the source verifies - for the directory source,
    the publication itself - since a projection behind the others is brought up from it.
    Without ``source`` the publication is ``config.wal_dir`` read as a directory.
    """

    def __init__(
        self,
        ws: Workspace,
        groups: Sequence[str] | None = None,
        *,
        source: Source | None = None,
        source_label: str | None = None,
        batch_size: int = 256,
        limits: ReadLimits | None = None,
    ) -> None:
        self.ws = ws
        if source is None:
            # The bounds every file of the publication is read under.
            bounds = limits or ws.store.limits or ReadLimits()
            source = TreeSource(ws.config.wal_dir, limits=bounds, label=source_label)
        #: Where the verified lines come from.
        self.source: Source = source
        self.source_label = source_label or source.label
        self.only: list[str] | None = list(groups) if groups else None
        self.batch_size = max(1, batch_size)
        self._tracks: dict[str, GroupCursor] = {}
        self._status: dict[str, ReplicaStatus] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        #: Called after every pass with the statuses (tests and the bench wait on it).
        self.on_sync: Callable[[dict[str, ReplicaStatus]], None] | None = None
        self.passes = 0
        #: The last listing of the publication (its groups and the entries that are none).
        self.scan = PublicationScan()

    # ---- status ----------------------------------------------------------------------------

    def groups(self) -> list[str]:
        """The followed groups: those named, else every group the publication holds."""
        if self.only is not None:
            return list(self.only)
        return sorted(set(self.scan.groups) | set(self._status))

    def replica_status(self, group_id: str) -> ReplicaStatus:
        """The replica status of ``group_id`` (``starting`` before its first pass)."""
        # No lock: a pass may hold the follower for a long hydration, and status must answer.
        status = self._status.get(group_id)
        if status is None:
            return ReplicaStatus(group_id=group_id, source=self.source_label)
        return msgspec.structs.replace(status)

    def statuses(self) -> dict[str, ReplicaStatus]:
        """The replica status of every followed group."""
        return {g: self.replica_status(g) for g in self.groups()}

    # ---- one pass --------------------------------------------------------------------------

    def sync(self) -> dict[str, ReplicaStatus]:
        """Examine every followed group once and apply what landed; return the statuses."""
        try:
            self.scan = self.source.list_groups()
        except OSError as exc:  # the root itself is unreadable: keep the last listing
            log.warning("cannot list the publication %s: %s", self.source_label, exc)
        for group_id in self.groups():
            self.sync_group(group_id)
        self.passes += 1
        statuses = self.statuses()
        if self.on_sync is not None:
            self.on_sync(statuses)
        return statuses

    def sync_group(self, group_id: str) -> ReplicaStatus:
        """Examine ``group_id``'s publication once, apply verified new events, return status."""
        with self._lock:
            status = self._status.setdefault(
                group_id, ReplicaStatus(group_id=group_id, source=self.source_label)
            )
            was_stopped = status.reason if status.state == "stopped" else None
            try:
                track = self._tracks.get(group_id)
                if track is None:
                    track = self._tracks[group_id] = self._load_track(group_id)
                self._sync(group_id, track, status)
            except UnsafeFileError as defect:
                status.state = "stopped"
                status.reason = (
                    f"group {group_id!r} of the publication is refused: {defect}; this group "
                    "stops (the others go on) until the publisher republishes it with `lcg "
                    "publish` (it writes only regular files); a size over the limit can be "
                    "allowed with `lcg follow --max-segment-bytes`/`--max-line-bytes`"
                )
                if status.reason != was_stopped:
                    telemetry.emit(ReplicaStopped(group_id=group_id, reason=status.reason))
            except (LcgError, OSError) as defect:
                status.state = "stopped"
                status.reason = str(defect)
                if status.reason != was_stopped:
                    telemetry.emit(ReplicaStopped(group_id=group_id, reason=status.reason))
            except Exception as exc:  # noqa: BLE001 - a bug stops one group, never the watcher
                log.exception("replica pass over group %r failed", group_id)
                status.state = "stopped"
                status.reason = f"internal error ({type(exc).__name__}: {exc}); see the log"
                if status.reason != was_stopped:
                    telemetry.emit(ReplicaStopped(group_id=group_id, reason=status.reason))
            else:
                status.state = "following"
                status.reason = None
            self._save_track(group_id)
            self._refresh_lag(group_id, status)
            return msgspec.structs.replace(status)

    # ---- verification marks across restarts -------------------------------------------------

    def _load_track(self, group_id: str) -> GroupCursor:
        """A cursor past what a previous run verified (re-checked by the source), else fresh.

        Without it a restarted replica could re-verify seqs and generations but not notice
        that bytes it applied before were since changed in place.
        """
        gens = {p.generation for p in self.ws.projector.positions(group_id).values()}
        applied = next(iter(gens)) if len(gens) == 1 else None
        if applied is None:
            return self.source.cursor(group_id)  # purged, reset or never applied
        return self.source.resume(group_id, applied, self.ws.config.workspace)

    def _save_track(self, group_id: str) -> None:
        track = self._tracks.get(group_id)
        if track is not None:
            self.source.save(track, self.ws.config.workspace)

    def _sync(self, group_id: str, track: GroupCursor, status: ReplicaStatus) -> None:
        stream_gen = self.source.generation(group_id)
        positions = self.ws.projector.positions(group_id)
        recorded = [p for p in positions.values() if not p.empty]
        recorded_gens = {p.generation for p in recorded if p.generation is not None}
        status.source_generation = stream_gen
        if stream_gen is None:
            if recorded:
                applied = self.ws.projector.applied_seq(group_id)
                raise TailDefect(
                    f'WAL stream generation unknown: group "{group_id}": the publication '
                    f"({self.source_label}) has no readable {GENERATION_FILE} for it and no "
                    f"line names a generation, but this replica has applied through seq "
                    f"{applied}; the publisher must republish the group's whole stream "
                    "directory (`lcg publish`, never a *.jsonl copy), or delete this "
                    "replica's workspace state and follow again"
                )
            return  # nothing published yet
        previous = track.generation or (next(iter(recorded_gens)) if recorded_gens else None)
        stale = sorted(recorded_gens - {stream_gen})
        if previous is not None and (previous != stream_gen or stale):
            # A projection of another generation than the stream's: its seqs say nothing of
            # the stream, so the group is purged and replayed (also when the track in memory
            # already names the new generation).
            self._reset(group_id, track, status, stale[0] if stale else previous, stream_gen)
            return
        if track.generation is None:
            track.generation = stream_gen
        status.generation = stream_gen
        self._follow(group_id, track, status)

    # ---- reset -----------------------------------------------------------------------------

    def _reset(
        self,
        group_id: str,
        track: GroupCursor,
        status: ReplicaStatus,
        previous: str,
        generation: str,
    ) -> None:
        # Verify the whole new stream before purging: a half-pulled publication must not
        # cost the replica the generation it is serving.
        probe = self.source.cursor(group_id, generation)
        for _ in probe.read(yield_after=None):
            pass
        with self.ws.rw.write():
            self.ws.projections.purge_group(group_id)
        fresh = self.source.cursor(group_id, generation)
        self._tracks[group_id] = fresh
        status.reset_detected = True
        status.previous_generation = previous
        status.resets += 1
        status.generation = generation
        telemetry.emit(
            ReplicaResetDetected(
                group_id=group_id, previous_generation=previous, generation=generation
            )
        )
        telemetry.emit(
            telemetry.ServiceNotice(
                kind="reset_detected",
                reason=f"replica group {group_id!r}: generation {previous} -> {generation}",
            )
        )
        self._follow(group_id, fresh, status)

    # ---- following -------------------------------------------------------------------------

    def _follow(self, group_id: str, track: GroupCursor, status: ReplicaStatus) -> None:
        proj = self.ws.projector
        positions = proj.positions(group_id).values()
        assert track.generation is not None
        # ``_sync`` reset every projection of another generation, so each position is of the
        # track's or empty; ``next_seq`` refuses (GenerationError) to read one that is not.
        applied = {p.next_seq(track.generation) - 1 for p in positions}
        highest, lowest = max(applied), min(applied)
        if track.next_seq - 1 > lowest:
            # Verified further than applied (an apply failed, or projections were purged):
            # re-verify from the start so the unapplied events are yielded again.
            fresh = self.source.cursor(group_id, track.generation)
            track = self._tracks[group_id] = fresh
        if len(applied) == 1:
            self._apply_stream(group_id, track, status, highest)
            self._check_not_behind(group_id, track, highest)
            return
        # Projections at different positions (a crash between snapshots, an embedder that
        # failed): verify first, then let the projector bring each one up to the verified end.
        defect: TailDefect | None = None
        try:
            for _ in track.read(yield_after=None):
                pass
        except TailDefect as exc:
            defect = exc
        end = track.next_seq - 1
        if end > lowest:
            has_none = any(p.empty for p in positions)
            with self.ws.group_lock(group_id), self.ws.rw.write():
                result = proj.rebuild(
                    group_id,
                    from_seq=0 if has_none else lowest + 1,
                    to_seq=end,
                    force_clear=has_none and proj.group_has_data(group_id),
                )
            self._note_applied(group_id, status, lowest + 1, end, result.mutations_replayed)
        if defect is not None:
            raise defect
        self._check_not_behind(group_id, track, highest)

    def _check_not_behind(self, group_id: str, track: GroupCursor, applied: int) -> None:
        if track.next_seq - 1 < applied:
            raise TailDefect(
                f"seq regression in group {group_id!r}: the publication holds seqs through "
                f"{track.next_seq - 1} but this replica applied through {applied} in the same "
                "generation (the publication went backwards - an older commit checked out?); "
                "the replica stops rather than guess - pull the latest publication, or publish "
                "a rewritten stream as a new generation (`lcg publish --reset`)"
            )

    def _apply_stream(
        self, group_id: str, track: GroupCursor, status: ReplicaStatus, applied: int
    ) -> None:
        batch: list[Event] = []
        try:
            for event in track.read(yield_after=applied):
                batch.append(event)
                if len(batch) >= self.batch_size:
                    self._apply(group_id, status, batch)
                    batch = []
        finally:
            # What was verified before a defect is a valid prefix: apply it, then report.
            if batch:
                self._apply(group_id, status, batch)

    def _apply(self, group_id: str, status: ReplicaStatus, batch: list[Event]) -> None:
        with self.ws.group_lock(group_id), self.ws.rw.write():
            self.ws.projector.apply_live(group_id, batch)
        self._note_applied(group_id, status, batch[0].seq, batch[-1].seq, len(batch))
        status.last_event_ts = batch[-1].ts

    def _note_applied(
        self, group_id: str, status: ReplicaStatus, first: int, last: int, count: int
    ) -> None:
        status.events_applied += count
        status.last_applied_at = now()
        self._refresh_lag(group_id, status)
        telemetry.emit(
            ReplicaApplied(
                group_id=group_id,
                first_seq=first,
                last_seq=last,
                events=count,
                lag_events=status.lag_events,
            )
        )

    # ---- lag -------------------------------------------------------------------------------

    def _refresh_lag(self, group_id: str, status: ReplicaStatus) -> None:
        tail = self.source.tail(group_id)
        refresh_lag(status, tail.seq, tail.ts, self.ws.projector.applied_seq(group_id))

    # ---- watching --------------------------------------------------------------------------

    def run(self, stop: threading.Event, *, step_ms: int = 50, rescan_ms: int = 2000) -> None:
        """Follow until ``stop`` is set: a pass now, then one each time the source may have
        new lines (``Source.changes``: after a debounce of ``step_ms``, and every
        ``rescan_ms`` in case a change was missed)."""
        self.sync()
        for _ in self.source.changes(self.groups, stop, step_ms=step_ms, rescan_ms=rescan_ms):
            self.sync()

    def start(self, *, step_ms: int = 50, rescan_ms: int = 2000) -> None:
        """Follow in a background thread (``stop()`` ends it)."""
        self._stop.clear()
        self._thread = threading.Thread(
            target=self.run,
            args=(self._stop,),
            kwargs={"step_ms": step_ms, "rescan_ms": rescan_ms},
            name="lcg-follow",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
