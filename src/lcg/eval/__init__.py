"""The extraction and retrieval evaluation harness (``lcg eval``)."""

from __future__ import annotations

from lcg.eval.backends import build_extractor, parse_backend
from lcg.eval.check import run_check
from lcg.eval.compare import compare_reports
from lcg.eval.corpus import Corpus, generate
from lcg.eval.gold import Gold
from lcg.eval.longmemeval import LongMemEvalReport, run_longmemeval
from lcg.eval.report import Report, build_report
from lcg.eval.runner import SeedRun, run_seed

__all__ = [
    "Corpus",
    "Gold",
    "LongMemEvalReport",
    "Report",
    "SeedRun",
    "build_extractor",
    "build_report",
    "compare_reports",
    "generate",
    "parse_backend",
    "run_check",
    "run_longmemeval",
    "run_seed",
]
