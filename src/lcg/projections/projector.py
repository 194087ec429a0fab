"""The projector: replays a group's stream into its projections (graph, text, vectors).

Each projection keeps its own position ``(applied seq, generation)`` per group, so each is fed
only the events past its own position: after a crash, the graph (transactional) may be ahead of
the text and vector snapshots, and each catches up independently.

A replay reads the stream in batches of ``batch_size`` events, derives the text/vector ops of
the batch, embeds the batch's new texts in one call (through the cache), and applies the batch
to every projection, in the order of the ``Projections`` sequence (``_feed``). Memory is
bounded by the batch (and one segment file), not the stream.

Rebuild semantics follow the reference (``knowledge_rebuild_from_wal``):

1. a group with no stream files → ``No WAL files found at <dir>`` (another writer's files named);
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
* ``generation``: the generation sidecar (``GENERATION_FILE``) and the stream's lines name
  different generations (a reset is detected only when both agree; this is never purged);
* ``skipped``: a replay skipped seqs (a gap, a corrupt, unparseable, unknown, future-version or
  foreign-generation line, an event failing to apply). Its ``success`` is false unless the
  caller passes ``accept_loss``. This kind is kept in ``damage_file`` across restarts (a later
  catch-up starts past the hole and would not see it) until a full replay reads the stream
  clean or accepts the loss;
* ``foreign``: an event names a row another group holds, or another group (ADR 0196): the
  group stops before it, every projection alike. Kept in ``damage_file`` too, met again by
  every feed until one passes it (a replay that accepts the loss skips such events).
"""

from __future__ import annotations

import time
from pathlib import Path

