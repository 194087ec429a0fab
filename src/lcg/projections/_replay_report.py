"""What a replay reports: its progress while it runs, and its result (the reference's
``knowledge_rebuild_from_wal`` fields, and what lcg adds: the seqs it skipped)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from lcg.events import Event, ReadReport

__all__ = [
    "FailedSample",
    "ProgressFn",
    "ReplayProgress",
    "ReplayResult",
    "add_skip",
    "describe_skips",
    "fold_report",
    "record_failure",
]


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
    #: Lines whose checksum failed (also counted in ``failed_lines``).
    corrupt_lines: int = 0
    seq_gaps: int = 0
    seq_regressions: int = 0
    #: Inclusive ``[first, last]`` ranges of the seqs this replay did not apply.
    skipped_seqs: list[tuple[int, int]] = []
    seqs_skipped: int = 0
    #: True when seqs were skipped and the caller accepted it (``accept_loss``).
    loss_accepted: bool = False
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


def add_skip(result: ReplayResult, first: int, last: int) -> None:
    """Add seqs ``first..last`` to the result's skipped ranges (kept sorted and merged)."""
    result.seqs_skipped += last - first + 1
    ranges = sorted([*result.skipped_seqs, (first, last)])
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    result.skipped_seqs = merged[:100]


def describe_skips(result: ReplayResult) -> str:
    """``seqs 5, 10-19 (corrupt=1, seq_gaps=1)``: what a replay skipped, in one phrase."""
    spans = [str(a) if a == b else f"{a}-{b}" for a, b in result.skipped_seqs[:10]]
    more = len(result.skipped_seqs) - len(spans)
    listed = ", ".join(spans) + (f" and {more} more range(s)" if more > 0 else "")
    counters = {
        "corrupt": result.corrupt_lines,
        "failed": result.failed_lines - result.corrupt_lines,
        "unrecognised": result.unrecognised_lines,
        "unparseable": result.unparseable_lines,
        "generation_mismatch": result.generation_mismatch_lines,
        "seq_gaps": result.seq_gaps,
        "seq_regressions": result.seq_regressions,
    }
    named = ", ".join(f"{k}={v}" for k, v in counters.items() if v)
    head = f"{result.seqs_skipped} seq(s) ({listed})" if spans else "lines without a seq"
    return f"{head}; {named}" if named else head


def record_failure(result: ReplayResult, event: Event, exc: Exception, samples: int) -> None:
    """Count ``event`` as failed to apply by ``exc``; sample it (at most ``samples`` kinds)."""
    result.failed_lines += 1
    add_skip(result, event.seq, event.seq)
    kind = event.__struct_config__.tag
    error = str(exc)[:300]
    preview = f"{kind} seq={event.seq}"
    for sample in result.failed_samples:
        if sample.error == error and sample.cypher.split(" ")[0] == kind:
            sample.count += 1
            return
    if len(result.failed_samples) < samples:
        result.failed_samples.append(FailedSample(cypher=preview, error=error))
    else:
        result.failed_sample_categories_dropped += 1


def fold_report(
    result: ReplayResult, report: ReadReport, *, samples: int, fidelity_threshold: float
) -> None:
    """Add what the stream reader met (``report``) to ``result``; warn below the threshold.

    ``fidelity_threshold`` is the least fraction of events that must apply
    (``LCG_REPLAY_FIDELITY_THRESHOLD``, ADR 0215).
    """
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
        if len(result.failed_samples) < samples:
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
    # The documented rule: warn when the applied fraction falls below the setting.
    applied = (total - bad) / total if total else 1.0
    if applied < fidelity_threshold:
        result.fidelity_warning = (
            f"{100.0 * applied:.1f}% of events applied, below the threshold of "
            f"{100.0 * fidelity_threshold:.1f}% ({100.0 * bad / total:.1f}% failed or were "
            f"skipped); the rebuilt graph may be incomplete "
            f"(failed={result.failed_lines}, unrecognised={result.unrecognised_lines}, "
            f"unparseable={result.unparseable_lines}, "
            f"generation_mismatch={result.generation_mismatch_lines})"
        )
