"""Eval reports: the JSON a run writes, its flat metrics, a readable summary, the report shelf.

A report holds one ``SeedRun`` per seed (a single seed is a set of one), the mean and the
min–max of every flat metric over its seeds, and whether every structural check passed. It
is written under ``<workspace>/.lcg/eval/reports/`` as ``<stamp>-<backend>-seeds-<n>.json``
with a ``.txt`` summary and a ``.png`` chart beside it, and ``latest.json`` is replaced.
Everything but ``timing`` and the header is a function of the corpus and the answers, so a
replayed cassette reproduces ``runs[*]`` scores exactly.
"""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

import msgspec

from lcg import __version__
from lcg.errors import LcgError
from lcg.eval.backends import PriceEstimate
from lcg.eval.chart import chart_metrics, report_chart
from lcg.eval.runner import SeedRun
from lcg.events import LCG_DIR, atomic_write

__all__ = [
    "REPORTS_DIR",
    "EvalRefusedError",
    "Report",
    "build_report",
    "list_reports",
    "load_report",
    "metrics_of",
    "render_summary",
    "reports_dir",
    "save_report",
    "scores_of",
]

#: Where reports are kept, under the workspace's ``.lcg``.
REPORTS_DIR: Final = "eval/reports"
_LATEST: Final = "latest.json"


class EvalRefusedError(LcgError):
    """An eval command refused its input by name (mismatched corpora, an unpriced paid run)."""


class Report(msgspec.Struct, kw_only=True):
    """One eval report: a backend scored on one or more seeds of one corpus size."""

    kind: Literal["run", "local"] = "run"
    lcg_version: str
    stamp: str
    backend: str
    model: str
    size: str
    seeds: list[int]
    embedder: str
    structural_passed: bool
    metrics: dict[str, float]
    spread: dict[str, list[float]]
    runs: list[SeedRun]
    price: PriceEstimate | None = None
    judged: dict[str, float] | None = None


def metrics_of(run: SeedRun) -> dict[str, float]:
    """The flat ``{name: value}`` metrics of one seed's run (what compare and charts read)."""
    out: dict[str, float] = {}
    for c in run.structural.checks:
        out[f"structural.{c.name}"] = c.score
    e = run.extraction
    out.update(
        {
            "extraction.entities_f1_strict": e.entities_strict.f1,
            "extraction.entities_f1": e.entities_normalised.f1,
            "extraction.type_accuracy": e.type_accuracy,
            "extraction.facts_f1_strict": e.facts_strict.f1,
            "extraction.facts_f1": e.facts_normalised.f1,
            "extraction.facts_precision": e.facts_normalised.precision,
            "extraction.facts_recall": e.facts_normalised.recall,
            "extraction.wording_exact": e.wording_exact,
            "extraction.decoys_served": float(e.decoys_served),
            "extraction.input_tokens": float(e.cost.input_tokens),
            "extraction.output_tokens": float(e.cost.output_tokens),
            "extraction.usd": e.cost.usd or 0.0,
        }
    )
    for t, v in e.entity_type_recall.items():
        out[f"extraction.entity_recall.{t}"] = v
    for rel, v in e.relation_recall.items():
        out[f"extraction.fact_recall.{rel}"] = v
    r = run.retrieval
    for kind, ks in r.by_kind.items():
        for name in ("mrr", "hit_at_3", "p_at_3", "exact", "recall"):
            value = getattr(ks, name)
            if value is not None:
                out[f"retrieval.{kind}.{name}"] = value
    out["retrieval.superseded_above_successor"] = float(r.superseded_above_successor)
    out["retrieval.superseded_served_as_current"] = float(r.superseded_served_as_current)
    out["retrieval.withdrawn_served"] = float(r.withdrawn_served)
    out["retrieval.withdrawn_facts_served"] = float(r.withdrawn_facts_served)
    out["retrieval.bm25_parity"] = r.bm25_parity
    for read, b in r.bytes_median.items():
        out[f"retrieval.bytes_median.{read}"] = b
    return {k: round(v, 4) for k, v in out.items()}


