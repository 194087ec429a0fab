"""``lcg ingest`` of a folder runs nothing the folder's own git configuration names (issue 27
item 1, ADR 0191), and a commit's time is data that cannot abort the run.

Each tree is a real git repository built with real ``git``, carrying a command that writes a
marker file when run: ``core.fsmonitor`` in ``.git/config``; a clean filter and a filter
process for ``*.md`` through ``.gitattributes``; the folder as its own git directory with
``core.worktree=.`` and no ``.git``; a ``.git`` *file* pointing to a git directory inside the
tree; an ``include.path`` to a config in the tree that sets the fsmonitor. Then a real ``lcg
ingest`` subprocess (offline, lite mode) syncs the tree: it succeeds and the marker never
appears. Before the change (``git status`` ran in the tree) the fsmonitor ran on every ingest.

Commit times are untrusted: a commit dated year 10000 and one with the offset +99:59 abort
nothing (before the change either aborted the whole ingest); the files take their mtimes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import _service_fixtures as sf

COMMITTED = "2021-02-03T04:05:06Z"
#: 2022-06-01T00:00:00Z, as a modification time.
MTIME = 1_654_041_600
MTIME_TEXT = "2022-06-01T00:00:00.000000Z"
#: A day later: the edited note's modification time.
EDITED = MTIME + 86_400
EDITED_TEXT = "2022-06-02T00:00:00.000000Z"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str, date: str = COMMITTED) -> None:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_AUTHOR_DATE": COMMITTED,
        "GIT_COMMITTER_DATE": date,
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _note(path: Path, text: str, mtime: int = MTIME) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return path


def _evil(tmp_path: Path) -> tuple[Path, Path]:
    """A script that writes a marker file (and passes its input through, as a filter
    would), and that marker's path."""
    marker = tmp_path / "marker"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\ncat\n")
    script.chmod(0o755)
    return script, marker


def _committed(tree: Path, *extra: str) -> None:
    """``tree`` with two notes, committed (``extra``: ``git init`` options)."""
    tree.mkdir(parents=True, exist_ok=True)
    _git(tree, "init", "-q", *extra)
    _note(tree / "kept.md", "# Kept\n\nA note committed and never changed since.\n")
    _note(tree / "edited.md", "# Edited\n\nA note committed, then changed.\n")
    _git(tree, "add", "kept.md", "edited.md")
    _git(tree, "commit", "-q", "-m", "notes")


def _edit(tree: Path) -> None:
    # A tracked file changed after the commit, to the same size and a later mtime: only its
    # content can tell ``git status`` whether it changed, so git re-reads it (filters run).
    _note(tree / "edited.md", "# Edited\n\nA note committed, then CHANGED.\n", EDITED)


def _config(gitdir: Path, text: str) -> None:
    with (gitdir / "config").open("a") as fh:
        fh.write(text)


def fsmonitor(tmp_path: Path, script: Path) -> Path:
    tree = tmp_path / "tree"
    _committed(tree)
    _config(tree / ".git", f"[core]\n\tfsmonitor = {script}\n")
    _edit(tree)
    return tree


def clean_filter(tmp_path: Path, script: Path) -> Path:
    tree = tmp_path / "tree"
    _committed(tree)
    _note(tree / ".gitattributes", "*.md filter=x\n")
    _config(tree / ".git", f'[filter "x"]\n\tclean = {script}\n\tprocess = {script}\n')
    _edit(tree)
    return tree


def own_git_dir(tmp_path: Path, script: Path) -> Path:
    # The folder *is* the git directory (HEAD, objects, refs, config) and its own work tree.
    source = tmp_path / "source"
    _committed(source)
    tree = tmp_path / "tree"
    shutil.move(source / ".git", tree)
    for note in ("kept.md", "edited.md"):
        shutil.move(source / note, tree / note)
    _config(tree, f"[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = {script}\n")
    _edit(tree)
    return tree


def dotgit_file(tmp_path: Path, script: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "inner").mkdir(parents=True)
    _committed(tree, "--separate-git-dir", str(tree / "inner" / "gd"))
    assert (tree / ".git").is_file()
    _config(tree / "inner" / "gd", f"[core]\n\tfsmonitor = {script}\n")
    _edit(tree)
    return tree


def include_path(tmp_path: Path, script: Path) -> Path:
    tree = tmp_path / "tree"
    _committed(tree)
    _note(tree / "extra.config", f"[core]\n\tfsmonitor = {script}\n")
    _config(tree / ".git", "[include]\n\tpath = ../extra.config\n")
    _edit(tree)
    return tree


CASES: dict[str, Callable[[Path, Path], Path]] = {
    "fsmonitor": fsmonitor,
    "clean-filter": clean_filter,
    "own-git-dir": own_git_dir,
    "dotgit-file": dotgit_file,
    "include-path": include_path,
}


def _ingest(tmp_path: Path, tree: Path) -> dict[str, str]:
    """``lcg ingest TREE`` in a subprocess: each stored note's ``valid_at`` by file name."""
    ws = tmp_path / "ws"
    ws.mkdir()
    done = sf.run_lcg(ws, "ingest", str(tree), "-s")
    assert done.returncode == 0, done.stderr
    times: dict[str, str] = {}
    for lines in sf.stream_events(ws / ".lcg" / "wal").values():
        for event in lines:
            # A commit's episode (ADR 0205) is no file's: its times are test_commit_episodes'.
            if (
                event["type"] == "EpisodeAdded"
                and ".git/commits:" not in event["source_description"]
            ):
                source = event["source_description"].split(":", 1)[0]
                times[source.split("/", 1)[1]] = event["valid_at"]
    return times


@pytest.mark.parametrize("case", list(CASES))
def test_ingest_runs_nothing_a_tree_configures(tmp_path: Path, case: str) -> None:
    script, marker = _evil(tmp_path)
    tree = CASES[case](tmp_path, script)
    # The trap is armed: git itself runs the command in this tree.
    probe = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tree, capture_output=True, check=False
    )
    assert marker.exists(), (case, probe.stderr)
    marker.unlink()
    times = _ingest(tmp_path, tree)
    assert not marker.exists(), f"lcg ingest ran the tree's {case} command"
    assert {"kept.md", "edited.md"} <= set(times)
    if case in ("fsmonitor", "clean-filter"):
        # A plain layout is still read: the unchanged note has its commit time.
        assert times["kept.md"] == "2021-02-03T04:05:06.000000Z"
    else:
        # A layout this reader does not follow: every file has its modification time.
        assert times["kept.md"] == MTIME_TEXT
    assert times["edited.md"] == EDITED_TEXT


@pytest.mark.parametrize(
    "date",
    ["@253402300800 +0000", "@1600000000 +9959"],
    ids=["year-10000", "offset-plus-99-59"],
)
def test_a_commit_time_out_of_range_aborts_nothing(tmp_path: Path, date: str) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    _git(tree, "init", "-q")
    _note(tree / "old.md", "# Old\n\nCommitted at a sane time.\n")
    _git(tree, "add", "old.md")
    _git(tree, "commit", "-q", "-m", "sane")
    _note(tree / "odd.md", "# Odd\n\nCommitted at an impossible time.\n")
    _git(tree, "add", "odd.md")
    _git(tree, "commit", "-q", "-m", "odd", date=date)
    times = _ingest(tmp_path, tree)
    assert times == {"old.md": "2021-02-03T04:05:06.000000Z", "odd.md": MTIME_TEXT}
