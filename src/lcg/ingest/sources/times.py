"""A source file's time: its last git commit inside a git work tree, else its modification time.

The history is read as data (``gitread``, ADR 0191): no ``git`` process runs, so nothing a
tree's own git configuration names (an fsmonitor, a filter, a hook) ever runs either. A file
counts as unchanged when its bytes hash to the blob ``HEAD`` holds for it; an unchanged file
takes the time of the newest commit that touched it, found in one walk of the history that
stops once every such file was seen (at most ``GIT_WALK_LIMIT`` commits), so a tree of
thousands of files costs one walk, not one per file. A changed or untracked file takes its
modification time, which is then the newer and truer one; so does a file whose commit names no
usable time (a year past 9999, an impossible offset: commits are untrusted data), one older
than the walk reaches, and every file of a repository not read (``gitread``'s layouts).

A time in the future (a skewed clock, a copied file) is brought back to now: a passage is never
hidden from a search asked "now" by a clock's error. A modification time before year 1 is year
1's first instant.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from lcg import timestamps
from lcg.ingest.sources.gitread import GitRepository, blob_id

__all__ = ["git_commit_times", "source_times"]

_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)


def git_commit_times(folder: Path, wanted: Iterable[Path]) -> dict[Path, datetime]:
    """The last commit time of each of ``wanted`` (absolute paths) that git tracks, unchanged
    since; files outside a work tree, untracked, modified, or whose commit has no usable time
    are left out."""
    repo = GitRepository.open(folder)
    if repo is None:
        return {}
    with repo:
        want: dict[str, Path] = {}
        for path in wanted:
            try:
                real = Path(os.path.realpath(path.parent)) / path.name
                want[real.relative_to(repo.top).as_posix()] = path
            except (OSError, ValueError):
                continue
        if not want:
            return {}
        head = repo.head_blobs(want)
        # Hashing reads each file once more; it is what ``git status`` would have done
        # without the index's stat cache, and it trusts nothing the repository says.
        clean = {rel for rel, blob in head.items() if blob_id(want[rel]) == blob}
        found: dict[Path, datetime] = {}
        for commit in repo.iter_commits(within=set(clean)):
            if not clean:
                break
            for rel in clean.intersection(commit.touched):
                clean.discard(rel)
                if commit.committed_at is not None:
                    found[want[rel]] = commit.committed_at
        return found


def _modified(mtime_ns: int, now: datetime) -> datetime:
    try:
        return datetime.fromtimestamp(mtime_ns / 1e9, UTC)
    except (OverflowError, OSError, ValueError):
        # Past year 9999 is in the future (brought back to now below); before year 1, year 1.
        return now if mtime_ns > 0 else _EARLIEST


def source_times(folder: Path, files: dict[Path, int]) -> dict[Path, str]:
    """The source time of each file (absolute path → its ``mtime_ns``), RFC 3339 UTC."""
    commits = git_commit_times(folder, files)
    now = datetime.now(UTC)
    out: dict[Path, str] = {}
    for path, mtime_ns in files.items():
        when = commits.get(path) or _modified(mtime_ns, now)
        out[path] = timestamps.to_text(min(when, now))
    return out
