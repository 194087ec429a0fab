"""``lcg ingest PATH...``: put files and folders into a group, and keep them in sync.

Each PATH is a source (a folder, or one file) known by its resolved path and served under its
own name (``notes~2`` when another source of the group has that name; ADR 0200); a PATH
inside an indexed folder syncs that part of it. Ingesting it again brings the group's copy up
to date: new and edited chunks are added, the old text of an edited chunk and the chunks of
deleted or moved files are removed, and an unchanged tree appends nothing. A tree with no
file to read (empty, missing) removes nothing without ``--prune``. Through the workspace's
service.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from lcg.cli._common import add_command, config_from, emit_json
from lcg.cli._sync import SyncBar, summary_line, with_backend
from lcg.cli._terminal import safe
from lcg.errors import ConfigError
from lcg.events import DEFAULT_GROUP
from lcg.ingest import (
    DEFAULT_COMMITS,
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    CommitWindow,
    format_list,
)

if TYPE_CHECKING:
    from lcg.ingest import SyncBackend, SyncReport

__all__ = [
    "IngestSummary",
    "add_commit_options",
    "check_roots",
    "commit_window",
    "held_line",
    "missing_lines",
    "register",
]

_SUMMARY = "Ingest files and folders into a group, and bring them up to date on every run."
#: ``{formats}`` is the table of formats in words (``format_list``); the paragraph is wrapped
#: when the parser is built.
_DETAILS = """
Folders are read recursively: {formats}; .gitignore and .lcgignore rules hold, hidden
folders and files are passed over, and binary, unreadable or oversized files are skipped and
named (PDF is not read). A folder is a source known by its full path and served as <its
name>/<path inside it>; a second folder of the same name in the group is served as
<name>~2/... A file or folder inside an indexed folder is synced as part of it. Running it
again syncs: edited chunks are replaced, deleted and moved files removed, and an unchanged
tree appends nothing. A folder with no file to read (emptied, unmounted, missing) removes
nothing unless --prune is given. A renamed or moved folder is a new source; `lcg sources`
lists the old one as missing and `lcg sources remove OLD-PATH` removes it. A file's time is
its last git commit (else its modification time). Inside a git work tree, each of the last
1,000 commits that touched a folder (--commits N, --since DATE; --no-commits for none) is an
episode of it: its message, author, date and files, at its author time. Git is read as data:
nothing a repository configures runs. With no LLM configured the chunks are stored and
searchable, and extraction stays pending.
"""
_EXAMPLE = """
lcg ingest ~/notes                       # into group 'liminis'
lcg ingest ~/notes docs/ --group work --json
lcg ingest ~/notes/today.md              # one file of the indexed ~/notes
lcg ingest ~/code --since 2025-01-01     # with the commits made since
lcg search "how do I rotate the keys"
lcg sources                              # what is indexed; lcg sources remove PATH
"""


class IngestSummary(msgspec.Struct, kw_only=True):
    """``--json``: the counts of every tree together, then each tree's own."""

    group_id: str
    files_new: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    files_skipped: int = 0
    #: Files kept although their tree had no file to read (no ``--prune``).
    files_held: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_unchanged: int = 0
    extracted: int = 0
    pending: int = 0
    #: Git commits read, added and removed as episodes (ADR 0205).
    commits_read: int = 0
    commits_added: int = 0
    commits_removed: int = 0
    seconds: float = 0.0
    trees: list[SyncReport] = []


def check_roots(paths: list[str], *, missing_ok: bool = False) -> list[Path]:
    """The PATHs as given (``~`` expanded), each resolved path once; a ``ConfigError`` for a
    missing one unless ``missing_ok`` (``lcg ingest`` checks it against the group's sources:
    a registered source that is gone is synced, its files held back without ``--prune``)."""
    roots: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw).expanduser()
        if not missing_ok and not os.path.lexists(path):
            raise ConfigError(f"no such file or folder: {raw}")
        resolved = path.resolve()
        if resolved not in seen:
            seen.add(resolved)
            roots.append(path)
    return roots


def _check_missing(backend: SyncBackend, group_id: str, roots: list[Path]) -> None:
    """``ConfigError`` for a PATH that is not there and is no source of the group."""
    for root in roots:
        if not os.path.lexists(root):
            found = backend.resolve(group_id, str(root.resolve()), "folder", create=False)
            if found.source is None:
                raise ConfigError(f"no such file or folder: {root}")


def held_line(r: SyncReport) -> str | None:
    """What a sync kept back for want of ``--prune`` (``None``: nothing)."""
    if not r.files_held:
        return None
    return (
        f"  kept {r.files_held} stored files of {r.source}: {r.held_because}; "
        f"`lcg ingest --prune {r.root}` removes them (or `lcg sources remove {r.root}`)"
    )


