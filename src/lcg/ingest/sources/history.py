"""Which git history a tree holds: its ``CommitWindow`` and the git directory a commit
changes (``history_dir``). Light on purpose (ADR 0218): the command line names the window's
default in its help and a watcher asks where to watch, neither loading the ingest engine.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import msgspec

from lcg.ingest.sources.gitread import GitRepository

__all__ = ["DEFAULT_COMMITS", "DEFAULT_WINDOW", "CommitWindow", "history_dir"]

#: Commits held per tree when no bound is given.
DEFAULT_COMMITS = 1000


class CommitWindow(msgspec.Struct, frozen=True, kw_only=True):
    """Which commits a tree holds: at most ``limit``, newest first, committed since ``since``."""

    limit: int = DEFAULT_COMMITS
    #: Only commits whose committer time is at or after this (aware) time.
    since: datetime | None = None


#: The window of a sync given none: the last ``DEFAULT_COMMITS`` commits.
DEFAULT_WINDOW = CommitWindow()


def history_dir(root: Path) -> Path | None:
    """The git directory of the work tree holding ``root`` when ``gitread`` reads it: a
    commit changes its ``HEAD``, ``refs``, ``packed-refs`` or ``logs``."""
    repo = GitRepository.open(root)
    if repo is None:
        return None
    with repo:
        return repo.gitdir
