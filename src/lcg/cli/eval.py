"""``lcg eval``: score extraction and retrieval on a seeded corpus with known answers.

Subcommands: ``run`` (generate, ingest through a backend, score, report), ``compare`` (two
saved reports on their shared seeds), ``list`` (saved reports, newest first), ``check`` (your
own golden questions against this workspace), ``declared`` (the declared-structure pass on a
seeded backlog, scored through the reads) and ``longmemeval`` (session retrieval over a
LongMemEval dev split).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import msgspec

from lcg.cli._common import add_command, config_from, emit_json
from lcg.cli._eval_declared import register_declared
from lcg.cli._service import ProgressBar
from lcg.cli._terminal import safe
from lcg.config import Config
from lcg.errors import ConfigError

if TYPE_CHECKING:
    from lcg.eval import BackendSpec, Capture, Corpus, Report

    #: The ``lcg eval`` subcommands' subparsers.
    _Sub = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = ["register"]


def _seeds(args: argparse.Namespace) -> list[int]:
    raw = args.seeds if args.seeds is not None else str(args.seed if args.seed is not None else 7)
    try:
        seeds = [int(s) for s in raw.split(",") if s.strip()]
    except ValueError:
        raise ConfigError(f"--seeds {raw!r}: give integers separated by commas") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds {raw!r}: give one or more distinct seeds")
    return seeds


def _embedder(config: Config) -> Any:
    from lcg.workspace import embedder_from_config

    return embedder_from_config(config)


def _confirm(prompt: str, yes: bool) -> bool:
    if yes:
        return True
    if not sys.stdin.isatty():
        from lcg.eval import EvalRefusedError

        raise EvalRefusedError(
            "this run sends the corpus to a paid provider; pass --yes to confirm "
            "(or run it from a terminal to be asked)"
        )
    return input(f"{prompt} [y/N] ").strip().lower() in ("y", "yes")


def _judge(config: Config, args: argparse.Namespace) -> Any:
    from lcg.eval import AnthropicJudge, CachedJudge, ScriptedJudge

    if not args.judge:
        return None
    inner: Any
    if args.judge == "scripted":
        inner = ScriptedJudge()
    else:
        if not config.anthropic_api_key:
            raise ConfigError(f"--judge {args.judge} needs ANTHROPIC_API_KEY")
        inner = AnthropicJudge(args.judge, config.anthropic_api_key, config.anthropic_base_url)
    cache = (
        Path(args.judge_cache)
        if args.judge_cache
        else (config.workspace / ".lcg" / "eval" / "judge-cache.jsonl")
    )
    return CachedJudge(inner, cache)


def _run(args: argparse.Namespace) -> int:
    from lcg.eval import estimate_price, generate, reports_dir

    config = config_from(args)
    seeds = _seeds(args)
    specs = _specs(args)
    corpora = [generate(s, args.size) for s in seeds]
    prices = {s.spec: estimate_price(s, corpora, config) for s in specs}
    out = sys.stderr if args.json else sys.stdout
    _print_plan(args, specs, prices, corpora, seeds, out)
    if args.dry_run:
        return _dry_run(args, specs, corpora, config, out)
    paid = [s for s in specs if s.paid]
    if paid and not _confirm(
        "send the corpus to " + ", ".join(s.spec for s in paid) + "?", args.yes
    ):
        print("not sent", file=out)
        return 1
    judge = _judge(config, args)
    embedder = _embedder(config)
    answers: _Answers = {}
    try:
        reports = [
            _score_backend(args, config, s, corpora, embedder, prices[s.spec], judge, answers)
            for s in specs
        ]
    finally:
        embedder.close()
    comparison: dict[str, Any] | None = None
    if len(specs) > 1:
        comparison = _comparison(seeds, specs, corpora, reports, judge, answers)
        cmp_path = reports_dir(config.workspace) / f"{reports[0][0].stamp}-comparison.json"
        cmp_path.write_bytes(msgspec.json.format(msgspec.json.encode(comparison), indent=2))
    _print_reports(args, reports, comparison)
    return 0 if all(r.structural_passed for r, _ in reports) else 1


#: The answers each backend gave, by backend spec, then seed, then document.
_Answers = dict[str, dict[int, dict[str, "Capture"]]]


def _specs(args: argparse.Namespace) -> list[BackendSpec]:
    """The ``--backend`` specs, each once (a cassette file once too)."""
    from lcg.eval import parse_backend

    specs: list[BackendSpec] = [parse_backend(s) for s in (args.backend or ["scripted"])]
    if len({s.spec for s in specs}) != len(specs):
        raise ConfigError("each --backend may be given once")
    cassettes = [Path(s.arg).resolve() for s in specs if s.kind == "cassette"]
    if len(set(cassettes)) != len(cassettes):
        raise ConfigError("two --backend cassettes are the same file; the comparison is void")
    if args.record and len(specs) != 1:
        raise ConfigError("--record records one backend; give exactly one --backend")
    return specs


def _print_plan(
    args: argparse.Namespace,
    specs: list[BackendSpec],
    prices: dict[str, Any],
    corpora: list[Corpus],
    seeds: list[int],
    out: TextIO,
) -> None:
    """What the run will send, to whom, at what price, and each corpus's gold digest."""
    from lcg.extract import ReplayExtractor

    for s in specs:
        p = prices[s.spec]
        usd = "unpriced" if p.usd is None else f"${p.usd:.4f}"
        note = "" if s.paid else ", test double: nothing is sent"
        if s.kind == "cassette":
            note = f", replaying {len(ReplayExtractor(Path(s.arg)))} records, no network"
        print(
            f"plan: {s.spec} (model {p.model}) on seeds {seeds}, size {args.size}: "
            f"{p.documents} documents, {p.calls} calls, ~{p.input_tokens} in / "
            f"~{p.output_tokens} out tokens, {usd}{note}",
            file=out,
        )
    for c in corpora:
        print(f"plan: seed {c.seed} gold digest {c.digest}", file=out)


