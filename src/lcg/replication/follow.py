"""Replicas: follow a published copy of group streams and keep a read-only workspace current.

A publication is a directory holding ``<encoded group>/`` stream directories (usually a git
working tree that ``lcg publish`` commits to and a replica ``git pull``s). The follower reads
it without any lock and applies only what the verifying tail-reader (``events.tail``) passed:

* **new lines** – each segment's bytes past what was already consumed are read, complete lines
  only; every line must pass the one line check (``events.linecheck``: checksum, decodes,
  checksum order, the stream's generation) and have ``seq`` = previous + 1;
* **rewritten files** – a consumed prefix is re-hashed whenever a file's stat changes (``git
  pull`` replaces files); a shrunk, vanished or changed prefix in the same generation stops
  the group;
* **generation change** – a sidecar or first line naming another generation than the applied
  one is a publisher reset: the new stream is verified whole, then the group's projections
  are purged and rebuilt from it (``reset_detected``);
* **mixed generations** – a sidecar that disagrees with the lines, or a line of another
  generation, is refused: the publication was copied partially or by hand;
* **seq gap / regression** – stops the group with the seq numbers rather than guessing.

* **untrusted files** – the publication is someone else's input (ADR 0154): a group
  directory, segment or sidecar that is a symlink, a FIFO, a device or larger than its limit
  (``ReadLimits``), a line longer than the line limit, or a malformed
  ``.wal-generation.json`` stops that group; nothing is read through a link or without a
  bound, and a directory whose name is no group is listed in ``skipped``, never opened.

A stopped group is re-examined on every change, so a transient state (a ``git pull`` caught
half-way) heals by itself once the files are whole; a persistent defect stays stopped with
its reason and remedy in ``replica_status``. A defect in one group never holds another: each
group's pass is its own, and every read is bounded. Events are applied in batches under the
workspace write lock, so reads see whole batches. The watcher watches the root and each real
group directory, not recursively: a symlink out of the publication is never walked.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from lcg import telemetry
from lcg.errors import GenerationError, LcgError
from lcg.events.generation import stream_generation
from lcg.events.groups import encode_group
from lcg.events.guarded import ReadLimits, UnsafeFileError, check_real_dir
from lcg.events.layout import BOUNDS_FILE, GENERATION_FILE, SEGMENT_DIGITS, SEGMENT_SUFFIX
from lcg.events.model import Event
from lcg.events.tail import TailDefect, VerifiedTail
from lcg.replication.scan import PublicationScan, scan_publication
from lcg.replication.status import (
    ReplicaApplied,
    ReplicaResetDetected,
    ReplicaStatus,
    ReplicaStopped,
    now,
    refresh_lag,
)
from lcg.replication.verified import load_saved, save_verified
from lcg.workspace import Workspace

__all__ = ["Follower"]

log = logging.getLogger(__name__)


class Follower:
    """Applies a publication's group streams to a workspace opened on that publication.

    The workspace must have been opened with ``config.wal_dir`` = the publication directory
    and *without* catching up (``Workspace(config)`` or ``Workspace.open(..., catch_up=False)``)
    so that nothing unverified is applied.
    """

    def __init__(
        self,
        ws: Workspace,
        groups: Sequence[str] | None = None,
        *,
        source_label: str | None = None,
        batch_size: int = 256,
        limits: ReadLimits | None = None,
    ) -> None:
        self.ws = ws
        #: The bounds every file of the publication is read under.
        self.limits = limits or ws.store.limits or ReadLimits()
        self.source = ws.config.wal_dir
        self.source_label = source_label or str(self.source)
        self.only: list[str] | None = list(groups) if groups else None
        self.batch_size = max(1, batch_size)
        self._tracks: dict[str, VerifiedTail] = {}
        self._status: dict[str, ReplicaStatus] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        #: Called after every pass with the statuses (tests and the bench wait on it).
        self.on_sync: Callable[[dict[str, ReplicaStatus]], None] | None = None
        self.passes = 0
        #: The last listing of the publication root (its groups and the names that are none).
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
            self.scan = scan_publication(self.source)
        except OSError as exc:  # the root itself is unreadable: keep the last listing
            log.warning("cannot list the publication %s: %s", self.source, exc)
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

    def _load_track(self, group_id: str) -> VerifiedTail:
        """The marks saved by a previous run, re-checked against the files; else a fresh track.

        Without them a restarted replica could re-verify seqs and generations but not notice
        that bytes it applied before were since changed in place.
        """
        gdir = self.source / encode_group(group_id)
        check_real_dir(gdir)
        track = VerifiedTail(group_id, gdir, limits=self.limits)
        saved = load_saved(self.ws.config.workspace, group_id)
        if saved is None:
            return track
        positions = self.ws.projector.positions(group_id)
        if {gen for _, gen in positions.values()} != {saved.generation}:
            return track  # purged, reset or never applied: the saved marks say nothing now
        if self._stream_generation(group_id, gdir) != saved.generation:
            return track  # a reset: handled by the pass
        for entry in saved.files:
            if not _is_segment_name(entry.name):
                return VerifiedTail(group_id, gdir, limits=self.limits)  # not marks of ours
            try:
                track.restore(entry.name, entry.consumed, entry.lines, bytes.fromhex(entry.digest))
            except FileNotFoundError:
                raise TailDefect(
                    f"segment {entry.name} of group {group_id!r} disappeared from the "
                    "publication since this replica last ran, while the generation stayed the "
                    "same; a stream is append-only - the publisher must publish a reset as a "
                    "new generation (`lcg publish --reset`)"
                ) from None
        track.generation = saved.generation
        track.next_seq = saved.next_seq
        track.lines.checksummed = saved.checksummed
        return track

    def _save_track(self, group_id: str) -> None:
        track = self._tracks.get(group_id)
        if track is not None:
            save_verified(self.ws.config.workspace, track)

    def _sync(self, group_id: str, track: VerifiedTail, status: ReplicaStatus) -> None:
        gdir = self.source / encode_group(group_id)
        # A symlinked group directory would be read wherever it points (outside the root).
        check_real_dir(gdir)
        positions = self.ws.projector.positions(group_id)
        recorded = [p for p in positions.values() if p[0] is not None]
        recorded_gens = {gen for _, gen in recorded if gen is not None}
        stream_gen = self._stream_generation(group_id, gdir)
        status.source_generation = stream_gen
        if stream_gen is None:
            if recorded:
                applied = self.ws.projector.applied_seq(group_id)
                raise TailDefect(
                    f'WAL stream generation unknown: group "{group_id}": {gdir / GENERATION_FILE} '
                    "is absent or unreadable and no line names a generation, but this replica "
                    f"has applied through seq {applied}; the publisher must republish the "
                    "group's whole stream directory (`lcg publish`, never a *.jsonl copy), or "
                    "delete this replica's workspace state and follow again"
                )
            return  # nothing published yet
        previous = track.generation or (next(iter(recorded_gens)) if recorded_gens else None)
        if previous is not None and (previous != stream_gen or len(recorded_gens) > 1):
            self._reset(group_id, gdir, track, status, previous, stream_gen)
            return
        if track.generation is None:
            track.generation = stream_gen
        status.generation = stream_gen
        self._follow(group_id, gdir, track, status)

    def _stream_generation(self, group_id: str, gdir: Path) -> str | None:
        try:
            witnesses = stream_generation(gdir, limits=self.limits)
        except GenerationError as exc:
            raise TailDefect(
                f"group {group_id!r}: {exc}; the replica stops this group rather than guess "
                "its generation - the publisher must republish it (`lcg publish` rewrites "
                "the sidecar)"
            ) from None
        if witnesses.split:
            sidecar, lines = witnesses.sidecar, witnesses.lines
            raise TailDefect(
                f"the publication of group {group_id!r} mixes generations: {GENERATION_FILE} "
                f"names {sidecar!r} but its first line carries {lines!r}; it was copied "
                "partially or by hand - the publisher must republish the whole directory "
                "(`lcg publish --reset` if the stream was replaced)"
            )
        return witnesses.effective

    # ---- reset -----------------------------------------------------------------------------

    def _reset(
        self,
        group_id: str,
        gdir: Path,
        track: VerifiedTail,
        status: ReplicaStatus,
        previous: str,
        generation: str,
    ) -> None:
        # Verify the whole new stream before purging: a half-pulled publication must not
        # cost the replica the generation it is serving.
        probe = VerifiedTail(group_id, gdir, generation, limits=self.limits)
        for _ in probe.read(yield_after=None):
            pass
        with self.ws.rw.write():
            for proj in (self.ws.graph, self.ws.text, self.ws.vectors):
                proj.purge_group(group_id)
        fresh = VerifiedTail(group_id, gdir, generation, limits=self.limits)
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
        self._follow(group_id, gdir, fresh, status)

    # ---- following -------------------------------------------------------------------------

    def _follow(
        self, group_id: str, gdir: Path, track: VerifiedTail, status: ReplicaStatus
    ) -> None:
        proj = self.ws.projector
        positions = proj.positions(group_id)
        seqs = {p[0] for p in positions.values()}
        gens = {p[1] for p in positions.values() if p[1] is not None}
        assert track.generation is not None
        highest = max(-1 if s is None else s for s in seqs)
        if track.next_seq - 1 > min(-1 if s is None else s for s in seqs):
            # Verified further than applied (an apply failed, or projections were purged):
            # re-verify from the start so the unapplied events are yielded again.
            fresh = VerifiedTail(group_id, gdir, track.generation, limits=self.limits)
            track = self._tracks[group_id] = fresh
        if len(seqs) == 1 and gens <= {track.generation}:
            self._apply_stream(group_id, track, status, highest)
            self._check_not_behind(group_id, track, highest)
            return
        # Projections at different positions (a crash between snapshots, an embedder that
        # failed): verify first, then let the projector bring each one up to the verified end.
        lowest = min(-1 if s is None else s for s in seqs)
        defect: TailDefect | None = None
        try:
            for _ in track.read(yield_after=None):
                pass
        except TailDefect as exc:
            defect = exc
        end = track.next_seq - 1
        if end > lowest:
            has_none = any(s is None for s in seqs)
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

    def _check_not_behind(self, group_id: str, track: VerifiedTail, applied: int) -> None:
        if track.next_seq - 1 < applied:
            raise TailDefect(
                f"seq regression in group {group_id!r}: the publication holds seqs through "
                f"{track.next_seq - 1} but this replica applied through {applied} in the same "
                "generation (the publication went backwards - an older commit checked out?); "
                "the replica stops rather than guess - pull the latest publication, or publish "
                "a rewritten stream as a new generation (`lcg publish --reset`)"
            )

    def _apply_stream(
        self, group_id: str, track: VerifiedTail, status: ReplicaStatus, applied: int
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
        gdir = self.source / encode_group(group_id)
        refresh_lag(status, gdir, self.ws.projector.applied_seq(group_id), self.limits)

    # ---- watching --------------------------------------------------------------------------

    def relevant(self, path: str) -> bool:
        """Whether a changed path can change what the follower applies."""
        p = Path(path)
        for root in (self.source, self.source.resolve()):
            try:
                rel = p.relative_to(root)
                break
            except ValueError:
                continue
        else:
            return False
        parts = rel.parts
        if not parts or parts[0].startswith("."):
            return False  # .git and other dot-dirs of the publication root
        if len(parts) == 1:
            return True  # a group directory appeared or went away
        name = parts[-1]
        return (
            len(parts) == 2
            and (name.endswith(SEGMENT_SUFFIX) or name == GENERATION_FILE)
            and name != BOUNDS_FILE
        )

    def watched(self) -> dict[Path, int]:
        """What the watcher watches: the root and each real group directory, by inode."""
        root = self.source.resolve()
        paths = [root, *(root / encode_group(g) for g in self.groups())]
        out: dict[Path, int] = {}
        for path in paths:
            try:
                st = os.lstat(path)
            except OSError:
                continue
            # Never a symlink: a watch follows it, and a link to / would walk the disk.
            if stat.S_ISDIR(st.st_mode):
                out[path] = st.st_ino
        return out

    def run(self, stop: threading.Event, *, step_ms: int = 50, rescan_ms: int = 2000) -> None:
        """Follow until ``stop`` is set: a pass now, then one per batch of relevant changes.

        Changes are grouped until ``step_ms`` pass without another (the debounce); a pass also
        runs every ``rescan_ms`` without changes, in case an event was missed. The watch is
        not recursive (``watched``) and is set up again when the group directories change.
        """
        import watchfiles

        self.source.mkdir(parents=True, exist_ok=True)
        self.sync()
        while not stop.is_set():
            watched = self.watched()
            try:
                for _changes in watchfiles.watch(
                    *watched,
                    watch_filter=lambda _change, path: self.relevant(path),
                    debounce=max(step_ms * 10, 500),
                    step=step_ms,
                    stop_event=stop,
                    rust_timeout=rescan_ms,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    recursive=False,
                ):
                    if stop.is_set():
                        break
                    self.sync()
                    if self.watched() != watched:
                        break  # a group directory appeared, went or was replaced: watch anew
            except OSError as exc:
                # A directory went away between listing and watching (a pull): list again.
                log.debug("watch of %s failed (%s); watching anew", self.source, exc)
                if stop.wait(step_ms / 1000):
                    break
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


def _is_segment_name(name: str) -> bool:
    """Whether ``name`` is a segment file name (saved marks name nothing else)."""
    stem = name[: -len(SEGMENT_SUFFIX)]
    return name.endswith(SEGMENT_SUFFIX) and len(stem) == SEGMENT_DIGITS and stem.isdigit()