def missing_lines(backend: SyncBackend, group_id: str) -> list[str]:
    """A line per source of the group whose folder or file is gone (renamed, moved)."""
    return [
        f"  note: source {s.source} ({s.root}) is missing: `lcg sources remove {s.root}` "
        f"removes its {s.files} files"
        for s in backend.sources([group_id])
        if s.missing and s.root is not None
    ]


def _total(group_id: str, reports: list[SyncReport]) -> IngestSummary:
    out = IngestSummary(group_id=group_id, trees=reports)
    for r in reports:
        out.files_new += r.files_new
        out.files_changed += r.files_changed
        out.files_unchanged += r.files_unchanged
        out.files_removed += r.files_removed
        out.files_skipped += r.files_skipped
        out.files_held += r.files_held
        out.chunks_added += r.chunks_added
        out.chunks_removed += r.chunks_removed
        out.chunks_unchanged += r.chunks_unchanged
        out.extracted += r.extracted
        out.pending += r.pending
        out.commits_read += r.commits_read
        out.commits_added += r.commits_added
        out.commits_removed += r.commits_removed
        out.seconds = round(out.seconds + r.seconds, 3)
    return out


def _run(args: argparse.Namespace) -> int:
    from lcg.ingest import sync_tree

    roots = check_roots(args.paths, missing_ok=True)
    config = config_from(args)
    quiet = args.silent or args.json

    def ingest(backend: SyncBackend, how: str) -> tuple[list[SyncReport], str]:
        # Run again from here through the workspace's next holder should the one used end.
        _check_missing(backend, args.group, roots)
        reports: list[SyncReport] = []
        for root in roots:
            bar = SyncBar(f"ingesting {root.name or root}", silent=quiet)
            try:
                report = sync_tree(
                    backend,
                    root,
                    args.group,
                    prune=args.prune,
                    max_chars=args.max_chars,
                    max_bytes=args.max_bytes,
                    progress=bar,
                    commits=commit_window(args),
                )
            finally:
                bar.done()
            reports.append(report)
            if not args.json:
                print(safe(summary_line(report)))
                held = held_line(report)
                if held is not None:
                    print(safe(held))
                for s in report.skipped:
                    print(f"  skipped {safe(s.path)}: {safe(s.reason)}")
        if not args.json:
            for line in missing_lines(backend, args.group):
                print(safe(line))
        return reports, how

    reports, how = with_backend(config, ingest, silent=quiet)
    if args.json:
        emit_json(_total(args.group, reports))
    elif not args.silent:
        print(f"lcg ingest: workspace {safe(config.workspace)} ({how})", file=sys.stderr)
    return 0


def _since(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is no date: give YYYY-MM-DD or an ISO 8601 time"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is no count of commits (0 or more)")
    return n


def add_commit_options(p: argparse.ArgumentParser) -> None:
    """``--commits N``, ``--since DATE`` and ``--no-commits`` (``lcg ingest``, ``lcg watch``)."""
    p.add_argument(
        "--commits",
        type=_count,
        default=DEFAULT_COMMITS,
        metavar="N",
        help=f"a folder's last N git commits are episodes of it (default {DEFAULT_COMMITS:,})",
    )
    p.add_argument(
        "--since",
        type=_since,
        metavar="DATE",
        help="only the commits made since DATE (YYYY-MM-DD, or an ISO 8601 time)",
    )
    p.add_argument(
        "--no-commits",
        action="store_true",
        help="no commit episodes (those the group holds of the folder are removed)",
    )


def commit_window(args: argparse.Namespace) -> CommitWindow | None:
    """The commits a sync holds as ``add_commit_options`` parsed them (``None``: none)."""
    if args.no_commits:
        return None
    return CommitWindow(limit=args.commits, since=args.since)


def _details() -> str:
    """The description's paragraph, naming the formats the table of formats lists."""
    text = " ".join(_DETAILS.split()).replace("{formats}", format_list())
    return textwrap.fill(text, width=92, break_on_hyphens=False, break_long_words=False)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg ingest``."""
    p = add_command(
        subparsers, "ingest", summary=_SUMMARY, details=_details(), example=_EXAMPLE, func=_run
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a file or folder to ingest")
    p.add_argument(
        "-g",
        "--group",
        default=DEFAULT_GROUP,
        metavar="G",
        help=f"the group (default {DEFAULT_GROUP!r})",
    )
    p.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    p.add_argument(
        "--prune",
        action="store_true",
        help="remove the stored files of a tree that has no file to read (empty or missing)",
    )
    p.add_argument("-s", "--silent", action="store_true", help="no progress bar")
    add_commit_options(p)
    p.add_argument(
        "--max-chars",
        type=int,
        default=DEFAULT_MAX_CHARS,
        metavar="N",
        help=f"longest chunk in characters (default {DEFAULT_MAX_CHARS}, ADR 0161)",
    )
    p.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_FILE_BYTES,
        metavar="N",
        help=f"skip files larger than N bytes (default {DEFAULT_MAX_FILE_BYTES:,})",
    )
