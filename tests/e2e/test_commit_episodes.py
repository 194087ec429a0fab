"""Commits as episodes through the real CLI (issue 29 item 2, ADR 0205).

A real git repository made with real ``git`` (dated commits, a message saying why the exports
were split), with hooks and a ``core.fsmonitor`` armed to write a marker when run (``git
status`` in it runs the fsmonitor). A real ``lcg ingest`` subprocess (offline, lite mode): the
commit is an episode at its author time, ``lcg search "why did we split the exports"`` finds
it first, nothing the repository configures runs, an ingest again appends nothing, and
``--commits`` / ``--since`` / ``--no-commits`` bound what is held. A real ``lcg watch`` of a
folder inside the work tree: a commit made while it watches becomes an episode.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str, date: str = "2021-02-03T04:05:06Z") -> None:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Priya Raman",
        "GIT_AUTHOR_EMAIL": "priya@example.com",
        "GIT_COMMITTER_NAME": "Priya Raman",
        "GIT_COMMITTER_EMAIL": "priya@example.com",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _commit(repo: Path, files: dict[str, str], message: str, date: str) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message, date=date)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _commit(
        repo,
        {"exports.py": "def export(rows, fmt):\n    pass\n", "docs/notes.md": "# Notes\n"},
        "Start the exporter",
        "2023-01-10T09:00:00+01:00",
    )
    _commit(
        repo,
        {"csv_export.py": "def to_csv(rows): ...\n", "exports.py": "from csv_export import *\n"},
        "Split the exports into one module per format\n\n"
        "The CSV writer kept breaking the JSON one, so each format gets its own module.",
        "2023-03-14T15:09:26-04:00",
    )
    _commit(repo, {"docs/notes.md": "# Notes\n\nMore.\n"}, "Note more", "2023-05-01T00:00:00Z")
    return repo


def _arm(tmp_path: Path, repo: Path) -> Path:
    """Hooks and an fsmonitor that write a marker when run; the marker's path."""
    marker = tmp_path / "marker"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    script.chmod(0o755)
    for hook in ("post-checkout", "post-commit", "pre-commit", "reference-transaction"):
        shutil.copy(script, repo / ".git" / "hooks" / hook)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(f"[core]\n\tfsmonitor = {script}\n")
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=False)
    assert marker.exists(), "the trap is armed: git itself runs it in this repository"
    marker.unlink()
    return marker


def _ingest(lcg_main: sf.LcgMain, ws: Path, *args: str) -> dict[str, Any]:
    done = lcg_main(ws, "ingest", *args, "--json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _commit_events(ws: Path) -> list[dict[str, Any]]:
    return [
        e
        for lines in sf.stream_events(ws / ".lcg" / "wal").values()
        for e in lines
        if e["type"] == "EpisodeAdded" and ".git/commits:" in e["source_description"]
    ]


def test_a_commit_is_a_searchable_episode_at_its_time(tmp_path: Path, lcg_main: sf.LcgMain) -> None:
    repo = _repo(tmp_path)
    marker = _arm(tmp_path, repo)
    ws = tmp_path / "ws"
    ws.mkdir()
    first = _ingest(lcg_main, ws, str(repo))
    assert not marker.exists(), "lcg ingest ran a command the repository configures"
    assert (first["commits_read"], first["commits_added"]) == (3, 3)
    assert first["files_new"] == 3  # exports.py, csv_export.py, docs/notes.md
    (split,) = [e for e in _commit_events(ws) if "Split the exports" in e["content"]]
    assert split["valid_at"] == "2023-03-14T19:09:26.000000Z"
    assert "Date: 2023-03-14T15:09:26-04:00" in split["content"]
    assert "Files: csv_export.py, exports.py" in split["content"]
    assert "priya@example.com" not in split["content"]

    done = lcg_main(ws, "search", "why did we split the exports", "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert hits and "Split the exports" in hits[0]["text"], hits
    assert hits[0]["source_file"] == "proj/.git/commits"
    assert hits[0]["reference_time"].replace("T", " ").startswith("2023-03-14 19:09:26")

    wal = sf.stream_bytes(ws / ".lcg" / "wal")
    again = _ingest(lcg_main, ws, str(repo))
    assert (again["commits_read"], again["commits_added"], again["chunks_added"]) == (3, 0, 0)
    assert again["files_removed"] == 0
    assert sf.stream_bytes(ws / ".lcg" / "wal") == wal, "an ingest again appends nothing"
    assert not marker.exists()


def test_the_count_since_and_no_commits_bound_what_is_held(
    tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    repo = _repo(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    one = _ingest(lcg_main, ws, str(repo), "--commits", "1")
    assert (one["commits_read"], one["commits_added"]) == (1, 1)
    since = _ingest(lcg_main, ws, str(repo), "--since", "2023-03-01")
    assert (since["commits_read"], since["commits_added"], since["commits_removed"]) == (2, 1, 0)
    none = _ingest(lcg_main, ws, str(repo), "--no-commits")
    assert (none["commits_read"], none["commits_removed"]) == (0, 2)
    bad = lcg_main(ws, "ingest", str(repo), "--since", "last tuesday")
    assert bad.returncode == 2 and "is no date" in bad.stderr


def test_a_commit_made_while_watching_becomes_an_episode(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    docs = repo / "docs"  # a folder inside the work tree: .git is watched beside it
    ws = sf.short_tmp()
    proc, log = sf.spawn_lcg(ws, "watch", str(docs))
    try:
        sf.eventually(lambda: "watching 1 tree" in log.read_text(), log.read_text, proc=proc)
        assert "commits 2 read, 2 added" in log.read_text()  # docs/notes.md's two commits
        # The file is saved and synced first: the commit then changes nothing in docs/.
        (docs / "plan.md").write_text("# Plan\n\nShip the quarterly report.\n")
        sf.eventually(
            lambda: "files 1 new" in log.read_text().split("watching 1 tree")[1],
            log.read_text,
            proc=proc,
        )
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "Plan the quarterly report", date="2023-06-01T00:00:00Z")
        sf.eventually(
            lambda: any("Plan the quarterly report" in e["content"] for e in _commit_events(ws)),
            log.read_text,
            proc=proc,
        )
        (added,) = [e for e in _commit_events(ws) if "Plan the quarterly" in e["content"]]
        assert added["valid_at"] == "2023-06-01T00:00:00.000000Z"
        assert added["source_description"].startswith("docs/.git/commits:docs/.git/commits#")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
