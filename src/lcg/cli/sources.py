"""``lcg sources``: the folders and files a workspace indexes, and ``lcg sources remove PATH``.

A source is a folder or file given to ``lcg ingest`` or ``lcg watch``, known by its group and
resolved path and served under its label (ADR 0200). The list says, for each, what the group
holds of it and whether its path is still there; trees an older lcg stored without a path are
listed too, so they can be removed. Both go through the workspace's service, as ``lcg
ingest`` does (the one running, or one this command serves while it runs).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from lcg.cli._common import add_command, add_group_option, config_from, emit_json, format_table
from lcg.cli._sync import open_backend
from lcg.cli._terminal import safe
from lcg.errors import ConfigError

if TYPE_CHECKING:
    from lcg.ingest import SourceStatus, SyncBackend

__all__ = ["match_source", "register"]

_SUMMARY = "List the folders and files indexed, with what each holds; remove one."
_DETAILS = """
Each source is a folder or file given to `lcg ingest` or `lcg watch`: its group, how its files
are served (notes/, notes~2/ for a second folder named notes, README.md), the files and chunks
the group holds of it, when a sync last changed it, whether a running `lcg watch` keeps it
in sync, and its path. A path that is no longer
there (a renamed, moved or deleted folder) is marked missing: ingesting the new path makes a
new source, and `lcg sources remove OLD-PATH` removes the old one. `lcg sources remove PATH`
removes a source from its group: every episode of its files (and what was derived from them),
then the source itself; PATH may also be the source as listed (notes~2/).
"""
_EXAMPLE = """
lcg sources                              # every group's sources
lcg sources --group work --json
lcg sources remove ~/old/notes           # or: lcg sources remove notes~2/
"""


def _sources(args: argparse.Namespace) -> list[SourceStatus]:
    config = config_from(args, existing=True)
    with open_backend(config, silent=True) as (backend, _how):
        return backend.sources(None if args.group is None else [args.group])


def _list(args: argparse.Namespace) -> int:
    rows = _sources(args)
    if args.json:
        emit_json(rows)
        return 0
    if not rows:
        print("no sources: `lcg ingest PATH` adds one")
        return 0
    table = [
        [
            r.group_id,
            r.source,
            r.files,
            r.chunks,
            (r.synced_at or "")[:19].replace("T", " ") or None,
            "yes" if r.watching else "no",
            _where(r),
        ]
        for r in rows
    ]
    print(
        format_table(["GROUP", "SOURCE", "FILES", "CHUNKS", "LAST SYNC", "WATCHED", "PATH"], table)
    )
    return 0


def _where(r: SourceStatus) -> str:
    if r.root is None:
        return "(stored by an older lcg: no path recorded)"
    return f"{r.root} (missing)" if r.missing else r.root


def match_source(rows: list[SourceStatus], given: str) -> list[SourceStatus]:
    """The sources ``given`` names: by resolved path, else as listed (``notes~2/``,
    ``notes~2``, ``README.md``)."""
    path = str(Path(os.path.abspath(Path(given).expanduser())).resolve())
    by_root = [r for r in rows if r.root == path]
    if by_root:
        return by_root
    return [r for r in rows if given in (r.source, r.prefix, r.label)]


def _remove(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    with open_backend(config, silent=True) as (backend, _how):
        source = _one(backend, args.group, args.path)
        done = backend.remove(source.group_id, source.prefix)
    if args.json:
        emit_json(done)
        return 0
    where = f" ({done.root})" if done.root else ""
    print(
        safe(
            f"removed {done.source}{where} from group {done.group_id!r}: {done.files} files, "
            f"{done.chunks_removed} chunks"
        )
    )
    return 0


def _one(backend: SyncBackend, group: str | None, given: str) -> SourceStatus:
    rows = backend.sources(None if group is None else [group])
    found = match_source(rows, given)
    if not found:
        where = f"group {group!r}" if group else "any group"
        raise ConfigError(f"{given} is no source of {where}: `lcg sources` lists them")
    if len(found) > 1:
        groups = ", ".join(repr(r.group_id) for r in found)
        raise ConfigError(f"{given} is a source of groups {groups}: name one with --group")
    return found[0]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg sources`` and ``lcg sources remove``."""
    p = add_command(
        subparsers, "sources", summary=_SUMMARY, details=_DETAILS, example=_EXAMPLE, func=_list
    )
    add_group_option(p, every=True)
    p.add_argument("--json", action="store_true", help="print the sources as a JSON list")
    sub = p.add_subparsers(dest="sources_command", metavar="COMMAND")
    remove = add_command(
        sub,
        "remove",
        summary="Remove a source from its group: its files' episodes, then the source.",
        example="lcg sources remove ~/old/notes --group work",
        func=_remove,
    )
    remove.add_argument("path", metavar="PATH", help="the source's path, or the source as listed")
    add_group_option(remove, every=True)
    remove.add_argument("--json", action="store_true", help="print what was removed as JSON")