def scores_of(report: Report) -> list[bytes]:
    """Each run's scores as canonical JSON, for exact diffs between runs of the same answers.

    Left out: the header fields (backend spec, scratch path), ``timing``, and payload byte
    sizes. A fresh ingestion mints random entity uuids and reads break score ties by uuid,
    so which unrelated rows fill the tail of a top-10 (and so its byte size) can differ
    between two runs of identical answers; every rank and score does not.
    """
    out = []
    for run in report.runs:
        raw = msgspec.to_builtins(run)
        for key in ("timing", "scratch", "backend"):
            raw.pop(key, None)
        retrieval = raw["retrieval"]
        retrieval.pop("bytes_median", None)
        retrieval.pop("bytes_mean", None)
        for row in retrieval["rows"]:
            row.pop("bytes", None)
        out.append(msgspec.json.encode(raw, order="sorted"))
    return out


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def build_report(
    runs: list[SeedRun],
    *,
    backend: str,
    embedder: str,
    price: PriceEstimate | None = None,
    judged: dict[str, float] | None = None,
) -> Report:
    """The report of ``runs`` (one per seed, same backend and size)."""
    per = [metrics_of(r) for r in runs]
    names = list(dict.fromkeys(k for m in per for k in m))
    mean = {k: round(statistics.fmean([m[k] for m in per if k in m]), 4) for k in names}
    spread = {
        k: [min(m[k] for m in per if k in m), max(m[k] for m in per if k in m)] for k in names
    }
    return Report(
        lcg_version=__version__,
        stamp=_stamp(),
        backend=backend,
        model=runs[0].model if runs else "",
        size=runs[0].size if runs else "",
        seeds=[r.seed for r in runs],
        embedder=embedder,
        structural_passed=all(r.structural.passed for r in runs),
        metrics=mean,
        spread=spread,
        runs=runs,
        price=price,
        judged=judged,
    )


def reports_dir(workspace: Path) -> Path:
    """``<workspace>/.lcg/eval/reports``."""
    return workspace / LCG_DIR / REPORTS_DIR


def _label(text: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in text)
    return safe.strip("-")[:60] or "backend"


def save_report(report: Report, directory: Path) -> Path:
    """Write the report JSON, its summary and chart, and replace ``latest.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    seeds = "-".join(str(s) for s in report.seeds)
    base = f"{report.stamp}-{_label(report.backend)}-seeds-{seeds}"
    raw = msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n"
    path = directory / f"{base}.json"
    atomic_write(path, raw)
    atomic_write(directory / f"{base}.txt", render_summary(report).encode("utf-8"))
    atomic_write(directory / f"{base}.png", report_chart(report.metrics))
    atomic_write(directory / _LATEST, raw)
    return path


def load_report(path: Path) -> Report:
    """Read a saved report; ``EvalRefusedError`` naming the file when it is not one."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=Report)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise EvalRefusedError(f"{path} is not a readable eval report: {exc}") from exc


