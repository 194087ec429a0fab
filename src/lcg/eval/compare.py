"""``lcg eval compare``: two saved reports, on the seeds they share.

Only seeds both reports hold are compared, and only when each such seed was scored against
the same corpus (equal gold digests); otherwise the comparison is refused by name. Per
metric: the difference per seed (B − A), the mean difference, the baseline's own spread
between seeds (max − min of A), and whether the mean difference is larger than that spread
(with one shared seed there is no spread, and any difference is reported as exceeding it).
"""

from __future__ import annotations

import statistics

import msgspec

from lcg.eval.report import EvalRefusedError, Report, metrics_of

__all__ = ["Comparison", "MetricDiff", "compare_reports", "render_comparison"]


class MetricDiff(msgspec.Struct, frozen=True, kw_only=True):
    """One metric compared across the shared seeds."""

    metric: str
    per_seed: dict[str, float]
    mean_diff: float
    baseline_spread: float
    exceeds_spread: bool


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """A comparison of report B against baseline A."""

    baseline: str
    candidate: str
    seeds: list[int]
    metrics: list[MetricDiff]


def compare_reports(a: Report, b: Report) -> Comparison:
    """Compare ``b`` against baseline ``a``; ``EvalRefusedError`` on no shared seed or a
    shared seed scored on a different corpus."""
    runs_a = {r.seed: r for r in a.runs}
    runs_b = {r.seed: r for r in b.runs}
    shared = sorted(set(runs_a) & set(runs_b))
    if not shared:
        raise EvalRefusedError(
            f"the reports share no seed (A: {sorted(runs_a)}, B: {sorted(runs_b)}); "
            "run the candidate on the baseline's seeds (--seeds)"
        )
    for s in shared:
        if runs_a[s].gold_digest != runs_b[s].gold_digest or runs_a[s].size != runs_b[s].size:
            raise EvalRefusedError(
                f"seed {s} was scored against different corpora (gold digest "
                f"{runs_a[s].gold_digest[:16]} vs {runs_b[s].gold_digest[:16]}, size "
                f"{runs_a[s].size} vs {runs_b[s].size}); regenerate both at one generator "
                "version and size"
            )
    ma = {s: metrics_of(runs_a[s]) for s in shared}
    mb = {s: metrics_of(runs_b[s]) for s in shared}
    names = [k for k in ma[shared[0]] if all(k in ma[s] and k in mb[s] for s in shared)]
    diffs = []
    for name in names:
        per = {str(s): round(mb[s][name] - ma[s][name], 4) for s in shared}
        mean = round(statistics.fmean(per.values()), 4)
        base = [ma[s][name] for s in shared]
        spread = round(max(base) - min(base), 4)
        diffs.append(
            MetricDiff(
                metric=name,
                per_seed=per,
                mean_diff=mean,
                baseline_spread=spread,
                exceeds_spread=abs(mean) > spread,
            )
        )
    return Comparison(baseline=a.stamp, candidate=b.stamp, seeds=shared, metrics=diffs)


def render_comparison(c: Comparison, *, changed_only: bool = False) -> str:
    """A readable table of the comparison."""
    lines = [f"compare {c.candidate} against {c.baseline} on seeds {c.seeds}"]
    lines.append(f"{'metric':<44} {'mean diff':>10} {'spread':>8}  per seed")
    for d in c.metrics:
        if changed_only and d.mean_diff == 0:
            continue
        per = " ".join(f"{s}:{v:+.3f}" for s, v in d.per_seed.items())
        lines.append(f"{d.metric:<44} {d.mean_diff:>+10.4f} {d.baseline_spread:>8.4f}  {per}")
        if d.mean_diff != 0:
            verdict = "larger than" if d.exceeds_spread else "within"
            lines.append(
                f"    the mean difference is {verdict} the baseline's spread between seeds"
            )
    return "\n".join(lines) + "\n"
