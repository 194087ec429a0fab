"""The replay loop: a group's stream read in batches and fed to every projection in order.

Each projection is fed only the events past its own position (after a crash the graph may
be ahead of the snapshots), as a ``Batch`` with the ops derived from those events and, for a
projection that ``embeds``, their embeddings (one embedder call per batch, through the
cache). A projection that ``isolates_events`` has a failing batch bisected so that only the
failing events are skipped. Into an empty group the projection of record may load the
stream in one pass while the others are fed along (its bulk path).

A group's events reach only its own rows (ADR 0196): an event that names another group, or
that a projection refuses because it writes a row another group holds (``ForeignRowError``),
stops the group there — what came before it is applied to every projection, nothing from it
on is, and the refusal is kept in ``refusals`` for the projector to degrade the group. A
replay that accepts loss (``skip_foreign``) skips such events instead, counted as failed;
either way no later projection is fed an event the projection of record refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

import msgspec
import numpy as np

from lcg import telemetry
from lcg.errors import EmbedderError, ProjectionError, ProjectionIOError
from lcg.events import Event, ReadReport, StreamReader, WalStore, list_segments
from lcg.projections._replay_report import (
    ProgressFn,
    ReplayProgress,
    ReplayResult,
    fold_report,
    record_failure,
)
from lcg.projections.base import Batch, ForeignRowError, Projection, Projections
from lcg.projections.embedding import EmbeddingStats, TextEmbedder, deferring_now
from lcg.projections.ops import Op, derive_ops, texts_to_embed

__all__ = ["Feeder"]


class Feeder:
    """Feeds stream batches to the projections, each past its own position."""

    def __init__(
        self,
        store: WalStore,
        projections: Projections,
        embedder: TextEmbedder,
        *,
        batch_size: int,
        failure_samples: int,
        fidelity_threshold: float,
        bulk_load: bool,
    ) -> None:
        self.store = store
        self.projections = projections
        self.embedder = embedder
        self.batch_size = max(1, batch_size)
        self.failure_samples = failure_samples
        self.fidelity_threshold = fidelity_threshold
        self.bulk_load = bulk_load
        #: Groups whose embedding projections could not embed; they lag until it works.
        self.embedder_failures: dict[str, str] = {}
        # Groups whose embeddings stopped mid-replay: later batches must not skip the gap.
        self.blocked: set[str] = set()
        #: The event each group's last feed stopped at: it reaches another group's rows.
        self.refusals: dict[str, ForeignRowError] = {}
        # Groups replayed skipping such events (a replay that accepts loss), not stopping.
        self._skipping: set[str] = set()

    def fold(self, result: ReplayResult, report: ReadReport) -> None:
        """Add the reader's ``report`` to ``result``."""
        fold_report(
            result,
            report,
            samples=self.failure_samples,
            fidelity_threshold=self.fidelity_threshold,
        )

    # ---- one batch -----------------------------------------------------------------------

    def apply(
        self,
        group_id: str,
        generation: str,
        batch: list[Event],
        result: ReplayResult,
        projections: Sequence[Projection] | None = None,
    ) -> None:
        """Apply ``batch`` to every projection (or to ``projections`` of them), in order,
        each past its own position.

        Raises ``ForeignRowError`` (kept in ``refusals``) once what came before the event
        that reaches another group's rows is applied.
        """
        self.refusals.pop(group_id, None)
        fed = self.projections if projections is None else projections
        applied, stop = self._feed(fed, group_id, generation, batch, result)
        if applied:
            result.mutations_replayed += len(applied)
            result.last_committed_seq = applied[-1].seq
        if stop is not None:
            self.refusals[group_id] = stop
            raise stop

    def vectors_follow(self, group_id: str, generation: str, lagging: list[Projection]) -> bool:
        """True when only embedding projections (``lagging``) lag, for a reason already
        known, and this thread's write defers its vectors (ADR 0201): the drainer catches
        them up from the stream, so a live write applies to the others at once rather than
        replaying the group's backlog first — at every part of a sync (ADR 0206)."""
        return (
            group_id in self.embedder_failures
            and deferring_now()
            and all(p.capabilities.embeds for p in lagging)
            and all(p.position(group_id).stale_generation(generation) is None for p in lagging)
        )

    def _rest_is_vectors(self, group_id: str, end: int | None) -> bool:
        """True when every projection that does not embed holds ``group_id`` through
        ``end`` (the stream's last seq when the replay began, under the group's lock)."""
        if end is None:
            return False
        seqs = [p.position(group_id).seq for p in self.projections if not p.capabilities.embeds]
        return all(seq is not None and seq >= end for seq in seqs)

    def _own(
        self, group_id: str, batch: list[Event], result: ReplayResult
    ) -> tuple[list[Event], ForeignRowError | None]:
        """``batch`` without the events that name another group, and the one it stops at."""
        refusal = _first_foreign(group_id, batch)
        if refusal is None:
            return batch, None
        if group_id not in self._skipping:
            return [e for e in batch if e.seq < refusal.seq], refusal
        kept: list[Event] = []
        for event in batch:
            foreign = _first_foreign(group_id, [event])
            if foreign is None:
                kept.append(event)
            else:
                record_failure(result, event, foreign, self.failure_samples)
        return kept, None

    def _feed(
        self,
        projections: Sequence[Projection] | Projections,
        group_id: str,
        generation: str,
        batch: list[Event],
        result: ReplayResult,
    ) -> tuple[list[Event], ForeignRowError | None]:
        """Feed ``batch`` to ``projections``; the events applied (those before a stop, all
        but the skipped ones otherwise) and the refusal it stopped at, if it did."""
        # Skipped events still move every position past them; a stop moves none past it.
        first, end, size = batch[0].seq, batch[-1].seq, len(batch)
        batch, stop = self._own(group_id, batch, result)
        if stop is not None:
            end = stop.seq - 1
        ops_by_event: list[list[Op]] | None = None
        for proj in projections:
            # Of ``generation`` only: catch-up and rebuild purge a projection of another one
            # before they feed it, so finding one here is a fault, not a place to start.
            start = proj.position(group_id).next_seq(generation)
            if not batch or batch[-1].seq < start:
                continue  # it holds the whole batch (or all that is left of it)
            if ops_by_event is None:
                ops_by_event = [derive_ops(e) for e in batch]
            pairs = [(e, ops) for e, ops in zip(batch, ops_by_event, strict=True) if e.seq >= start]
            if proj.capabilities.isolates_events:
                refused = self._apply_isolating(proj, group_id, generation, pairs, result)
                if refused:
                    # Later projections never see an event it refused (nor, stopping, any after).
                    if group_id in self._skipping:
                        dropped = {r.seq for r in refused}
                        keep = [i for i, e in enumerate(batch) if e.seq not in dropped]
                    else:
                        stop = refused[0]
                        end = stop.seq - 1
                        keep = [i for i, e in enumerate(batch) if e.seq < stop.seq]
                    batch = [batch[i] for i in keep]
                    ops_by_event = [ops_by_event[i] for i in keep]
                continue
            ops = [op for _, event_ops in pairs for op in event_ops]
            vectors: dict[str, np.ndarray] = {}
            if proj.capabilities.embeds:
                if group_id in self.blocked:
                    continue
                try:
                    vectors = self.embedder.vectors(texts_to_embed(ops))
                except EmbedderError as exc:
                    # This projection lags until the embedder works; nothing else waits.
                    self.embedder_failures[group_id] = str(exc)
                    self.blocked.add(group_id)
                    result.warnings.append(f"{proj.name} not updated: {exc}")
                    continue
                self.embedder_failures.pop(group_id, None)
            events = [e for e, _ in pairs]
            proj.apply_batch(Batch(group_id, generation, events, ops, end, vectors))
        if stop is None and len(batch) < size:
            self._advance(projections, group_id, generation, (first, end), batch)
        return batch, stop

    def _advance(
        self,
        projections: Sequence[Projection] | Projections,
        group_id: str,
        generation: str,
        span: tuple[int, int],
        kept: list[Event],
    ) -> None:
        """Move past the skipped events of the batch ``span`` each projection that holds
        everything else of it (a batch of no events); one still short of a kept event, or
        held back by the embedder, stays where it is."""
        first, end = span
        last_kept = kept[-1].seq if kept else -1
        for proj in projections:
            if proj.capabilities.embeds and group_id in self.blocked:
                continue
            next_seq = proj.position(group_id).next_seq(generation)
            if first <= next_seq <= end and next_seq > last_kept:
                proj.apply_batch(Batch(group_id, generation, [], [], end))

    def _apply_isolating(
        self,
        proj: Projection,
        group_id: str,
        generation: str,
        pairs: list[tuple[Event, list[Op]]],
        result: ReplayResult,
    ) -> list[ForeignRowError]:
        """Apply ``pairs``, isolating the failing events; the refusals met.

        Stopping (the default), the first refusal ends it: the events before it are applied
        and it is returned alone. Skipping, each refused event is counted as failed.
        """
        events = [e for e, _ in pairs]
        ops = [op for _, event_ops in pairs for op in event_ops]
        try:
            proj.apply_batch(Batch(group_id, generation, events, ops, events[-1].seq))
            result.transactions_committed += 1
            return []
        except ProjectionIOError:
            # No room on disk (or Kuzu failed on I/O): no event is to blame, so none is
            # skipped; the projection lags and catches up from the stream later (ADR 0081).
            result.transactions_rolled_back += 1
            raise
        except ForeignRowError as exc:
            result.transactions_rolled_back += 1
            if group_id not in self._skipping:
                before = [p for p in pairs if p[0].seq < exc.seq]
                found = (
                    self._apply_isolating(proj, group_id, generation, before, result)
                    if before
                    else []
                )
                return found or [exc]
            if len(pairs) == 1:
                record_failure(result, pairs[0][0], exc, self.failure_samples)
                return [exc]
        except ProjectionError as exc:
            result.transactions_rolled_back += 1
            if len(pairs) == 1:
                record_failure(result, pairs[0][0], exc, self.failure_samples)
                return []
        # Isolate the failing events by bisection so the others still apply, in order.
        mid = len(pairs) // 2
        left = self._apply_isolating(proj, group_id, generation, pairs[:mid], result)
        if left and group_id not in self._skipping:
            return left  # stopped: nothing after the refused event applies
        return [*left, *self._apply_isolating(proj, group_id, generation, pairs[mid:], result)]

    # ---- a replay ------------------------------------------------------------------------

    def replay(
        self,
        group_id: str,
        generation: str,
        from_seq: int,
        to_seq: int | None,
        result: ReplayResult,
        progress: ProgressFn | None,
        *,
        skip_foreign: bool = False,
    ) -> ReplayResult:
        """Feed ``group_id``'s events ``from_seq..to_seq`` to every projection past its own.

        It stops at an event that reaches another group's rows (kept in ``refusals``), or
        with ``skip_foreign`` skips each such event, counted as failed.
        """
        self.refusals.pop(group_id, None)
        if skip_foreign:
            self._skipping.add(group_id)
        try:
            return self._replay(group_id, generation, from_seq, to_seq, result, progress)
        finally:
            self._skipping.discard(group_id)

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
        self.blocked.discard(group_id)
        record = self.projections.record
        lowest = min(p.position(group_id).next_seq(generation) for p in self.projections) - 1
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
            and record.position(group_id).empty
            and start == 0
            and record.bulk_loadable(group_id)
        )
        if bulk and self._bulk_load(
            group_id, generation, reader, to_seq, report, result, note, stage
        ):
            # Continue past every line the bulk pass read, bad ones too: counted once.
            start = max(record.position(group_id).next_seq(generation), report.resume_seq)
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
        if tail:
            batches = reader.batches(start, to_seq, batch_size=self.batch_size, report=report)
            self._apply_all(group_id, generation, batches, result, note, bounds_max)
        self.fold(result, report)
        self._finish(result, stats_before, started)
        return result

    def _apply_all(
        self,
        group_id: str,
        generation: str,
        batches: Iterator[list[Event]],
        result: ReplayResult,
        note: Callable[[list[Event]], None],
        bounds_max: int | None,
    ) -> None:
        """Apply ``batches`` in order, until a foreign row or, when blocked, only vectors lag."""
        for batch in batches:
            try:
                self.apply(group_id, generation, batch, result)
            except ForeignRowError:
                break  # stopped before it: nothing past it is read (``refusals``)
            note(batch)
            if group_id in self.blocked and self._rest_is_vectors(group_id, bounds_max):
                # Only the vectors that could not be made lag past here: reading on would
                # feed nothing (a drain step read the whole backlog each time, ADR 0206).
                break

    def _finish(self, result: ReplayResult, stats_before: EmbeddingStats, started: float) -> None:
        """The embeddings the replay made or found since ``stats_before``, its duration, and
        its telemetry."""
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
                mutations_replayed=result.mutations_replayed,
                unrecognised_lines=result.unrecognised_lines,
                failed_lines=result.failed_lines,
                unparseable_lines=result.unparseable_lines,
                legacy_skipped_lines=result.legacy_skipped_lines,
                duration_ms=result.duration_ms,
            )
        )

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
        """Load an empty group into the projection of record in one pass, feeding the others
        on the way.

        Returns False (record untouched, counters reset) if the bulk load failed, so the
        caller replays incrementally, isolating the failing events.
        """
        bulk_size = max(self.batch_size, 1024)
        record = self.projections.record
        others = [p for p in self.projections if p is not record]

        def feed() -> Iterator[list[Event]]:
            for batch in reader.batches(0, to_seq, batch_size=bulk_size, report=report):
                refusal = _first_foreign(group_id, batch)
                if refusal is not None:
                    raise refusal  # the event-by-event replay stops or skips there
                self._feed(others, group_id, generation, batch, result)
                result.mutations_replayed += len(batch)
                result.last_committed_seq = batch[-1].seq
                note(batch)
                yield batch
            stage("all events read; writing the graph", "graph")

        # Upkeep that a full replay would redo many times runs once, at the end: each live
        # vector enters hnswlib once (not once per revision), BM25 compacts once.
        for proj in others:
            proj.begin_bulk(group_id)
        failed: ProjectionError | None = None
        try:
            record.load_group(group_id, generation, feed())
            stage("building the vector indexes", "vectors")
        except ProjectionError as exc:
            failed = exc
        finally:
            for proj in others:
                proj.end_bulk(group_id)
        if failed is not None:
            if isinstance(failed, ForeignRowError):
                # The others were fed what the record refused, and what came after it: the
                # event-by-event replay feeds them again from nothing, as far as the record.
                for proj in others:
                    proj.purge_group(group_id)
            result.warnings.append(f"bulk load failed ({failed}); replaying event by event")
            result.mutations_replayed = 0
            result.last_committed_seq = None
            return False
        result.transactions_committed += 1
        # What the bulk pass read is folded in once, after the (empty) incremental pass.
        self.fold(result, report)
        return True


def _first_foreign(group_id: str, events: list[Event]) -> ForeignRowError | None:
    """The refusal of the first of ``events`` that names another group than ``group_id``."""
    for event in events:
        if event.group_id != group_id:
            return ForeignRowError(
                event, group_id, event.group_id, f"names group {event.group_id!r}"
            )
    return None
