"""Which time a source file's chunks carry (``ingest/sources/times``): its last commit when git
tracks it unchanged, else its modification time, never later than now. Real files and a real
git repository in a temporary folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from lcg import timestamps
from lcg.ingest.sources import source_times

COMMITTED = "2021-02-03T04:05:06Z"
#: 2022-06-01T00:00:00Z, as a modification time.
MTIME = 1_654_041_600


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_COMMITTER_DATE": COMMITTED, "GIT_AUTHOR_DATE": COMMITTED}
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )


def _file(path: Path, text: str, mtime: int = MTIME) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return path


def _times(folder: Path, *paths: Path) -> list[str]:
    got = source_times(folder, {p: p.stat().st_mtime_ns for p in paths})
    return [got[p] for p in paths]


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    return repo


def test_a_file_outside_git_has_its_modification_time(tmp_path: Path) -> None:
    note = _file(tmp_path / "plain" / "a.md", "a")
    assert _times(note.parent, note) == ["2022-06-01T00:00:00.000000Z"]


def test_a_committed_unchanged_file_has_its_commit_time(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    note = _file(repo / "notes" / "a.md", "a")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "add")
    assert _times(repo / "notes", note) == ["2021-02-03T04:05:06.000000Z"]


def test_a_changed_or_untracked_file_has_its_modification_time(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    changed = _file(repo / "a.md", "a")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "add")
    _file(changed, "a, edited")
    untracked = _file(repo / "b.md", "b")
    assert _times(repo, changed, untracked) == ["2022-06-01T00:00:00.000000Z"] * 2


def test_a_time_in_the_future_is_brought_back_to_now(tmp_path: Path) -> None:
    before = timestamps.now()
    ahead = _file(tmp_path / "plain" / "a.md", "a", mtime=4_102_444_800)  # 2100-01-01
    (when,) = _times(ahead.parent, ahead)
    assert before <= when <= timestamps.now()


def test_a_modification_time_past_year_9999_or_before_year_1_is_clamped(tmp_path: Path) -> None:
    # As the file system reports them (in ns); no file system need hold such a time.
    far = _file(tmp_path / "plain" / "far.md", "far")
    early = _file(tmp_path / "plain" / "early.md", "early")
    before = timestamps.now()
    got = source_times(far.parent, {far: 300_000_000_000 * 10**9, early: -70_000_000_000 * 10**9})
    assert before <= got[far] <= timestamps.now()
    assert got[early] == "0001-01-01T00:00:00.000000Z"


def test_a_commit_whose_time_is_unusable_leaves_the_file_its_mtime(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    kept = _file(repo / "kept.md", "kept")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "sane")
    odd = _file(repo / "odd.md", "odd")
    env = {**os.environ, "GIT_COMMITTER_DATE": "@253402300800 +0000"}  # year 10000
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "odd.md"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    assert _times(repo, kept, odd) == ["2021-02-03T04:05:06.000000Z", "2022-06-01T00:00:00.000000Z"]
