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
3. a recorded generation that differs from the stream's → reset: purge, replay in full;
4. ``from_seq == 0`` into a group that holds data → refused unless ``force_clear``;
5. events failing to apply are isolated by bisection, counted and sampled; the rest apply.
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
from lcg.events.model import Event
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.segments import list_segments
from lcg.events.store import WalStore
from lcg.projections.base import EventProjection, OpProjection, VectorOpProjection
from lcg.projections.embedding import TextEmbedder
from lcg.projections.ops import Op, derive_ops, texts_to_embed

__all__ = ["FailedSample", "Projector", "ReplayProgress", "ReplayResult"]

_SAVE_EVERY_EVENTS = 2000
_SAVE_EVERY_S = 5.0


class FailedSample(msgspec.Struct, kw_only=True):
    """One class of event that failed to apply: a preview, the error, how often."""

    cypher: str
    error: str
    count: int = 1


class ReplayProgress(msgspec.Struct, kw_only=True):
    """A progress report during a replay (one per batch)."""

    group_id: str
    message: str
    #: ``apply`` while events are applied; a full replay into an empty group then reports
    #: ``graph`` (its bulk write) and ``vectors`` (the hnswlib build), which take a while.
    phase: str = "apply"
    mutations_replayed_so_far: int
    files_processed_so_far: int
    files_total: int
    failed_lines_so_far: int
    legacy_skipped_lines_so_far: int = 0
    last_seq: int | None = None
    max_seq: int | None = None


class ReplayResult(msgspec.Struct, kw_only=True):
    """The outcome of one replay of one group (the reference's rebuild result fields)."""

    success: bool = True
    group_id: str
    from_seq: int = 0
    to_seq: int | None = None
    dry_run: bool = False
    mutations_replayed: int = 0
    match_prefixed_replayed: int = 0
    wal_files_processed: int = 0
    indexes_created: int = 0
    unrecognised_lines: int = 0
    failed_lines: int = 0
    unparseable_lines: int = 0
    legacy_skipped_lines: int = 0
    generation_mismatch_lines: int = 0
    lines_skipped: int = 0
    failed_samples: list[FailedSample] = []
    failed_sample_categories_dropped: int = 0
    fidelity_warning: str | None = None
    rolled_back_lines: int = 0
    last_committed_seq: int | None = None
    transactions_committed: int = 0
    transactions_rolled_back: int = 0
    reset_detected: bool = False
    previous_generation: str | None = None
    generation: str | None = None
    cross_group_rebind: dict[str, int] | None = None
    embeddings_recomputed: int = 0
    embeddings_cached: int = 0
    embeddings_recompute_failed: int = 0
    duration_ms: int = 0
    warnings: list[str] = []


ProgressFn = Callable[[ReplayProgress], None]


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

    # ---- catching up ---------------------------------------------------------------------

    def catch_up(self, group_id: str, progress: ProgressFn | None = None) -> ReplayResult:
        """Apply every event of ``group_id`` past each projection's position.

        A projection whose recorded generation differs from the stream's is purged and
        replayed in full (a reset). A recorded position with an unknown stream generation is
        refused with ``GenerationError``.
        """
        generation = self.store.generation(group_id)
        result = ReplayResult(group_id=group_id, generation=generation)
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
        return self._replay(group_id, generation, 0, None, result, progress)

    def catch_up_all(self, progress: ProgressFn | None = None) -> dict[str, ReplayResult]:
        """``catch_up`` every group of the stream store; then save the snapshots."""
        results = {g: self.catch_up(g, progress) for g in self.store.groups()}
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
        progress: ProgressFn | None = None,
    ) -> ReplayResult:
        """Rebuild ``group_id``'s projections from its stream, as the reference's rebuild."""
        gdir = self.store.group_dir(group_id)
        if not list_segments(gdir):
            raise StreamError(f"No WAL files found at {gdir}")
        generation = self.store.generation(group_id)
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
        if recorded[0] is not None and recorded_gen != generation:
            result.reset_detected = True
            result.previous_generation = recorded_gen
            if dry_run:
                result.warnings.append(
                    f"generation changed from {recorded_gen} to {generation}: a real rebuild "
                    "purges the group and replays it in full"
                )
                return self._dry_run(group_id, generation, 0, None, result)
            from_seq, to_seq, force_clear = 0, None, True
            result.from_seq, result.to_seq = 0, None
        if from_seq == 0 and self.group_has_data(group_id):
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
            return self._dry_run(group_id, generation, from_seq, to_seq, result)
        if generation is None:
            raise GenerationError(self._unknown_generation_message(group_id))
        if force_clear:
            for _, proj in self._projections():
                proj.purge_group(group_id)
        replayed = self._replay(group_id, generation, from_seq, to_seq, result, progress)
        self.save()
        return replayed

    def _dry_run(
        self,
        group_id: str,
        generation: str | None,
        from_seq: int,
        to_seq: int | None,
        result: ReplayResult,
    ) -> ReplayResult:
        started = time.monotonic()
        report = ReadReport()
        reader = StreamReader(self.store.group_dir(group_id), generation=generation)
        for batch in reader.batches(from_seq, to_seq, batch_size=256, report=report):
            result.mutations_replayed += len(batch)
            result.last_committed_seq = batch[-1].seq
        self._fold_report(result, report)
        result.duration_ms = int((time.monotonic() - started) * 1000)
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
            report = ReadReport()
            reader = StreamReader(gdir, generation=generation)
            start = (self.graph.position(group_id)[0] or -1) + 1
        else:
            start = max(from_seq, lowest + 1)
        for batch in reader.batches(start, to_seq, batch_size=self.batch_size, report=report):
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
        result.failed_lines += report.failed_lines
        result.generation_mismatch_lines += report.generation_mismatch_lines
        result.lines_skipped += report.bad_lines
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
            telemetry.ServiceState(
                state="reset_detected",
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
