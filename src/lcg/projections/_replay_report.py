"""What a replay reports: its progress while it runs, and its result (the reference's
``knowledge_rebuild_from_wal`` fields, and what lcg adds: the seqs it skipped)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

__all__ = [
    "FailedSample",
    "ProgressFn",
    "ReplayProgress",
    "ReplayResult",
    "add_skip",
    "describe_skips",
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