def _dry_run(
    args: argparse.Namespace,
    specs: list[BackendSpec],
    corpora: list[Corpus],
    config: Config,
    out: TextIO,
) -> int:
    """Resolve each backend exactly as a run would (keys, endpoints, cassettes), build its
    extractor and close it unused: nothing is sent."""
    from lcg.errors import LcgError
    from lcg.eval import build_extractor

    for s in specs:
        try:
            built = build_extractor(
                s, corpora[0], config, record=Path(args.record) if args.record else None
            )
        except LcgError as exc:
            print(f"plan: {s.spec} would be refused: {exc}", file=out)
            continue
        print(f"plan: {s.spec} resolves to model {built.model_id}", file=out)
        built.close()
    print("dry run: nothing was sent", file=out)
    return 0


def _score_backend(
    args: argparse.Namespace,
    config: Config,
    s: BackendSpec,
    corpora: list[Corpus],
    embedder: Any,
    price: Any,
    judge: Any,
    answers: _Answers,
) -> tuple[Report, Path]:
    """Score one backend on every seed, judge it if asked, and save its report."""
    from lcg.eval import (
        SeedRun,
        build_extractor,
        build_report,
        judge_facts,
        reports_dir,
        run_seed,
        save_report,
    )

    scratch_root = reports_dir(config.workspace).parent / "scratch"
    runs: list[SeedRun] = []
    for c in corpora:
        extractor = build_extractor(s, c, config, record=Path(args.record) if args.record else None)
        got: dict[str, Capture] = {}
        try:
            runs.append(
                run_seed(
                    c,
                    extractor,
                    embedder,
                    config,
                    scratch_root / f"{s.label}-seed-{c.seed}",
                    backend=s.spec,
                    keep=args.keep,
                    answers_out=got,
                )
            )
        finally:
            extractor.close()
        answers.setdefault(s.spec, {})[c.seed] = got
        print(f"scored {s.spec} seed {c.seed}", file=sys.stderr)
    judged = None
    if judge is not None:
        per = [judge_facts(judge, c, answers[s.spec][c.seed]) for c in corpora]
        judged = {k: round(sum(p[k] for p in per) / len(per), 4) for k in per[0]}
    report = build_report(
        runs, backend=s.spec, embedder=embedder.model_id, price=price, judged=judged
    )
    return report, save_report(report, reports_dir(config.workspace))