from lcg import telemetry
from lcg.errors import GenerationError, RebuildRefusedError, StreamError
from lcg.events import (
    Event,
    Position,
    ReadReport,
    StreamReader,
    WalStore,
    effective_generation,
    list_segments,
    stream_files_missing,
)
from lcg.projections._feed import Feeder
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
from lcg.projections._stream_damage import (
    foreign_rows,
    generation_split,
    lost_tail,
    unknown_generation,
)
from lcg.projections.base import ForeignRowError, Projections
from lcg.projections.embedding import TextEmbedder

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
        projections: Projections,
        embedder: TextEmbedder,
        *,
        batch_size: int = 64,
        failure_samples: int = 10,
        fidelity_threshold: float = 0.90,
        bulk_load: bool = True,
        damage_file: Path | None = None,
        cleared_file: Path | None = None,
        resets_file: Path | None = None,
    ) -> None:
        self.store = store
        #: The projections, in the order each batch is applied to them.
        self.projections = projections
        self.embedder = embedder
        self._feeder = Feeder(
            store,
            projections,
            embedder,
            batch_size=batch_size,
            failure_samples=failure_samples,
            fidelity_threshold=fidelity_threshold,
            bulk_load=bulk_load,
        )
        self._since_save = 0
        self._last_save = time.monotonic()
        #: Groups whose embedding projections could not embed; they lag until it works.
        self.embedder_failures = self._feeder.embedder_failures
        #: Degraded groups and why (``skipped`` damage kept in ``damage_file``).
        self._damage = DamageBook(damage_file)
        #: The floors of ``clear_projections`` (kept in ``cleared_file``).
        self._cleared = ClearedFloors(cleared_file)
        #: The resets a catch-up applied that no rebuild has reported (kept in ``resets_file``).
        self._resets = PendingResets(resets_file)
        #: Snapshots found damaged on open: rebuilt by the catch-up.
        self.file_repairs = FileRepairs(self._damage)
        for proj in projections:
            self.file_repairs.note(proj.name, proj.damaged)

    @property
    def bulk_load(self) -> bool:
        """Replay into an empty group by the record's bulk path (False: the bench's baseline)."""
        return self._feeder.bulk_load

    @bulk_load.setter
    def bulk_load(self, value: bool) -> None:
        self._feeder.bulk_load = value

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
                record=self.projections.record.name,
                embedding={p.name for p in self.projections if p.capabilities.embeds},
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
            self.projections.purge_group(group_id)
            self._feeder.blocked.discard(group_id)
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
        split = generation_split(self.store, self.projections, group_id)
        if split is not None:
            self._damage.set(group_id, "generation", split)
            return split
        behind = (
            None
            if generation is None
            else lost_tail(self.store, self.projections, group_id, generation)
        )
        if behind is not None:
            self._damage.set(group_id, "behind", behind)
        return behind

    def _refused(self, group_id: str, result: ReplayResult | None, *, to_end: bool) -> None:
        """Degrade ``group_id`` if its last feed stopped at an event that reaches another
        group's rows (ADR 0196); heal it once a feed through the stream's end did not."""
        refusal = self._feeder.refusals.get(group_id)
        if refusal is None:
            if to_end:
                self._damage.clear(group_id, ("foreign",))
            return
        reason = foreign_rows(self.store, refusal)
        self._damage.set(group_id, "foreign", reason)
        if result is not None:
            result.success = False
            result.warnings.append(reason)
            last = self.store.bounds(group_id).max_seq if result.to_seq is None else result.to_seq
            if last is not None and last >= refusal.seq:  # none of them is applied
                add_skip(result, refusal.seq, last)

    def refusal(self, group_id: str) -> str | None:
        """The event ``group_id``'s last feed stopped at, and why (``None``: it did not)."""
        refusal = self._feeder.refusals.get(group_id)
        return None if refusal is None else str(refusal)

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

    def positions(self, group_id: str) -> dict[str, Position]:
        """Each projection's position in ``group_id``, by name."""
        return {p.name: p.position(group_id) for p in self.projections}

    def applied_seq(self, group_id: str) -> int | None:
        """The lowest applied seq over the projections (``None`` if one has applied nothing).

        A number to report (status, lag, verify), as the reference's ``applied_seq``: it is
        not compared with a stream here, so it takes each position's seq as it stands.
        """
        seqs = [p.position(group_id).seq for p in self.projections]
        if any(s is None for s in seqs):
            return None
        return min(s for s in seqs if s is not None)

    def group_has_data(self, group_id: str) -> bool:
        """True if any projection holds a position for ``group_id``."""
        return any(not p.position(group_id).empty for p in self.projections)

    def group_has_rows(self, group_id: str) -> bool:
        """True if the projection of record (the graph) holds a row of ``group_id``."""
        return self.projections.record.holds_rows(group_id)

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
                raise GenerationError(unknown_generation(self.store, group_id))
            return result
        for proj in self.projections:
            gen = proj.position(group_id).stale_generation(generation)
            if gen is not None:
                result.reset_detected = True
                result.previous_generation = gen
                proj.purge_group(group_id)
                self._note_reset(proj.name, group_id, gen, generation)
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
        replayed = self._feeder.replay(group_id, generation, from_seq, None, result, progress)
        self._refused(group_id, replayed, to_end=True)
        self._judge(group_id, replayed, full=full, accept_loss=False)
        return replayed

    def catch_up_all(self, progress: ProgressFn | None = None) -> dict[str, ReplayResult]:
        """``catch_up`` every group of the stream store; then save the snapshots."""
        results = {g: self.catch_up(g, progress) for g in self.store.groups()}
        self.settle_files()  # damaged snapshots of groups without a stream: nothing rebuilt
        self.save()
        return results

    def apply_live(self, group_id: str, events: list[Event]) -> None:
        """Apply just-appended ``events``; catch up from the stream first if a projection lags.

        An event that reaches another group's rows stops the group before it (degraded) and
        is raised (``ForeignRowError``) once what came before it is applied.
        """
        if not events:
            return
        first, generation = events[0].seq, events[0].gen
        self._feeder.refusals.pop(group_id, None)
        lagging = [
            p for p in self.projections if not p.position(group_id).continues(first, generation)
        ]
        # Vectors left to the drainer (ADR 0206): the others apply at once, no replay.
        if lagging and not self._feeder.vectors_follow(group_id, generation, lagging):
            self.catch_up(group_id)
        else:
            result = ReplayResult(group_id=group_id, generation=generation)
            fed = [p for p in self.projections if p not in lagging] if lagging else None
            if not lagging:
                self._feeder.blocked.discard(group_id)
            try:
                self._feeder.apply(group_id, generation, events, result, fed)
            except ForeignRowError:
                pass  # kept in ``refusals``: judged, then raised once the rest is saved
            self._refused(group_id, None, to_end=True)
        self._since_save += len(events)
        if (
            self._since_save >= _SAVE_EVERY_EVENTS
            or time.monotonic() - self._last_save >= _SAVE_EVERY_S
        ):
            self.save()
        refusal = self._feeder.refusals.get(group_id)
        if refusal is not None:
            raise refusal

    def save(self) -> None:
        """Save every projection (the text and vector snapshots; the graph commits as it
        goes) and the embedding cache."""
        for proj in self.projections:
            proj.save()
        flush = getattr(self.embedder, "flush", None)
        if callable(flush):
            flush()
        self._since_save = 0
        self._last_save = time.monotonic()

    # ---- rebuild -------------------------------------------------------------------------

    def check_rebuild(
        self,
        group_id: str,
        *,
        from_seq: int = 0,
        to_seq: int | None = None,
        dry_run: bool = False,
        force_clear: bool = False,
    ) -> ReplayResult:
        """What a rebuild with these arguments would do, or its refusal, changing nothing.

        Raises as ``rebuild`` would before it replays (steps 1 to 4 above): ``StreamError``
        with no stream files, ``GenerationError`` on a split or an unknown generation under a
        recorded position, ``RebuildRefusedError`` onto a group that holds data. Returns the
        result the replay starts from (``reset_detected``, ``previous_generation``, the
        stream's ``generation``; a real rebuild after a reset replays from seq 0). The one
        place of these rules: ``rebuild`` starts with it, and the service asks it before it
        starts a rebuild job, so its caller gets the refusal, not a job that fails at once.
        """
        gdir = self.store.group_dir(group_id)
        if not list_segments(gdir):  # none, or another writer's (ADR 0212)
            raise StreamError(stream_files_missing(gdir, group_id))
        split = generation_split(self.store, self.projections, group_id)
        if split is not None and not dry_run:
            # A rebuild would take the sidecar's word, purge, and replay none of the lines.
            raise GenerationError(split)
        # The stream on disk decides (§3.9 step 3), not the generation an open writer cached:
        # a stream replaced under a running service is a reset.
        generation = effective_generation(gdir)
        recorded = self.projections.record.position(group_id)
        if not recorded.empty and generation is None:
            raise GenerationError(unknown_generation(self.store, group_id))
        result = ReplayResult(
            group_id=group_id,
            from_seq=from_seq,
            to_seq=to_seq,
            dry_run=dry_run,
            generation=generation,
        )
        recorded_gen = recorded.generation
        pending = self._resets.groups.get(group_id)
        if not recorded.empty and recorded_gen != generation:
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
            if not dry_run:
                # A reset purges the group and replays it in full, whatever was asked.
                result.from_seq, result.to_seq = 0, None
            return result
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
        return result

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
        if not dry_run and self.store.has_writer(group_id):
            # A writer that cached another generation than the stream's (a stream replaced
            # under a running service) must not append to it.
            gdir = self.store.group_dir(group_id)
            if self.store.writer(group_id).generation != effective_generation(gdir):
                self.store.close_writer(group_id)
        result = self.check_rebuild(
            group_id, from_seq=from_seq, to_seq=to_seq, dry_run=dry_run, force_clear=force_clear
        )
        generation = result.generation
        if result.reset_detected:
            if dry_run:
                result.warnings.append(
                    f"generation changed from {result.previous_generation} to {generation}: a "
                    "real rebuild "
                    "purges the group and replays it in full"
                )
                return self._dry_run(group_id, generation, 0, None, result, accept_loss)
            from_seq, to_seq, force_clear = 0, None, True
        if dry_run:
            return self._dry_run(group_id, generation, from_seq, to_seq, result, accept_loss)
        if generation is None:
            raise GenerationError(unknown_generation(self.store, group_id))
        if force_clear or from_seq == 0:
            # A replay from seq 0 starts from nothing: positions left by a purge that emptied
            # the group would otherwise make it skip what it was asked to replay.
            self.projections.purge_group(group_id)
        self.forget_cleared(group_id)
        full = from_seq == 0 and to_seq is None and not self.group_has_data(group_id)
        replayed = self._feeder.replay(
            group_id, generation, from_seq, to_seq, result, progress, skip_foreign=accept_loss
        )
        self.save()
        self._refused(group_id, replayed, to_end=to_seq is None)
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
        self._feeder.fold(result, report)
        result.duration_ms = int((time.monotonic() - started) * 1000)
        self._judge(group_id, result, full=False, accept_loss=accept_loss)
        return result

    # ---- helpers -------------------------------------------------------------------------

    def _note_reset(self, name: str, group_id: str, old: str, new: str) -> None:
        telemetry.emit(
            telemetry.ServiceNotice(
                kind="reset_detected",
                reason=f"{name} projection of group {group_id!r}: generation {old} -> {new}",
            )
        )
