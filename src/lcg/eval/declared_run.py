"""One declared-structure pass: a seeded corpus committed into a scratch git repository,
ingested by the real ``lcg ingest``, withdrawn from, ingested again, scored through reads.

``commit_corpus`` writes the corpus into ``repo`` with ONE dated commit per file (the
``git`` command runs here, on the scratch repository this module made, with a hermetic
environment: no system or global git config, the commit dates of the gold); lcg itself
never runs git. ``run_declared`` then runs the ``lcg ingest`` command line it is given (a
subprocess, going through the scratch workspace's service), asks the reads
(``declared_reads.observe``), removes the withdrawn file in a later dated commit, ingests
again and asks again. Each pass is scored against the gold of the tree at that point.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import msgspec

from lcg.eval.check import MethodCaller
from lcg.eval.declared_corpus import DeclaredCorpus, GoldCommit
from lcg.eval.declared_reads import observe
from lcg.eval.declared_score import DeclaredReport, PassScores, score_pass
from lcg.eval.report import EvalRefusedError
from lcg.events import LCG_DIR, atomic_write

__all__ = [
    "DECLARED_DIR",
    "DECLARED_GROUP",
    "commit_corpus",
    "run_declared",
    "save_declared",
]

#: The group the corpus is ingested into, in its scratch workspace.
DECLARED_GROUP: Final = "eval"
#: Where a workspace keeps the declared lane's reports, inside ``.lcg``.
DECLARED_DIR: Final = "eval/declared"
_LATEST: Final = "latest.json"
#: Who the scratch repository's commits are by.
_AUTHOR: Final = "Eval Generator"
_EMAIL: Final = "eval@example.invalid"
#: A git command that has not finished in this long is a hang, not a slow disk.
_GIT_TIMEOUT_S: Final = 120
#: The longest an ``lcg ingest`` of the scratch corpus may take before it is called a hang.
_INGEST_TIMEOUT_S: Final = 600


def _git_env(home: Path, date: str | None = None) -> dict[str, str]:
    """A hermetic environment for ``git`` in the scratch repository."""
    env = {
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": _AUTHOR,
        "GIT_AUTHOR_EMAIL": _EMAIL,
        "GIT_COMMITTER_NAME": _AUTHOR,
        "GIT_COMMITTER_EMAIL": _EMAIL,
        "LC_ALL": "C",
    }
    if date is not None:
        env["GIT_AUTHOR_DATE"] = date
        env["GIT_COMMITTER_DATE"] = date
    return env


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    git = shutil.which("git")
    if git is None:
        raise EvalRefusedError("git is not installed: the declared lane commits its corpus with it")
    done = subprocess.run(
        [git, *args],
        cwd=repo,
        env=_git_env(repo.parent, date),
        capture_output=True,
        text=True,
        timeout=_GIT_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise EvalRefusedError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()[:400]}")
    return done.stdout.strip()


def _commit(repo: Path, commit: GoldCommit) -> str:
    if commit.removes:
        _git(repo, "rm", "-q", "--", *commit.files)
    else:
        _git(repo, "add", "--", *commit.files)
    _git(repo, "commit", "-q", "--no-verify", "-m", commit.message, date=commit.date)
    return _git(repo, "rev-parse", "HEAD")


def commit_corpus(corpus: DeclaredCorpus, repo: Path) -> list[str]:
    """Write the corpus into a new git repository at ``repo``, one dated commit per file
    (the withdrawal left for later); the commits' shas, oldest first."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    shas: list[str] = []
    for commit in corpus.gold.commits:
        if commit.removes:
            continue
        corpus.write(repo, only=commit.files)
        shas.append(_commit(repo, commit))
    return shas


def _ingest(argv: list[str]) -> None:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=_INGEST_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise EvalRefusedError(f"lcg ingest did not finish in {_INGEST_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise EvalRefusedError(
            f"lcg ingest exited {done.returncode}: {(done.stderr or done.stdout).strip()[-800:]}"
        )


def run_declared(
    corpus: DeclaredCorpus,
    repo: Path,
    shas: list[str],
    client: MethodCaller,
    ingest: list[str],
) -> DeclaredReport:
    """Ingest ``repo`` (committed by ``commit_corpus``: ``shas``) with the command line
    ``ingest``, score the reads ``client`` answers, withdraw the file the gold names in a
    later dated commit, ingest and score again."""
    gold = corpus.gold
    label = repo.name
    timing: dict[str, float] = {}
    passes: list[PassScores] = []
    shas = list(shas)
    for name, withdrawn in (("ingest", False), ("withdrawal", True)):
        if withdrawn:
            shas.append(_commit(repo, gold.commits[-1]))
        started = time.monotonic()
        _ingest(ingest)
        timing[f"{name}_ingest_s"] = round(time.monotonic() - started, 3)
        started = time.monotonic()
        seen = observe(
            client, gold, group=DECLARED_GROUP, label=label, shas=shas, withdrawn=withdrawn
        )
        passes.append(score_pass(name, gold, seen, withdrawn=withdrawn))
        timing[f"{name}_score_s"] = round(time.monotonic() - started, 3)
    return DeclaredReport(
        seed=corpus.seed,
        gold_digest=corpus.digest,
        files=len(corpus.files),
        commits=len(gold.commits),
        structural_passed=all(p.passed for p in passes),
        passes=passes,
        timing=timing,
    )


def save_declared(report: DeclaredReport, workspace: Path, text: str) -> Path:
    """Write the report (JSON, and ``text`` beside it) under the workspace's
    ``.lcg/eval/declared/``, and replace ``latest.json`` there; the JSON's path."""
    directory = workspace / LCG_DIR / DECLARED_DIR
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    base = f"{stamp}-seed-{report.seed}"
    raw = msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n"
    path = directory / f"{base}.json"
    atomic_write(path, raw)
    atomic_write(directory / f"{base}.txt", text.encode("utf-8"))
    atomic_write(directory / _LATEST, raw)
    return path