def _comparison(
    seeds: list[int],
    specs: list[BackendSpec],
    corpora: list[Corpus],
    reports: list[tuple[Report, Path]],
    judge: Any,
    answers: _Answers,
) -> dict[str, Any]:
    """The backends side by side: strict metrics, judged ones and pairwise verdicts."""
    from lcg.eval import judge_pairwise

    comparison: dict[str, Any] = {
        "seeds": seeds,
        "strict": {r.backend: r.metrics for r, _ in reports},
        "judged": {r.backend: r.judged for r, _ in reports} if judge is not None else None,
        "pairwise": None,
    }
    if judge is not None:
        comparison["pairwise"] = {
            str(c.seed): msgspec.to_builtins(
                judge_pairwise(judge, c, {s.spec: answers[s.spec][c.seed] for s in specs})
            )
            for c in corpora
        }
    return comparison


def _print_reports(
    args: argparse.Namespace,
    reports: list[tuple[Report, Path]],
    comparison: dict[str, Any] | None,
) -> None:
    from lcg.eval import render_summary

    if args.json:
        emit_json(
            {
                "reports": [str(p) for _, p in reports],
                "structural_passed": all(r.structural_passed for r, _ in reports),
                "runs": [msgspec.to_builtins(r) for r, _ in reports],
                "comparison": comparison,
            }
        )
        return
    for report, path in reports:
        print(safe(render_summary(report), lines=True), end="")
        print(f"report: {path}")
        print(f"chart:  {path.with_suffix('.png')} (summary {path.with_suffix('.txt')})")
    if comparison is not None:
        _print_comparison(comparison)


def _print_comparison(comparison: dict[str, Any]) -> None:
    strict: dict[str, dict[str, float]] = comparison["strict"]
    names = list(strict)
    keys = [k for k in next(iter(strict.values())) if k.startswith(("extraction.f", "retrieval."))]
    print("\nmodel comparison (strict, mean over seeds)")
    print(f"{'METRIC':<40} " + " ".join(f"{n[:18]:>18}" for n in names))
    for k in keys[:30]:
        print(f"{k:<40} " + " ".join(f"{strict[n].get(k, 0.0):>18.4f}" for n in names))
    if comparison.get("pairwise"):
        for seed, pairs in comparison["pairwise"].items():
            for p in pairs:
                print(
                    f"pairwise seed {seed}: {p['a']} vs {p['b']}: {p['wins_a']}-{p['wins_b']} "
                    f"({p['ties']} ties), order inconsistency {p['order_inconsistency_rate']:.2f}"
                )


def _resolve(config: Config, ref: str) -> Path:
    from lcg.eval import EvalRefusedError, list_reports, reports_dir

    path = Path(ref)
    if path.exists():
        return path
    found = [p for p in list_reports(reports_dir(config.workspace)) if p.name.startswith(ref)]
    if len(found) != 1:
        raise EvalRefusedError(
            f"{ref!r} names {len(found)} saved reports; give a path or a unique stamp "
            "(see `lcg eval list`)"
        )
    return found[0]


def _compare(args: argparse.Namespace) -> int:
    from lcg.eval import compare_reports, load_report, render_comparison

    config = config_from(args)
    a = load_report(_resolve(config, args.baseline))
    b = load_report(_resolve(config, args.candidate))
    result = compare_reports(a, b)
    if args.json:
        emit_json(result)
    else:
        print(safe(render_comparison(result, changed_only=not args.all), lines=True), end="")
    return 0


def _list(args: argparse.Namespace) -> int:
    from lcg.eval import list_reports, load_report, reports_dir

    config = config_from(args)
    rows: list[dict[str, Any]] = []
    for path in list_reports(reports_dir(config.workspace)):
        try:
            r = load_report(path)
        except Exception:  # a file that is not a report is listed, not fatal
            rows.append({"path": str(path), "error": "unreadable"})
            continue
        rows.append(
            {
                "path": str(path),
                "stamp": r.stamp,
                "backend": r.backend,
                "seeds": r.seeds,
                "size": r.size,
                "structural_passed": r.structural_passed,
                "facts_f1": r.metrics.get("extraction.facts_f1"),
            }
        )
    if args.json:
        emit_json(rows)
        return 0
    if not rows:
        print("no eval reports yet (run `lcg eval run`)")
    for row in rows:
        if "error" in row:
            print(f"{row['path']}: unreadable")
            continue
        ok = "pass" if row["structural_passed"] else "FAIL"
        print(
            f"{row['stamp']}  {row['backend']:<24} seeds {row['seeds']} {row['size']:<5} "
            f"structural {ok}  facts F1 {row['facts_f1']}"
        )
    return 0


