"""``lcg ingest PATH...``: put files and folders into a group, and keep them in sync.

Each PATH is a source tree (a folder, or one file) named by its own name; ingesting it again
brings the group's copy up to date: new and edited chunks are added, the old text of an
edited chunk and the chunks of deleted or moved files are removed, and an unchanged tree
appends nothing. Through the running service when there is one, else in this process.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from lcg.cli._common import add_command, config_from, emit_json
from lcg.cli._sync import SyncBar, open_backend, summary_line
from lcg.cli._terminal import safe
from lcg.errors import ConfigError
from lcg.events import DEFAULT_GROUP
from lcg.ingest import DEFAULT_MAX_CHARS, DEFAULT_MAX_FILE_BYTES, SyncReport, sync_tree, tree_scope

__all__ = ["IngestSummary", "check_roots", "register"]

_SUMMARY = "Ingest files and folders into a group, and bring them up to date on every run."
_DETAILS = """
Folders are read recursively: Markdown, text, reStructuredText, Org, HTML (text only),
JSON/JSONL and source code; .gitignore and .lcgignore rules hold, hidden folders and files
are passed over, and binary, unreadable or oversized files are skipped and named (PDF is not
read). A folder is served as <its name>/<path inside it>. Running it again syncs: edited
chunks are replaced, deleted and moved files removed, and an unchanged tree appends nothing.
A file's time is its last git commit (else its modification time). With no LLM configured
the chunks are stored and searchable, and extraction stays pending.
"""
_EXAMPLE = """
lcg ingest ~/notes                       # into group 'liminis'
lcg ingest ~/notes docs/ --group work --json
lcg search "how do I rotate the keys"
"""


class IngestSummary(msgspec.Struct, kw_only=True):
    """``--json``: the counts of every tree together, then each tree's own."""

    group_id: str
    files_new: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    files_skipped: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_unchanged: int = 0
    extracted: int = 0
    pending: int = 0
    seconds: float = 0.0
    trees: list[SyncReport] = []


def check_roots(paths: list[str]) -> list[Path]:
    """The PATHs as trees; a ``ConfigError`` for a missing one or two of the same name."""
    roots: list[Path] = []
    names: dict[str, str] = {}
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise ConfigError(f"no such file or folder: {raw}")
        prefix = tree_scope(path).prefix
        if prefix in names and Path(names[prefix]).resolve() != path.resolve():
            raise ConfigError(
                f"{raw} and {names[prefix]} would both be served as {prefix!r}: ingest them "
                "into different groups (--group), or give their common parent folder"
            )
        if prefix not in names:
            names[prefix] = raw
            roots.append(path)
    return roots


def _total(group_id: str, reports: list[SyncReport]) -> IngestSummary:
    out = IngestSummary(group_id=group_id, trees=reports)
    for r in reports:
        out.files_new += r.files_new
        out.files_changed += r.files_changed
        out.files_unchanged += r.files_unchanged
        out.files_removed += r.files_removed
        out.files_skipped += r.files_skipped
        out.chunks_added += r.chunks_added
        out.chunks_removed += r.chunks_removed
        out.chunks_unchanged += r.chunks_unchanged
        out.extracted += r.extracted
        out.pending += r.pending
        out.seconds = round(out.seconds + r.seconds, 3)
    return out


def _run(args: argparse.Namespace) -> int:
    roots = check_roots(args.paths)
    config = config_from(args)
    quiet = args.silent or args.json
    reports: list[SyncReport] = []
    with open_backend(config, silent=quiet) as (backend, how):
        for root in roots:
            bar = SyncBar(f"ingesting {tree_scope(root).prefix.rstrip(':')}", silent=quiet)
            try:
                report = sync_tree(
                    backend,
                    root,
                    args.group,
                    max_chars=args.max_chars,
                    max_bytes=args.max_bytes,
                    progress=bar,
                )
            finally:
                bar.done()
            reports.append(report)
            if not args.json:
                print(safe(summary_line(report)))
                for s in report.skipped:
                    print(f"  skipped {safe(s.path)}: {safe(s.reason)}")
    if args.json:
        emit_json(_total(args.group, reports))
    elif not args.silent:
        print(f"lcg ingest: workspace {safe(config.workspace)} ({how})", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg ingest``."""
    p = add_command(
        subparsers, "ingest", summary=_SUMMARY, details=_DETAILS, example=_EXAMPLE, func=_run
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
    p.add_argument("-s", "--silent", action="store_true", help="no progress bar")
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
