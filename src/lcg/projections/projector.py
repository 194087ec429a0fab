"""The projector: replays a group's stream into the graph, text and vector projections.

Each projection keeps its own position ``(applied seq, generation)`` per group, so each is fed
only the events past its own position: after a crash, the graph (transactional) may be ahead of
the text and vector snapshots, and each catches up independently.

A replay reads the stream in batches of ``batch_size`` events, derives the text/vector ops of
the batch, embeds the batch's new texts in one call (through the cache), and applies the batch
to every projection. Memory is bounded by the batch (and one segment file), not the stream.

Rebuild semantics follow the reference (``knowledge_rebuild_from_wal``):

1. a group with no stream files → ``No WAL files found at <dir>``;
2. a recorded position and an unknown stream generation → refused (``GenerationError``);
3. a recorded generation that differs from the stream's → reset: purge, replay in full; a
   reset a catch-up already applied (at open, or to a stream replaced under the service) is
   noted (``resets_file``) and the next rebuild reports it and replays in full (ADR 0173);
4. ``from_seq == 0`` into a group that holds data → refused unless ``force_clear``;
5. events failing to apply are isolated by bisection, counted and sampled; the rest apply.

Damage is reported, never absorbed (ADR 0076). A group is *degraded* — served as its
projections hold it, its writes refused until the operator acts — when

* ``behind``: a projection has applied a seq the stream no longer holds (a lost tail), so the
  writer would hand out seqs the projections take as applied;
* ``generation``: ``.wal-generation.json`` and the stream's lines name different generations
  (a reset is detected only when both agree; this is never purged);
* ``skipped``: a replay skipped seqs (a gap, a corrupt, unparseable, unknown, future-version or
  foreign-generation line, an event failing to apply). Its ``success`` is false unless the
  caller passes ``accept_loss``. This kind is kept in ``damage_file`` across restarts (a later
  catch-up starts past the hole and would not see it) until a full replay reads the stream
  clean or accepts the loss.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from lcg import telemetry
from lcg.errors import (
    EmbedderError,
    GenerationError,
    ProjectionError,
    ProjectionIOError,
    RebuildRefusedError,
    StreamError,
)
from lcg.events.generation import effective_generation, stream_generation
from lcg.events.layout import GENERATION_FILE
from lcg.events.model import Event
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.segments import list_segments
from lcg.events.store import WalStore
from lcg.projections._group_records import (
    ClearedFloor,
    ClearedFloors,
    DamageBook,
    DamageKind,
    FileRepairs,
    GroupDamage,
)
from lcg.projections._pending_resets import PendingReset, PendingResets
from lcg.projections._replay_report import (
    FailedSample,
    ProgressFn,
    ReplayProgress,
    ReplayResult,
    add_skip,
    describe_skips,
)
from lcg.projections.base import EventProjection, OpProjection, VectorOpProjection
from lcg.projections.embedding import TextEmbedder
from lcg.projections.ops import Op, derive_ops, texts_to_embed

__all__ = [
    "ClearedFloor",
    "DamageKind",
    "FailedSample",
    "GroupDamage",
    "ProgressFn",
    "Projector",
    "ReplayProgress",
    "ReplayResult",
]

_SAVE_EVERY_EVENTS = 2000
_SAVE_EVERY_S = 5.0


class Projector:
    """Feeds stream events to the projections and keeps their positions."""

    def __init__(
        self,
        store: WalStore,
        graph: EventProjection,
        text: OpProjection,
        vectors: VectorOpProjection,
        embedder: TextEmbedder,
        *,
        batch_size: int = 64,
        failure_samples: int = 10,
        fidelity_threshold: float = 0.10,
        bulk_load: bool = True,
        damage_file: Path | None = None,
        cleared_file: Path | None = None,
        resets_file: Path | None = None,
    ) -> None:
        self.store = store
        self.graph = graph
        self.text = text
        self.vectors = vectors
        self.embedder = embedder
        self.batch_size = max(1, batch_size)
        self.failure_samples = failure_samples
        self.fidelity_threshold = fidelity_threshold
        #: Replay into an empty group by the graph's bulk path (False: always batch by batch,
        #: the baseline the replay bench compares it with).
        self.bulk_load = bulk_load
        self._since_save = 0
        self._last_save = time.monotonic()
        #: Groups whose vector projection could not embed; they lag until the embedder works.
        self.embedder_failures: dict[str, str] = {}
        # Groups whose vectors stopped mid-replay: later batches must not skip past the gap.
        self._vectors_blocked: set[str] = set()
        #: Degraded groups and why (``skipped`` damage kept in ``damage_file``).
        self._damage = DamageBook(damage_file)
        #: The floors of ``clear_projections`` (kept in ``cleared_file``).
        self._cleared = ClearedFloors(cleared_file)
        #: The resets a catch-up applied that no rebuild has reported (kept in ``resets_file``).
        self._resets = PendingResets(resets_file)
        #: Text and vector snapshots found damaged on open: rebuilt by the catch-up.
        self.file_repairs = FileRepairs(self._damage)
        self.file_repairs.note("text", text.damaged)
        self.file_repairs.note("vectors", vectors.damaged)

    def settle_files(self, group_id: str | None = None, *, attempted: bool = True) -> None:
        """Note the damaged snapshots rebuilt since open; degrade the groups still lacking.

        ``group_id`` ``None``: every group with a damaged snapshot. ``attempted=False``
        (a workspace opened only to look): no catch-up ran, so none is rebuilt.
        """
        for g in [group_id] if group_id is not None else list(self.file_repairs.pending):
            self.file_repairs.settle(
                g,
                self.positions(g),
                attempted=attempted,
                embedder_down=g in self.embedder_failures,
            )

    # ---- cleared floors (knowledge_clear_all with preserve_wal, ADR 0100) ------------------

    def cleared_through(self, group_id: str) -> int | None:
        """The last seq a ``clear_projections`` left out of ``group_id``; ``None`` if none."""
        floor = self._cleared.get(group_id)
        return None if floor is None else floor.through_seq

    def clear_projections(self, group_ids: list[str]) -> None:
        """Empty the projections of ``group_ids`` while their streams stay as they are.

        Each group's stream end is recorded first, so a catch-up (a later write, a restart)
        applies only what is appended after the clear; ``rebuild`` replays the rest.
        """
        floors: dict[str, ClearedFloor | None] = {}
        for group_id in group_ids:
            end = self.store.bounds(group_id).max_seq
            floors[group_id] = (
                None
                if end is None
                else ClearedFloor(through_seq=end, generation=self.store.generation(group_id))
            )
        self._cleared.record(floors)
        for group_id in group_ids:
            for _, proj in self._projections():
                proj.purge_group(group_id)
            self._vectors_blocked.discard(group_id)
            self.embedder_failures.pop(group_id, None)
            self.file_repairs.forget(group_id)
        self.save()

    def forget_cleared(self, group_id: str | None = None) -> None:
        """Drop the cleared floor of ``group_id`` (of every group if ``None``)."""
        self._cleared.forget(group_id)

    # ---- resets a catch-up applied (ADR 0173) ----------------------------------------------

    def pending_reset(self, group_id: str) -> PendingReset | None:
        """The reset of ``group_id`` a catch-up applied and no rebuild has reported yet."""
        return self._resets.get(group_id, effective_generation(self.store.group_dir(group_id)))

    def forget_resets(self) -> None:
        """Drop every unreported reset (the streams were deleted: ``clear_all``)."""
        self._resets.forget()

    # ---- damage --------------------------------------------------------------------------

    @property
    def damage(self) -> dict[str, GroupDamage]:
        """Degraded groups and why; writes to them are refused (``Workspace.commit``)."""
        return self._damage.groups

    def forget_damage(self) -> None:
        """Drop every group's damage (its streams and projections were deleted: ``clear_all``)."""
        self._damage.forget()
        self.file_repairs.forget()

    def degraded_reason(self, group_id: str) -> str | None:
        """Why ``group_id`` is degraded, or ``None`` when it is not."""
        return self._damage.reason(group_id)

    def _generation_split(self, group_id: str) -> str | None:
        """The reason, if the sidecar and the lines name different generations."""
        gdir = self.store.group_dir(group_id)
        witnesses = stream_generation(gdir)
        if not witnesses.split:
            return None
        sidecar, lines = witnesses.sidecar, witnesses.lines
        held = {gen for _, p in self._projections() if (gen := p.position(group_id)[1])}
        kept = ", ".join(sorted(held)) or "none"
        return (
            f"group {group_id!r}: {gdir / GENERATION_FILE} names generation {sidecar!r} but "
            f"the stream's lines carry {lines!r}; the projections (generation {kept}) are kept "
            "as they are and served, and writes are refused. Restore the sidecar from the "
            "stream's publication, or delete it (the next writer restores it from the lines), "
            "then restart lcg"
        )

    def _behind(self, group_id: str, generation: str) -> str | None:
        """The reason, if a projection has applied a seq past the end of the stream."""
        max_seq = self.store.bounds(group_id).max_seq
        end = -1 if max_seq is None else max_seq
        for name, proj in self._projections():
            seq, gen = proj.position(group_id)
            if gen == generation and seq is not None and seq > end:
                stream_end = "holds no event" if max_seq is None else f"ends at seq {max_seq}"
                return (
                    f"group {group_id!r}: the stream {stream_end} but the {name} projection "
                    f"has applied seq {seq}; the stream lost its last {seq - end} event(s) (a "
                    "torn line quarantined, power loss under LCG_WAL_FSYNC=batch|off, or an "
                    "older copy restored). New writes would reuse those seqs, so they are "
                    f"refused: rebuild from what the stream holds with `lcg replay --group "
                    f"{group_id} --force-clear`, or restore the stream's lost tail"
                )
        return None

    def assess_all(self) -> dict[str, str]:
        """Look for a lost tail or a generation split in every group, applying nothing."""
        found = {}
        for group_id in self.store.groups():
            reason = self._assess(group_id, self.store.generation(group_id))
            if reason is not None:
                found[group_id] = reason
        return found

    def _assess(self, group_id: str, generation: str | None) -> str | None:
        """Re-derive the ``behind`` and ``generation`` damage of ``group_id``; its reason."""
        self._damage.clear(group_id, ("behind", "generation"))
        split = self._generation_split(group_id)
        if split is not None:
            self._damage.set(group_id, "generation", split)
            return split
        behind = None if generation is None else self._behind(group_id, generation)
        if behind is not None:
            self._damage.set(group_id, "behind", behind)
        return behind

    def _judge(self, group_id: str, result: ReplayResult, *, full: bool, accept_loss: bool) -> None:
        """Set ``success`` from what the replay skipped; degrade or heal the group."""
        damaged = bool(
            result.lines_skipped
            or result.failed_lines
            or result.seq_gaps
            or result.seq_regressions
            or result.seqs_skipped
        )
        if not damaged:
            if full and not result.dry_run:
                self._damage.clear(group_id, ("skipped",))
            return
        what = describe_skips(result)
        if accept_loss:
            result.loss_accepted = True
            result.warnings.append(f"loss accepted: {what}")
            if not result.dry_run:
                self._damage.clear(group_id, ("skipped",))
            return
        result.success = False
        if result.dry_run:
            return
        reason = (
            f"group {group_id!r}: replaying its stream skipped {what}; the projections lack "
            f"those events. See them with `lcg wal verify --group {group_id}`, then restore the "
            "stream from a publication or backup, or accept the loss with `lcg replay --group "
            f"{group_id} --force-clear --accept-loss`"
        )
        result.warnings.append(reason)
        current = self._damage.groups.get(group_id)
        if current is None or current.kind == "skipped":
            self._damage.set(group_id, "skipped", reason)

    # ---- positions -----------------------------------------------------------------------

    def _projections(self) -> list[tuple[str, EventProjection | OpProjection | VectorOpProjection]]:
        return [("graph", self.graph), ("text", self.text), ("vectors", self.vectors)]

    def positions(self, group_id: str) -> dict[str, tuple[int | None, str | None]]:
        """Each projection's ``(applied seq, generation)`` for ``group_id``."""
        return {name: p.position(group_id) for name, p in self._projections()}

    def applied_seq(self, group_id: str) -> int | None:
        """The lowest applied seq over the projections (``None`` if one has applied nothing)."""
        seqs = [p.position(group_id)[0] for _, p in self._projections()]
        if any(s is None for s in seqs):
            return None
        return min(s for s in seqs if s is not None)

    def group_has_data(self, group_id: str) -> bool:
        """True if any projection holds a position for ``group_id``."""
        return any(p.position(group_id)[0] is not None for _, p in self._projections())

    def group_has_rows(self, group_id: str) -> bool:
        """True if the graph holds an entity, episode or edge of ``group_id``."""
        counts = self.graph.counts(group_id)
        return bool(counts.entities or counts.episodes or counts.edges)

    # ---- catching up ---------------------------------------------------------------------

    def catch_up(self, group_id: str, progress: ProgressFn | None = None) -> ReplayResult:
        """Apply every event of ``group_id`` past each projection's position.

        A projection whose recorded generation differs from the stream's is purged and
        replayed in full (a reset). A recorded position with an unknown stream generation is
        refused with ``GenerationError``. A projection whose snapshot was damaged is rebuilt
        here (it has no position) and settled (``settle_files``).
        """
        result = self._catch_up(group_id, progress)
        self.settle_files(group_id)
        return result

    def _catch_up(self, group_id: str, progress: ProgressFn | None) -> ReplayResult:
        generation = self.store.generation(group_id)
        result = ReplayResult(group_id=group_id, generation=generation)
        damage = self._assess(group_id, generation)
        if damage is not None:
            # Nothing is purged or applied: the projections stay as the last good state.
            result.success = False
            result.warnings.append(damage)
            return result
        if generation is None:
            if self.group_has_data(group_id) and list_segments(self.store.group_dir(group_id)):
                raise GenerationError(self._unknown_generation_message(group_id))
            return result
        for name, proj in self._projections():
            seq, gen = proj.position(group_id)
            if gen is not None and gen != generation:
                result.reset_detected = True
                result.previous_generation = gen
                proj.purge_group(group_id)
                self._note_reset(name, group_id, gen, generation)
        if result.previous_generation is not None:
            # Kept for the next rebuild, which reports it as the reference's would (§3.9).
            self._resets.note(group_id, result.previous_generation, generation)
        # A group cleared with its stream kept stays cleared: only later events apply.
        from_seq = 0
        floor = self._cleared.get(group_id)
        if floor is not None:
            if floor.generation not in (None, generation) or result.reset_detected:
                self.forget_cleared(group_id)
            else:
                from_seq = floor.through_seq + 1
        full = from_seq == 0 and not self.group_has_data(group_id)
        replayed = self._replay(group_id, generation, from_seq, None, result, progress)
        self._judge(group_id, replayed, full=full, accept_loss=False)
        return replayed

    def catch_up_all(self, progress: ProgressFn | None = None) -> dict[str, ReplayResult]:
        """``catch_up`` every group of the stream store; then save the snapshots."""
        results = {g: self.catch_up(g, progress) for g in self.store.groups()}
        self.settle_files()  # damaged snapshots of groups without a stream: nothing rebuilt
        self.save()
        return results

    def apply_live(self, group_id: str, events: list[Event]) -> None:
        """Apply just-appended ``events``; catch up from the stream first if a projection lags."""
        if not events:
            return
        first = events[0].seq
        generation = events[0].gen
        lagging = False
        for _, proj in self._projections():
            seq, gen = proj.position(group_id)
            if gen not in (None, generation) or (-1 if seq is None else seq) != first - 1:
                lagging = True
        if lagging:
            self.catch_up(group_id)
        else:
            result = ReplayResult(group_id=group_id, generation=generation)
            self._vectors_blocked.discard(group_id)
            self._apply_batch(group_id, generation, events, result)
        self._since_save += len(events)
        if (
            self._since_save >= _SAVE_EVERY_EVENTS
            or time.monotonic() - self._last_save >= _SAVE_EVERY_S
        ):
            self.save()

    def save(self) -> None:
        """Snapshot the text and vector projections (the graph commits as it goes)."""
        self.text.save()
        self.vectors.save()
        flush = getattr(self.embedder, "flush", None)
        if callable(flush):
            flush()
        self._since_save = 0
        self._last_save = time.monotonic()

    # ---- rebuild -------------------------------------------------------------------------

    def rebuild(
        self,
        group_id: str,
        *,
        from_seq: int = 0,
        to_seq: int | None = None,
        dry_run: bool = False,
        force_clear: bool = False,
        accept_loss: bool = False,
        progress: ProgressFn | None = None,
    ) -> ReplayResult:
        """Rebuild ``group_id``'s projections from its stream, as the reference's rebuild.

        ``success`` is false when the replay skipped any seq, unless ``accept_loss``.
        """
        gdir = self.store.group_dir(group_id)
        if not list_segments(gdir):
            raise StreamError(f"No WAL files found at {gdir}")
        split = self._generation_split(group_id)
        if split is not None and not dry_run:
            # A rebuild would take the sidecar's word, purge, and replay none of the lines.
            raise GenerationError(split)
        # The stream on disk decides (§3.9 step 3), not the generation an open writer cached:
        # a stream replaced under a running service is a reset.
        generation = effective_generation(gdir)
        if not dry_run and self.store.has_writer(group_id):
            if self.store.writer(group_id).generation != generation:
                self.store.close_writer(group_id)
        recorded = self.graph.position(group_id)
        if recorded[0] is not None and generation is None:
            raise GenerationError(self._unknown_generation_message(group_id))
        result = ReplayResult(
            group_id=group_id,
            from_seq=from_seq,
            to_seq=to_seq,
            dry_run=dry_run,
            generation=generation,
        )
        recorded_gen = recorded[1]
        pending = self._resets.groups.get(group_id)
        if recorded[0] is not None and recorded_gen != generation:
            result.reset_detected = True
            result.previous_generation = (
                # A reset noted and not reported, then another: the reference's recorded
                # generation would still be the first one.
                pending.previous_generation
                if pending is not None and pending.generation == recorded_gen
                else recorded_gen
            )
        elif to_seq is None and (noted := self._resets.get(group_id, generation)) is not None:
            # Re-hydrated by a catch-up already (ADR 0173): reported here, replayed in full.
            # A bounded replay (a replica's, verify's) replays what it names and leaves the
            # report to the next open-ended rebuild.
            result.reset_detected = True
            result.previous_generation = noted.previous_generation
        if result.reset_detected:
            if dry_run:
                result.warnings.append(
                    f"generation changed from {result.previous_generation} to {generation}: a "
                    "real rebuild "
                    "purges the group and replays it in full"
                )
                return self._dry_run(group_id, generation, 0, None, result, accept_loss)
            from_seq, to_seq, force_clear = 0, None, True
            result.from_seq, result.to_seq = 0, None
        # As the reference (§3.9 step 4): the group's rows decide, not a recorded position,
        # so an emptied group (delete_by_group, clear_all) can be replayed from seq 0.
        if from_seq == 0 and self.group_has_rows(group_id):
            if dry_run:
                raise RebuildRefusedError(
                    f"group {group_id!r} already holds data; a dry run from seq 0 would describe "
                    "a replay onto it - pass from_seq past its applied seq, or purge it first"
                )
            if not force_clear:
                raise RebuildRefusedError(
                    f"group {group_id!r} already holds data; pass force_clear=true to purge and "
                    "replay it, or delete it with knowledge_delete_by_group first"
                )
        if dry_run:
            return self._dry_run(group_id, generation, from_seq, to_seq, result, accept_loss)
        if generation is None:
            raise GenerationError(self._unknown_generation_message(group_id))
        if force_clear or from_seq == 0:
            # A replay from seq 0 starts from nothing: positions left by a purge that emptied
            # the group would otherwise make it skip what it was asked to replay.
            for _, proj in self._projections():
                proj.purge_group(group_id)
        self.forget_cleared(group_id)
        full = from_seq == 0 and to_seq is None and not self.group_has_data(group_id)
        replayed = self._replay(group_id, generation, from_seq, to_seq, result, progress)
        self.save()
        if result.reset_detected or to_seq is None:
            self._resets.forget(group_id)  # reported by this result, or replayed past it
        self._judge(group_id, replayed, full=full, accept_loss=accept_loss)
        self._assess(group_id, generation)
        self.settle_files(group_id)
        return replayed

    def _dry_run(
        self,
        group_id: str,
        generation: str | None,
        from_seq: int,
        to_seq: int | None,
        result: ReplayResult,
        accept_loss: bool = False,
    ) -> ReplayResult:
        started = time.monotonic()
        report = ReadReport()
        reader = StreamReader(self.store.group_dir(group_id), generation=generation)
        for batch in reader.batches(from_seq, to_seq, batch_size=256, report=report):
            result.mutations_replayed += len(batch)
            result.last_committed_seq = batch[-1].seq
        self._fold_report(result, report)
        result.duration_ms = int((time.monotonic() - started) * 1000)
        self._judge(group_id, result, full=False, accept_loss=accept_loss)
        return result

    # ---- the replay loop -----------------------------------------------------------------

    def _replay(
        self,
        group_id: str,
        generation: str,
        from_seq: int,
        to_seq: int | None,
        result: ReplayResult,
        progress: ProgressFn | None,
    ) -> ReplayResult:
        started = time.monotonic()
        self._vectors_blocked.discard(group_id)
        positions = [p.position(group_id)[0] for _, p in self._projections()]
        lowest = min(-1 if s is None else s for s in positions)
        start = max(from_seq, lowest + 1)
        if from_seq > lowest + 1 and lowest >= 0:
            result.warnings.append(
                f"from_seq {from_seq} is past applied seq {lowest} + 1: events "
                f"{lowest + 1}..{from_seq - 1} are not applied"
            )
        gdir = self.store.group_dir(group_id)
        files_total = len(list_segments(gdir))
        bounds_max = self.store.bounds(group_id).max_seq
        report = ReadReport()
        reader = StreamReader(gdir, generation=generation)
        stats_before = msgspec.structs.replace(self.embedder.stats)

        def stage(message: str, phase: str) -> None:
            if progress is not None:
                progress(
                    ReplayProgress(
                        group_id=group_id,
                        message=message,
                        phase=phase,
                        mutations_replayed_so_far=result.mutations_replayed,
                        files_processed_so_far=report.files_read,
                        files_total=files_total,
                        failed_lines_so_far=result.failed_lines,
                        last_seq=result.last_committed_seq,
                        max_seq=bounds_max,
                    )
                )

        def note(batch: list[Event]) -> None:
            stage(f"applied through seq {batch[-1].seq}", "apply")

        bulk = (
            self.bulk_load
            and positions[0] is None
            and start == 0
            and self.graph.counts(group_id).entities == 0
        )
        if bulk and self._bulk_load(
            group_id, generation, reader, to_seq, report, result, note, stage
        ):
            # Continue past every line the bulk pass read, bad ones too: counted once.
            start = max((self.graph.position(group_id)[0] or -1) + 1, report.resume_seq)
            report = ReadReport()
            reader = StreamReader(gdir, generation=generation)
            # Only lines appended while the bulk pass ran are left; reading the last file
            # again for none would count it (and its frame) twice (issue 12 item 7).
            end = self.store.bounds(group_id).max_seq
            if to_seq is not None and end is not None:
                end = min(end, to_seq)
            tail = end is not None and start <= end
        else:
            start = max(from_seq, lowest + 1)
            tail = True
        for batch in (
            reader.batches(start, to_seq, batch_size=self.batch_size, report=report) if tail else ()
        ):
            self._apply_batch(group_id, generation, batch, result)
            note(batch)
        self._fold_report(result, report)
        stats = self.embedder.stats
        result.embeddings_recomputed = (
            stats.embeddings_recomputed - stats_before.embeddings_recomputed
        )
        result.embeddings_cached = stats.embeddings_cached - stats_before.embeddings_cached
        result.embeddings_recompute_failed = (
            stats.embeddings_recompute_failed - stats_before.embeddings_recompute_failed
        )
        result.duration_ms = int((time.monotonic() - started) * 1000)
        telemetry.emit(
            telemetry.WalReplayComplete(
                group_id=group_id,
                mutations_replayed=result.mutations_replayed,
                unrecognised_lines=result.unrecognised_lines,
                failed_lines=result.failed_lines,
                unparseable_lines=result.unparseable_lines,
                legacy_skipped_lines=result.legacy_skipped_lines,
                duration_ms=result.duration_ms,
            )
        )
        return result

    def _bulk_load(
        self,
        group_id: str,
        generation: str,
        reader: StreamReader,
        to_seq: int | None,
        report: ReadReport,
        result: ReplayResult,
        note: Callable[[list[Event]], None],
        stage: Callable[[str, str], None],
    ) -> bool:
        """Replay into an empty graph with its bulk path, feeding text and vectors on the way.

        Returns False (graph untouched, counters reset) if the bulk load failed, so the
        caller replays incrementally, isolating the failing events.
        """
        bulk_size = max(self.batch_size, 1024)

        def feed() -> Iterator[list[Event]]:
            for batch in reader.batches(0, to_seq, batch_size=bulk_size, report=report):
                self._apply_side(group_id, generation, batch, result)
                result.mutations_replayed += len(batch)
                result.last_committed_seq = batch[-1].seq
                note(batch)
                yield batch
            stage("all events read; writing the graph", "graph")

        load = getattr(self.graph, "load_group", None)
        if load is None:
            return False
        # Upkeep that a full replay would redo many times runs once, at the end: each live
        # vector enters hnswlib once (not once per revision), BM25 compacts once.
        self.text.begin_bulk(group_id)
        self.vectors.begin_bulk(group_id)
        try:
            load(group_id, generation, feed())
            stage("building the vector indexes", "vectors")
        except ProjectionError as exc:
            result.warnings.append(f"bulk load failed ({exc}); replaying event by event")
            result.mutations_replayed = 0
            result.last_committed_seq = None
            return False
        finally:
            self.text.end_bulk(group_id)
            self.vectors.end_bulk(group_id)
        result.transactions_committed += 1
        # What the bulk pass read is folded in once, after the (empty) incremental pass.
        self._fold_report(result, report)
        return True

    def _apply_batch(
        self, group_id: str, generation: str, batch: list[Event], result: ReplayResult
    ) -> None:
        graph_seq = self.graph.position(group_id)[0]
        graph_events = [e for e in batch if graph_seq is None or e.seq > graph_seq]
        if graph_events:
            self._apply_graph(group_id, generation, graph_events, result)
        self._apply_side(group_id, generation, batch, result)
        result.mutations_replayed += len(batch)
        result.last_committed_seq = batch[-1].seq

    def _apply_side(
        self, group_id: str, generation: str, batch: list[Event], result: ReplayResult
    ) -> None:
        """Apply ``batch`` to the text and vector projections (each past its position)."""
        last = batch[-1].seq
        ops_by_event = [derive_ops(e) for e in batch]
        text_seq = self.text.position(group_id)[0]
        text_ops = _ops_after(batch, ops_by_event, text_seq)
        if text_ops is not None:
            self.text.apply(group_id, generation, last, text_ops)
        vec_seq = self.vectors.position(group_id)[0]
        vec_ops = _ops_after(batch, ops_by_event, vec_seq)
        if vec_ops is not None and group_id not in self._vectors_blocked:
            try:
                vectors = self.embedder.vectors(texts_to_embed(vec_ops))
            except EmbedderError as exc:
                # The vector projection lags until the embedder works; nothing else waits.
                self.embedder_failures[group_id] = str(exc)
                self._vectors_blocked.add(group_id)
                result.warnings.append(f"vectors not updated: {exc}")
            else:
                self.embedder_failures.pop(group_id, None)
                self.vectors.apply(group_id, generation, last, vec_ops, vectors)

    def _apply_graph(
        self, group_id: str, generation: str, events: list[Event], result: ReplayResult
    ) -> None:
        try:
            self.graph.apply(group_id, generation, events)
            result.transactions_committed += 1
            return
        except ProjectionIOError:
            # No room on disk (or Kuzu failed on I/O): no event is to blame, so none is
            # skipped; the graph lags and catches up from the stream later (ADR 0081).
            result.transactions_rolled_back += 1
            raise
        except ProjectionError as exc:
            result.transactions_rolled_back += 1
            if len(events) == 1:
                self._record_failure(result, events[0], exc)
                return
        # Isolate the failing events by bisection so the others still apply, in order.
        mid = len(events) // 2
        self._apply_graph(group_id, generation, events[:mid], result)
        self._apply_graph(group_id, generation, events[mid:], result)

    def _record_failure(self, result: ReplayResult, event: Event, exc: Exception) -> None:
        result.failed_lines += 1
        add_skip(result, event.seq, event.seq)
        kind = event.__struct_config__.tag
        error = str(exc)[:300]
        preview = f"{kind} seq={event.seq}"
        for sample in result.failed_samples:
            if sample.error == error and sample.cypher.split(" ")[0] == kind:
                sample.count += 1
                return
        if len(result.failed_samples) < self.failure_samples:
            result.failed_samples.append(FailedSample(cypher=preview, error=error))
        else:
            result.failed_sample_categories_dropped += 1

    # ---- helpers -------------------------------------------------------------------------

    def _fold_report(self, result: ReplayResult, report: ReadReport) -> None:
        result.wal_files_processed += report.files_read
        result.unparseable_lines += report.unparseable_lines
        result.unrecognised_lines += report.unrecognised_lines
        # A corrupt line is a failed one to the reference's counters, and named on its own.
        result.failed_lines += report.failed_lines + report.corrupt_lines
        result.corrupt_lines += report.corrupt_lines
        result.generation_mismatch_lines += report.generation_mismatch_lines
        result.lines_skipped += report.bad_lines
        result.seq_gaps += report.seq_gaps
        result.seq_regressions += report.seq_regressions
        for first, last in report.skipped_seqs:
            add_skip(result, first, last)
        # Ranges past the report's cap are counted, not listed.
        listed = sum(last - first + 1 for first, last in report.skipped_seqs)
        result.seqs_skipped += report.seqs_skipped - listed
        for sample in report.samples:
            if len(result.failed_samples) < self.failure_samples:
                result.failed_samples.append(
                    FailedSample(
                        cypher=f"{sample.file}:{sample.line_no}",
                        error=f"{sample.problem}: {sample.detail}",
                        count=sample.count,
                    )
                )
            else:
                result.failed_sample_categories_dropped += 1
        bad = (
            result.failed_lines
            + result.unrecognised_lines
            + result.unparseable_lines
            + result.generation_mismatch_lines
        )
        total = bad + result.mutations_replayed
        if total and bad / total > self.fidelity_threshold:
            result.fidelity_warning = (
                f"{100.0 * bad / total:.1f}% of events failed or were skipped (threshold: "
                f"{100.0 * self.fidelity_threshold:.1f}%); the rebuilt graph may be incomplete "
                f"(failed={result.failed_lines}, unrecognised={result.unrecognised_lines}, "
                f"unparseable={result.unparseable_lines}, "
                f"generation_mismatch={result.generation_mismatch_lines})"
            )

    def _unknown_generation_message(self, group_id: str) -> str:
        path: Path = self.store.group_dir(group_id) / ".wal-generation.json"
        return (
            f'group "{group_id}": {path} is absent or unreadable and no line names a generation, '
            "but the projections hold a recorded position; restore the stream's "
            ".wal-generation.json from its publication, or delete the group's projections "
            "(knowledge_delete_by_group) and rebuild"
        )

    def _note_reset(self, name: str, group_id: str, old: str, new: str) -> None:
        telemetry.emit(
            telemetry.ServiceNotice(
                kind="reset_detected",
                reason=f"{name} projection of group {group_id!r}: generation {old} -> {new}",
            )
        )


def _ops_after(
    batch: list[Event], ops_by_event: list[list[Op]], seq: int | None
) -> list[Op] | None:
    """The ops of the events past ``seq``; ``None`` if the projection has them all."""
    if seq is not None and batch[-1].seq <= seq:
        return None
    out: list[Op] = []
    for event, ops in zip(batch, ops_by_event, strict=True):
        if seq is None or event.seq > seq:
            out.extend(ops)
    return out