def _check(args: argparse.Namespace) -> int:
    from lcg.cli._holder import service
    from lcg.eval import ServiceReads, load_golden, run_check
    from lcg.events import list_groups

    config = config_from(args)
    questions = load_golden(Path(args.golden))
    # One holder, always reachable (ADR 0199): the running service, or one this command
    # serves while it reads (a `lcg search` meanwhile goes through it).
    with service(config, "eval", quiet=args.json) as (client, _how):
        groups = [args.group] if args.group else list_groups(config.wal_dir)
        report = run_check(ServiceReads(client), questions, groups)
    if args.json:
        emit_json(report)
    else:
        print("nothing scored here was written by a model: these are your own questions")
        for row in report.rows:
            if row.exact is not None:
                verdict = "ok" if row.exact else f"MISS missing {row.missing} extra {row.extra}"
            else:
                verdict = f"rank {row.rank}"
            print(f"  {row.read:<14} {safe(row.ask[:48]):<48} {safe(verdict)}")
        print(
            f"{report.questions} question(s): MRR {report.mrr}, hit@3 {report.hit_at_3}, "
            f"P@3 {report.p_at_3}; slots {'ok' if report.slots_ok else 'MISSED'}"
        )
    return 0 if report.slots_ok else 1


#: The files ``lcg eval longmemeval --data DIR`` reads.
_LME_FILES = ("sessions.jsonl", "questions-dev.jsonl")


