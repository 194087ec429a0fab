"""Replicas: follow a published copy of group streams and keep a read-only workspace current.

A publication is a directory holding ``<encoded group>/`` stream directories (usually a git
working tree that ``lcg publish`` commits to and a replica ``git pull``s). The follower reads
it without any lock and applies only what it has verified:

* **new lines** – each segment's bytes past what was already consumed are read, complete lines
  only; every line must decode, carry the stream's generation and have ``seq`` = previous + 1;
* **rewritten files** – a consumed prefix is re-hashed whenever a file's stat changes (``git
  pull`` replaces files); a shrunk, vanished or changed prefix in the same generation stops
  the group;
* **generation change** – a sidecar or first line naming another generation than the applied
  one is a publisher reset: the new stream is verified whole, then the group's projections
  are purged and rebuilt from it (``reset_detected``);
* **mixed generations** – a sidecar that disagrees with the lines, or a line of another
  generation, is refused: the publication was copied partially or by hand;
* **seq gap / regression** – stops the group with the seq numbers rather than guessing.

A stopped group is re-examined on every change, so a transient state (a ``git pull`` caught
half-way) heals by itself once the files are whole; a persistent defect stays stopped with
its reason and remedy in ``replica_status``. Events are applied in batches under the
workspace write lock, so reads see whole batches.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from lcg import telemetry
from lcg.errors import LcgError
from lcg.events._fs import atomic_write
from lcg.events.codec import decode_line
from lcg.events.generation import read_generation
from lcg.events.groups import encode_group, list_groups
from lcg.events.layout import BOUNDS_FILE, GENERATION_FILE, LCG_DIR, REPLICA_DIR, SEGMENT_SUFFIX
from lcg.events.model import Event
from lcg.events.reader import generation_from_lines
from lcg.events.segments import list_segments, read_tail
from lcg.projections.workspace import Workspace

__all__ = [
    "Follower",
    "ReplicaApplied",
    "ReplicaResetDetected",
    "ReplicaState",
    "ReplicaStatus",
    "ReplicaStopped",
    "SavedFile",
    "SavedTrack",
]

#: ``following``: applying as events land; ``stopped``: a defect holds the group (see reason).
ReplicaState = Literal["starting", "following", "stopped"]

_CHUNK = 1 << 20
log = logging.getLogger(__name__)
#: The follower's verification marks, inside the replica workspace's ``LCG_DIR``.


class ReplicaStatus(msgspec.Struct, kw_only=True):
    """Where one followed group stands against its publication."""

    group_id: str
    source: str
    state: ReplicaState = "starting"
    reason: str | None = None
    applied_seq: int | None = None
    source_max_seq: int | None = None
    lag_events: int = 0
    #: Publisher time between the newest published event and the newest applied one.
    lag_seconds: float = 0.0
    #: The replica's wall clock when it last applied events.
    last_applied_at: str | None = None
    #: The ``ts`` of the newest applied event (publisher clock).
    last_event_ts: str | None = None
    generation: str | None = None
    source_generation: str | None = None
    reset_detected: bool = False
    previous_generation: str | None = None
    resets: int = 0
    events_applied: int = 0


class ReplicaApplied(telemetry.Record, tag="replica_applied"):
    """A follower applied a run of events to a group."""

    group_id: str
    first_seq: int
    last_seq: int
    events: int
    lag_events: int


class ReplicaResetDetected(telemetry.Record, tag="reset_detected"):
    """A follower saw a new generation and rebuilt the group from it."""

    group_id: str
    previous_generation: str | None
    generation: str


class ReplicaStopped(telemetry.Record, tag="replica_stopped"):
    """A follower stopped applying a group; ``reason`` says why and what to do."""

    group_id: str
    reason: str


class _FileMark:
    """How much of one segment has been verified, and a hash of that prefix."""

    __slots__ = ("consumed", "hasher", "lines", "stat_key")

    def __init__(self) -> None:
        self.consumed = 0
        self.lines = 0
        self.hasher = hashlib.blake2b(digest_size=16)
        self.stat_key: tuple[int, int, int] = (0, 0, 0)


class _Track:
    """The follower's in-memory knowledge of one group's publication."""

    def __init__(self) -> None:
        self.generation: str | None = None
        self.next_seq = 0
        self.files: dict[str, _FileMark] = {}
        self.last_ts: str | None = None


class SavedFile(msgspec.Struct, kw_only=True):
    """A verified prefix of one segment: its length, line count and BLAKE2b digest."""

    name: str
    consumed: int
    lines: int
    digest: str


class SavedTrack(msgspec.Struct, kw_only=True):
    """``.lcg/replica/<group>.json``: what the follower verified, kept across restarts."""

    group_id: str
    generation: str
    next_seq: int
    files: list[SavedFile] = []


_saved_decoder = msgspec.json.Decoder(SavedTrack)
_saved_encoder = msgspec.json.Encoder()


class _Defect(Exception):
    """A reason to stop applying a group (internal: becomes the group's stopped status)."""


def _stat_key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _prefix_hasher(path: Path, length: int) -> hashlib.blake2b:
    """A BLAKE2b hasher fed the first ``length`` bytes of ``path``."""
    h = hashlib.blake2b(digest_size=16)
    remaining = length
    with open(path, "rb") as fh:
        while remaining:
            chunk = fh.read(min(_CHUNK, remaining))
            if not chunk:
                break
            h.update(chunk)
            remaining -= len(chunk)
    return h


def _parse_ts(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return _dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


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
    ) -> None:
        self.ws = ws
        self.source = ws.config.wal_dir
        self.source_label = source_label or str(self.source)
        self.only: list[str] | None = list(groups) if groups else None
        self.batch_size = max(1, batch_size)
        self._tracks: dict[str, _Track] = {}
        self._status: dict[str, ReplicaStatus] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        #: Called after every pass with the statuses (tests and the bench wait on it).
        self.on_sync: Callable[[dict[str, ReplicaStatus]], None] | None = None
        self.passes = 0

    # ---- status ----------------------------------------------------------------------------

    def groups(self) -> list[str]:
        """The followed groups: those named, else every group the publication holds."""
        if self.only is not None:
            return list(self.only)
        return sorted(set(list_groups(self.source)) | set(self._status))

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
            except (_Defect, LcgError, OSError) as defect:
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

    def _saved_path(self, group_id: str) -> Path:
        return self.ws.config.workspace / LCG_DIR / REPLICA_DIR / f"{encode_group(group_id)}.json"

    def _load_track(self, group_id: str) -> _Track:
        """The marks saved by a previous run, re-checked against the files; else a fresh track.

        Without them a restarted replica could re-verify seqs and generations but not notice
        that bytes it applied before were since changed in place.
        """
        track = _Track()
        try:
            saved = _saved_decoder.decode(self._saved_path(group_id).read_bytes())
        except (OSError, ValueError):
            return track
        gdir = self.source / encode_group(group_id)
        positions = self.ws.projector.positions(group_id)
        if {gen for _, gen in positions.values()} != {saved.generation}:
            return track  # purged, reset or never applied: the saved marks say nothing now
        if self._stream_generation(group_id, gdir) != saved.generation:
            return track  # a reset: handled by the pass
        for entry in saved.files:
            path = gdir / entry.name
            try:
                st = os.stat(path)
            except FileNotFoundError:
                raise _Defect(
                    f"segment {entry.name} of group {group_id!r} disappeared from the "
                    "publication since this replica last ran, while the generation stayed the "
                    "same; a stream is append-only - the publisher must publish a reset as a "
                    "new generation (`lcg publish --reset`)"
                ) from None
            mark = _FileMark()
            mark.hasher = self._check_prefix(
                group_id, path, entry.consumed, bytes.fromhex(entry.digest), st
            )
            mark.consumed, mark.lines = entry.consumed, entry.lines
            mark.stat_key = _stat_key(st)
            track.files[entry.name] = mark
        track.generation = saved.generation
        track.next_seq = saved.next_seq
        return track

    def _save_track(self, group_id: str) -> None:
        track = self._tracks.get(group_id)
        if track is None or track.generation is None:
            return
        saved = SavedTrack(
            group_id=group_id,
            generation=track.generation,
            next_seq=track.next_seq,
            files=[
                SavedFile(
                    name=name, consumed=m.consumed, lines=m.lines, digest=m.hasher.hexdigest()
                )
                for name, m in sorted(track.files.items())
            ],
        )
        path = self._saved_path(group_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, _saved_encoder.encode(saved), durable=False)
        except OSError:
            pass  # the marks only strengthen the next run's checks

    def _sync(self, group_id: str, track: _Track, status: ReplicaStatus) -> None:
        gdir = self.source / encode_group(group_id)
        positions = self.ws.projector.positions(group_id)
        recorded = [p for p in positions.values() if p[0] is not None]
        recorded_gens = {gen for _, gen in recorded if gen is not None}
        stream_gen = self._stream_generation(group_id, gdir)
        status.source_generation = stream_gen
        if stream_gen is None:
            if recorded:
                applied = self.ws.projector.applied_seq(group_id)
                raise _Defect(
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
        sidecar = read_generation(gdir)
        lines = generation_from_lines(gdir)
        if sidecar is not None and lines is not None and sidecar != lines:
            raise _Defect(
                f"the publication of group {group_id!r} mixes generations: {GENERATION_FILE} "
                f"names {sidecar!r} but its first line carries {lines!r}; it was copied "
                "partially or by hand - the publisher must republish the whole directory "
                "(`lcg publish --reset` if the stream was replaced)"
            )
        return sidecar or lines

    # ---- reset -----------------------------------------------------------------------------

    def _reset(
        self,
        group_id: str,
        gdir: Path,
        track: _Track,
        status: ReplicaStatus,
        previous: str,
        generation: str,
    ) -> None:
        # Verify the whole new stream before purging: a half-pulled publication must not
        # cost the replica the generation it is serving.
        probe = _Track()
        probe.generation = generation
        for _ in self._scan(group_id, gdir, probe, apply_after=None):
            pass
        with self.ws.rw.write():
            for proj in (self.ws.graph, self.ws.text, self.ws.vectors):
                proj.purge_group(group_id)
        fresh = _Track()
        fresh.generation = generation
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
            telemetry.ServiceState(
                state="reset_detected",
                reason=f"replica group {group_id!r}: generation {previous} -> {generation}",
            )
        )
        self._follow(group_id, gdir, fresh, status)

    # ---- following -------------------------------------------------------------------------

    def _follow(self, group_id: str, gdir: Path, track: _Track, status: ReplicaStatus) -> None:
        proj = self.ws.projector
        positions = proj.positions(group_id)
        seqs = {p[0] for p in positions.values()}
        gens = {p[1] for p in positions.values() if p[1] is not None}
        assert track.generation is not None
        highest = max(-1 if s is None else s for s in seqs)
        if track.next_seq - 1 > min(-1 if s is None else s for s in seqs):
            # Verified further than applied (an apply failed, or projections were purged):
            # re-verify from the start so the unapplied events are yielded again.
            fresh = _Track()
            fresh.generation = track.generation
            track = self._tracks[group_id] = fresh
        if len(seqs) == 1 and gens <= {track.generation}:
            self._apply_stream(group_id, gdir, track, status, highest)
            self._check_not_behind(group_id, track, highest)
            return
        # Projections at different positions (a crash between snapshots, an embedder that
        # failed): verify first, then let the projector bring each one up to the verified end.
        lowest = min(-1 if s is None else s for s in seqs)
        defect: _Defect | None = None
        try:
            for _ in self._scan(group_id, gdir, track, apply_after=None):
                pass
        except _Defect as exc:
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

    def _check_not_behind(self, group_id: str, track: _Track, applied: int) -> None:
        if track.next_seq - 1 < applied:
            raise _Defect(
                f"seq regression in group {group_id!r}: the publication holds seqs through "
                f"{track.next_seq - 1} but this replica applied through {applied} in the same "
                "generation (the publication went backwards - an older commit checked out?); "
                "the replica stops rather than guess - pull the latest publication, or publish "
                "a rewritten stream as a new generation (`lcg publish --reset`)"
            )

    def _apply_stream(
        self, group_id: str, gdir: Path, track: _Track, status: ReplicaStatus, applied: int
    ) -> None:
        batch: list[Event] = []
        try:
            for event in self._scan(group_id, gdir, track, apply_after=applied):
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
        status.last_applied_at = _now()
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

    def _scan(
        self, group_id: str, gdir: Path, track: _Track, *, apply_after: int | None
    ) -> Iterator[Event]:
        """Verify the publication's unread bytes; yield the events past ``apply_after``.

        ``apply_after=None`` verifies only. Raises ``_Defect`` at the first defect, after
        yielding every verified event before it.
        """
        segments = list_segments(gdir)
        names = {s.path.name for s in segments}
        for name in track.files:
            if name not in names:
                raise _Defect(
                    f"segment {name} of group {group_id!r} disappeared from the publication "
                    f"while its generation {track.generation} stayed the same; a stream is "
                    "append-only - the publisher must publish a reset as a new generation "
                    "(`lcg publish --reset`)"
                )
        for index, seg in enumerate(segments):
            name = seg.path.name
            mark = track.files.get(name)
            try:
                st = os.stat(seg.path)
            except FileNotFoundError:
                raise _Defect(f"segment {name} of group {group_id!r} vanished mid-read") from None
            if mark is not None:
                if _stat_key(st) != mark.stat_key:
                    self._check_prefix(group_id, seg.path, mark.consumed, mark.hasher.digest(), st)
            else:
                # Registered before reading: a defect mid-file keeps what was verified.
                mark = track.files[name] = _FileMark()
            is_last = index == len(segments) - 1
            yield from self._read_new(group_id, seg.path, mark, track, is_last, apply_after)
            mark.stat_key = _stat_key(st)

    def _check_prefix(
        self, group_id: str, path: Path, consumed: int, expected: bytes, st: os.stat_result
    ) -> hashlib.blake2b:
        """Raise ``_Defect`` unless the first ``consumed`` bytes still hash to ``expected``."""
        if st.st_size < consumed:
            raise _Defect(
                f"segment {path.name} of group {group_id!r} shrank from {consumed} to "
                f"{st.st_size} bytes in the same generation (a seq regression); the publisher "
                "must publish a rewritten stream as a new generation (`lcg publish --reset`)"
            )
        hasher = _prefix_hasher(path, consumed)
        if hasher.digest() != expected:
            raise _Defect(
                f"segment {path.name} of group {group_id!r} was rewritten in place: its first "
                f"{consumed} bytes changed while the generation stayed the same; refusing "
                "to guess - the publisher must publish a rewritten stream as a new generation "
                "(`lcg publish --reset`), or delete this replica's workspace state and follow "
                "again"
            )
        return hasher

    def _read_new(
        self,
        group_id: str,
        path: Path,
        mark: _FileMark,
        track: _Track,
        is_last: bool,
        apply_after: int | None,
    ) -> Iterator[Event]:
        with open(path, "rb") as fh:
            fh.seek(mark.consumed)
            data = fh.read()
        end = data.rfind(b"\n") + 1
        if end < len(data) and not is_last:
            raise _Defect(
                f"segment {path.name} of group {group_id!r} ends in a partial line but is not "
                "the last segment (a copy or pull in progress?); waiting for the whole file"
            )
        pos = 0
        while pos < end:
            nl = data.index(b"\n", pos)
            line = data[pos : nl + 1]
            mark.lines += 1
            if line.strip():
                event = self._check_line(group_id, f"{path.name}:{mark.lines}", line[:-1], track)
                track.next_seq = event.seq + 1
                track.last_ts = event.ts
                mark.hasher.update(line)
                mark.consumed += len(line)
                if apply_after is not None and event.seq > apply_after:
                    yield event
            else:
                mark.hasher.update(line)
                mark.consumed += len(line)
            pos = nl + 1

    def _check_line(self, group_id: str, where: str, line: bytes, track: _Track) -> Event:
        decoded = decode_line(line)
        event = decoded.event
        if event is None:
            raise _Defect(
                f"a line of group {group_id!r} in {where} cannot be applied "
                f"({decoded.problem}: {decoded.detail}); the replica stops rather than skip "
                "it - upgrade lcg if the publisher runs a newer version, else republish"
            )
        if event.gen != track.generation:
            raise _Defect(
                f"the publication of group {group_id!r} mixes generations: line seq {event.seq} "
                f"in {where} carries generation {event.gen!r}, the stream's is "
                f"{track.generation!r}; refusing it - the publisher must republish the whole "
                "directory (`lcg publish --reset` for a replaced stream)"
            )
        if event.seq != track.next_seq:
            kind = "gap" if event.seq > track.next_seq else "regression"
            raise _Defect(
                f"seq {kind} in group {group_id!r}: {where} has seq {event.seq} where "
                f"{track.next_seq} was expected; the replica stops at seq "
                f"{track.next_seq - 1} rather than guess - the publisher must republish the "
                "whole stream directory"
            )
        return event

    # ---- lag -------------------------------------------------------------------------------

    def _refresh_lag(self, group_id: str, status: ReplicaStatus) -> None:
        gdir = self.source / encode_group(group_id)
        status.applied_seq = self.ws.projector.applied_seq(group_id)
        source_max: int | None = None
        source_ts: str | None = None
        for seg in reversed(list_segments(gdir)):
            try:
                tail = read_tail(seg.path)
            except FileNotFoundError:
                continue
            if tail.last_line is None:
                continue
            decoded = decode_line(tail.last_line)
            if decoded.seq is not None:
                source_max = decoded.seq
                source_ts = decoded.event.ts if decoded.event is not None else None
                break
        status.source_max_seq = source_max
        applied = -1 if status.applied_seq is None else status.applied_seq
        if source_max is None or applied >= source_max:
            status.lag_events = 0
            status.lag_seconds = 0.0
            return
        status.lag_events = source_max - applied
        newest = _parse_ts(source_ts)
        done = _parse_ts(status.last_event_ts)
        if newest is not None and done is not None:
            status.lag_seconds = round(max(0.0, newest - done), 6)
        elif newest is not None:
            status.lag_seconds = round(max(0.0, time.time() - newest), 6)

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

    def run(self, stop: threading.Event, *, step_ms: int = 50, rescan_ms: int = 2000) -> None:
        """Follow until ``stop`` is set: a pass now, then one per batch of relevant changes.

        Changes are grouped until ``step_ms`` pass without another (the debounce); a pass also
        runs every ``rescan_ms`` without changes, in case an event was missed.
        """
        import watchfiles

        self.source.mkdir(parents=True, exist_ok=True)
        self.sync()
        for _changes in watchfiles.watch(
            self.source.resolve(),
            watch_filter=lambda _change, path: self.relevant(path),
            debounce=max(step_ms * 10, 500),
            step=step_ms,
            stop_event=stop,
            rust_timeout=rescan_ms,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            if stop.is_set():
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
