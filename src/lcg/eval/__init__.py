"""The extraction and retrieval evaluation harness (``lcg eval``)."""

from __future__ import annotations

from lcg.eval.backends import BackendSpec, Capture, build_extractor, estimate_price, parse_backend
from lcg.eval.check import ServiceReads, load_golden, run_check
from lcg.eval.compare import compare_reports, render_comparison
from lcg.eval.corpus import Corpus, generate
from lcg.eval.declared_corpus import DeclaredCorpus, DeclaredGold, generate_declared
from lcg.eval.declared_run import DECLARED_GROUP, commit_corpus, run_declared, save_declared
from lcg.eval.declared_score import DeclaredReport, Observed, render_declared, score_pass
from lcg.eval.gold import Gold
from lcg.eval.judge import AnthropicJudge, CachedJudge, ScriptedJudge, judge_facts, judge_pairwise
from lcg.eval.longmemeval import LongMemEvalReport, run_longmemeval
from lcg.eval.report import (
    EvalRefusedError,
    Report,
    build_report,
    list_reports,
    load_report,
    render_summary,
    reports_dir,
    save_report,
)
from lcg.eval.runner import SeedRun, run_seed

__all__ = [
    "DECLARED_GROUP",
    "AnthropicJudge",
    "BackendSpec",
    "CachedJudge",
    "Capture",
    "Corpus",
    "DeclaredCorpus",
    "DeclaredGold",
    "DeclaredReport",
    "EvalRefusedError",
    "Gold",
    "LongMemEvalReport",
    "Observed",
    "Report",
    "ScriptedJudge",
    "SeedRun",
    "ServiceReads",
    "build_extractor",
    "build_report",
    "commit_corpus",
    "compare_reports",
    "estimate_price",
    "generate",
    "generate_declared",
    "judge_facts",
    "judge_pairwise",
    "list_reports",
    "load_golden",
    "load_report",
    "parse_backend",
    "render_comparison",
    "render_declared",
    "render_summary",
    "reports_dir",
    "run_check",
    "run_declared",
    "run_longmemeval",
    "run_seed",
    "save_declared",
    "save_report",
    "score_pass",
]