def _longmemeval(args: argparse.Namespace) -> int:
    from lcg.eval import run_longmemeval

    config = config_from(args)
    data = Path(args.data).expanduser()
    missing = [name for name in _LME_FILES if not (data / name).is_file()]
    if missing:
        # The dataset is large and not in the repository: say what is missing and where.
        raise ConfigError(
            f"the LongMemEval dev data is incomplete: {', '.join(missing)} not found in "
            f"{data.resolve()}; pass --data DIR, the folder holding {' and '.join(_LME_FILES)} "
            "(LongMemEval's dev split; this project keeps it outside the repository, "
            "e.g. in ../shared/data/longmemeval-dev)"
        )
    workspace = Path(args.scratch) if args.scratch else config.workspace / ".lcg" / "eval" / "lme"
    embedder = _embedder(config)
    ingest = ProgressBar("ingesting turns", silent=args.silent)
    scored: list[str] = []

    def scoring(method: str) -> None:
        ingest.done()  # no-op unless its line was drawn
        ingest.enabled = False
        scored.append(method)
        if not args.silent:
            print(f"scoring {len(scored)}: {method}", file=sys.stderr, flush=True)

    try:
        report = run_longmemeval(data, workspace, embedder, progress=ingest.update, scoring=scoring)
    finally:
        embedder.close()
    if args.json:
        emit_json(report)
        return 0
    print(
        f"LongMemEval dev: {report.questions} questions, {report.sessions} sessions, "
        f"{report.turns} turns, embedder {report.embedder}, ingest {report.ingest_seconds} s"
    )
    # Upper-case headers, as every table of the CLI (format_table's callers).
    width = max(len("METHOD"), *(len(m.method) for m in report.methods))
    print(f"{'METHOD':<{width}} {'R@5':>7} {'R@10':>7} {'NDCG@10':>8} {'P50 MS':>8}")
    for m in report.methods:
        print(
            f"{m.method:<{width}} {m.recall_at_5:>7.4f} {m.recall_at_10:>7.4f} "
            f"{m.ndcg_at_10:>8.4f} {m.query_ms_p50:>8.3f}"
        )
    print(f"hnsw recall@10 against exact cosine: {report.hnsw_recall_at_10}")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg eval`` and its subcommands."""
    parser = subparsers.add_parser(
        "eval",
        help="score extraction and retrieval on a seeded corpus with known answers",
        description=(
            "Score extraction and retrieval on a seeded corpus with known answers.\n\n"
            "Example:\n  lcg eval run --size small --backend scripted\n"
            "  lcg eval compare <before> <after>"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="eval_command", metavar="SUBCOMMAND", required=True)
    _register_run(sub)
    _register_reports(sub)
    _register_check(sub)
    register_declared(sub)
    _register_longmemeval(sub)


def _register_run(sub: _Sub) -> None:
    p = add_command(
        sub,
        "run",
        summary="Generate a seeded corpus, ingest it through a backend and score it.",
        details="""
        Exits 1 when a structural score is not perfect (a defect in the engine). A paid
        backend (anthropic, oai-http, oai-uds) is priced first and sent only after you
        confirm (or with --yes). Several --backend flags score the models on one corpus and
        add a comparison; --judge adds judged scores and blind pairwise verdicts.
        """,
        example="""
        lcg eval run --size small --backend scripted
        lcg eval run --seeds 7,11,13 --backend scripted-noisy:0.2
        lcg eval run --backend anthropic --backend cassette:base.jsonl --judge claude-haiku-4-5
        lcg eval run --backend anthropic --dry-run
        """,
        func=_run,
    )
    seed = p.add_mutually_exclusive_group()
    seed.add_argument("--seed", type=int, default=None, help="one seed (default 7)")
    seed.add_argument("--seeds", default=None, metavar="N,N", help="several seeds, one set")
    p.add_argument("--size", choices=["small", "full"], default="full", help="corpus size")
    p.add_argument(
        "--backend",
        action="append",
        metavar="SPEC",
        help="scripted | scripted-noisy:<rate> | anthropic[:<model>] | oai-http:<url> | "
        "oai-uds:<path> | cassette:<path> (repeatable; default scripted)",
    )
    p.add_argument("--keep", action="store_true", help="keep the scratch workspaces")
    p.add_argument("--yes", action="store_true", help="send a paid run without asking")
    p.add_argument("--dry-run", action="store_true", help="resolve and price; send nothing")
    p.add_argument("--record", metavar="PATH", help="record the backend's answers to a cassette")
    p.add_argument("--judge", metavar="MODEL", help="judge with this model (or 'scripted')")
    p.add_argument("--judge-cache", metavar="PATH", help="the judge's answer cache (JSONL)")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")


def _register_reports(sub: _Sub) -> None:
    p = add_command(
        sub,
        "compare",
        summary="Compare two saved reports on the seeds they share.",
        details="Refused when they share no seed or a shared seed's corpus differs.",
        example="lcg eval compare 20260101T000000 20260102T000000",
        func=_compare,
    )
    p.add_argument("baseline", help="report path or stamp (the baseline, A)")
    p.add_argument("candidate", help="report path or stamp (the candidate, B)")
    p.add_argument("--all", action="store_true", help="list unchanged metrics too")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")

    p = add_command(
        sub,
        "list",
        summary="List the saved eval reports, newest first.",
        example="lcg eval list",
        func=_list,
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _register_check(sub: _Sub) -> None:
    p = add_command(
        sub,
        "check",
        summary="Ask your own golden questions of this workspace (no LLM cost).",
        details="Exits 1 when a slot question (neighbors, by_source) misses.",
        example="lcg eval check --golden eval/golden.json",
        func=_check,
    )
    p.add_argument("--golden", required=True, metavar="FILE", help="the golden questions")
    p.add_argument("--group", default=None, help="one group (default: every group)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def _register_longmemeval(sub: _Sub) -> None:
    p = add_command(
        sub,
        "longmemeval",
        summary="Session retrieval over a LongMemEval dev split (BM25, vector, fused).",
        example="lcg eval longmemeval --data ~/lme-local",
        func=_longmemeval,
    )
    p.add_argument("--data", required=True, metavar="DIR", help="sessions.jsonl + questions")
    p.add_argument("--scratch", metavar="DIR", help="the workspace to ingest into")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "-s", "--silent", action="store_true", help="no progress on stderr (ingest, methods)"
    )
