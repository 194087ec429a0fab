"""``lcg watch`` sees a new commit (issue 29 item 2, ADR 0205): the git directory of a watched
tree's work tree is watched too (where a commit writes, its ``refs/`` and ``logs/``, beside a
tree inside the work tree), and a change of its
``HEAD``, ``refs``, ``packed-refs`` or ``logs`` syncs the trees whose commits it holds, while
the rest of ``.git`` (objects, the index) and every other hidden entry never count. A real
repository made with real ``git``; no service is reached (the watcher connects lazily)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from lcg.cli.watch import Watcher
from lcg.ingest import CommitWindow

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "a.md").write_text("a")
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.com",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "a"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return repo.resolve()


def _watcher(tmp_path: Path, *roots: Path, commits: bool = True) -> Watcher:
    return Watcher(
        tmp_path / "no.sock",
        list(roots),
        "g",
        stop=threading.Event(),
        say=lambda _: None,
        commits=CommitWindow() if commits else None,
    )


def test_a_commit_syncs_the_trees_of_its_work_tree(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    docs, other = repo / "docs", (tmp_path / "other").resolve()
    other.mkdir()
    watcher = _watcher(tmp_path, docs, other)
    git = repo / ".git"
    # Where a commit writes, beside the tree: never objects/ (nor the rest of .git).
    assert watcher.watched_folders() == sorted([docs, other, git / "refs", git / "logs"])
    for changed in ("HEAD", "refs/heads/main", "refs/heads/main.lock", "logs/HEAD", "packed-refs"):
        assert watcher._affected({str(git / changed)}) == [docs], changed
    for quiet in ("index", "objects/ab/cdef", "config", "hooks/post-commit"):
        assert watcher._affected({str(git / quiet)}) == [], quiet
    assert watcher._affected({str(docs / ".swap")}) == []
    assert watcher._affected({str(docs / "a.md")}) == [docs]


def test_the_top_of_the_work_tree_holds_its_git_directory(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    watcher = _watcher(tmp_path, repo)
    assert watcher.watched_folders() == [repo]  # .git is inside: watched already
    assert watcher._affected({str(repo / ".git" / "refs" / "heads" / "main")}) == [repo]
    assert watcher._affected({str(repo / ".git" / "index")}) == []


def test_with_no_commits_git_never_counts(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    watcher = _watcher(tmp_path, repo / "docs", commits=False)
    assert watcher.watched_folders() == [repo / "docs"]
    assert watcher._affected({str(repo / ".git" / "HEAD")}) == []