def list_reports(directory: Path) -> list[Path]:
    """The saved reports, newest first (``latest.json`` left out)."""
    if not directory.is_dir():
        return []
    found = [p for p in directory.glob("*.json") if p.name != _LATEST]
    return sorted(found, key=lambda p: p.name, reverse=True)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def render_summary(report: Report) -> str:
    """A readable summary of ``report`` (what ``lcg eval run`` prints)."""
    lines = [
        f"lcg eval: {report.backend} (model {report.model}), size {report.size}, "
        f"seeds {', '.join(map(str, report.seeds))}, embedder {report.embedder}",
    ]
    for run in report.runs:
        lines.append("")
        lines.append(f"seed {run.seed}: {run.documents} documents, gold {run.gold_digest[:16]}")
        lines.append("  structural: " + ("PASS" if run.structural.passed else "FAIL"))
        for c in run.structural.checks:
            flag = "ok  " if c.ok else "MISS"
            extra = f" ({c.note})" if c.note else ""
            lines.append(f"    {flag} {c.name:<26} {c.score:.3f} of {c.checked}{extra}")
            lines += [f"         - {m}" for m in c.misses[:5]]
        e = run.extraction
        lines.append("  extraction:")
        lines.append(
            f"    entities  P/R/F1 strict {_fmt(e.entities_strict.precision)}/"
            f"{_fmt(e.entities_strict.recall)}/{_fmt(e.entities_strict.f1)}  normalised "
            f"{_fmt(e.entities_normalised.precision)}/{_fmt(e.entities_normalised.recall)}/"
            f"{_fmt(e.entities_normalised.f1)}  type accuracy {_fmt(e.type_accuracy)}"
        )
        lines.append(
            f"    facts     P/R/F1 strict {_fmt(e.facts_strict.precision)}/"
            f"{_fmt(e.facts_strict.recall)}/{_fmt(e.facts_strict.f1)}  normalised "
            f"{_fmt(e.facts_normalised.precision)}/{_fmt(e.facts_normalised.recall)}/"
            f"{_fmt(e.facts_normalised.f1)}  wording exact {_fmt(e.wording_exact)}"
        )
        lines.append(
            "    per type  "
            + "  ".join(
                f"{k} {v:.2f}" for k, v in {**e.entity_type_recall, **e.relation_recall}.items()
            )
        )
        lines.append(f"    decoys served {e.decoys_served} of {e.decoys_total}")
        usd = "unpriced" if e.cost.usd is None else f"${e.cost.usd:.4f}"
        lines.append(
            f"    cost {e.cost.calls} calls, {e.cost.input_tokens} in / {e.cost.output_tokens} "
            f"out tokens, {usd}, {run.timing.extract_s:.1f} s extracting, "
            f"{e.cost.failures} failed"
        )
        r = run.retrieval
        lines.append("  retrieval:")
        for kind, ks in r.by_kind.items():
            if ks.mrr is not None:
                lines.append(
                    f"    {kind:<10} {ks.questions:>3} q  MRR {_fmt(ks.mrr)}  hit@3 "
                    f"{_fmt(ks.hit_at_3)}  P@3 {_fmt(ks.p_at_3)}  reachable {ks.reachable}"
                )
            else:
                lines.append(
                    f"    {kind:<10} {ks.questions:>3} q  exact {_fmt(ks.exact)}  P "
                    f"{_fmt(ks.precision)}  R {_fmt(ks.recall)}"
                )
        lines.append(
            f"    superseded above successor {r.superseded_above_successor}, served as current "
            f"{r.superseded_served_as_current}; withdrawn served {r.withdrawn_served} "
            f"(its facts as edges {r.withdrawn_facts_served}); BM25 parity {r.bm25_parity:.3f}"
        )
        lines.append(
            "    bytes/read median " + ", ".join(f"{k} {v:.0f}" for k, v in r.bytes_median.items())
        )
    if len(report.runs) > 1:
        lines.append("")
        lines.append(f"seed set {report.seeds}: mean [min-max] per metric")
        for name, value in report.metrics.items():
            lo, hi = report.spread[name]
            if name.startswith(("structural.", "extraction.f", "extraction.t", "retrieval.")):
                lines.append(f"  {name:<44} {value:.4f} [{lo:.4f}-{hi:.4f}]")
    bars = [name for name, _ in chart_metrics(report.metrics)]
    lines.append("")
    lines.append(f"chart bars, left to right: {', '.join(bars)}")
    if report.judged:
        lines.append("")
        lines.append("judged: " + ", ".join(f"{k} {v:.3f}" for k, v in report.judged.items()))
    lines.append("")
    lines.append("structural: " + ("all perfect" if report.structural_passed else "FAILED"))
    return "\n".join(lines) + "\n"
