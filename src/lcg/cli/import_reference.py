"""``lcg import-reference``: import the groups of a workspace the reference built."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lcg.cli._common import config_from, emit_json
from lcg.cli._holder import alone
from lcg.cli._service import ProgressBar, show_replay
from lcg.cli._terminal import safe
from lcg.errors import LcgError

if TYPE_CHECKING:
    from lcg.ingest import ImportResult

__all__ = ["register"]

_HELP = """Import the groups of a workspace built by the reference (liminis-context-graph):
its per-group streams of Cypher lines, every documented line family (the five-key lines, a
dump's MERGE form, graphiti-era MERGE ... ON CREATE SET with timestamp(...), FalkorDB-era
vecf32(...), a flat pre-multi-group WAL directory). PATH is the reference workspace, its WAL
root, one group's directory, or the target directory of a knowledge_dump_wal (with no group:
one compacted stream of every group, the reference's restore point). A directory of streams
given alone (a dump, a flat root, a group's directory) sends each row to the group its own
group_id names: one import per group found.

Each line is parsed against the reference's documented templates and applied, as values, to
an in-memory copy of the reference's tables; no line is ever executed. Each group's rows are
written into this workspace as a new stream (a fresh generation) of lcg events: uuids, names,
summaries, facts, times, labels, attributes, relation types, episodes and mentions are kept;
stored vectors are not (they are computed again from the text). A group this workspace already
has is refused unless --force replaces its stream (its old stream and marks are removed).

Whatever could not be mapped (an unparseable line, one that is not a documented template, a
statement that fails or matches nothing, a row lcg has no event for, a row whose uuid another
group of this workspace holds) is listed with counts and samples; then nothing is written and
the command exits 1, unless --accept-loss imports the rest. The service must be stopped first:
it holds the workspace.

Example:
  lcg import-reference ~/old-notes
  lcg import-reference ~/old-notes/.lcg/wal --group liminis --force
  lcg import-reference ~/old-notes/.lcg/wal-compacted
  lcg -C ~/notes import-reference /backup/wal --accept-loss --json
"""


def _counts(values: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in values.items())


def _show(result: ImportResult) -> None:
    verb = "imported" if result.written else "read"
    if result.routed_by_row:
        names = ", ".join(g.group_id for g in result.groups)
        print(
            safe(
                f"one stream ({result.layout}) at {result.source}: rows go to the group "
                f"each names: {len(result.groups)} group(s): {names}"
            )
        )
    for g in result.groups:
        line = (
            f"group {g.group_id}: {verb} {g.entities} entities, {g.edges} edges, "
            f"{g.episodes} episodes, {g.mentions} mentions from {g.files} files "
            f"({g.lines} lines, {g.lines_replayed} replayed)"
        )
        if result.written:
            line += f"; new stream, generation {g.generation}"
            if g.replaced:
                line += " (replaced the old stream)"
        print(safe(line))
        if g.not_carried:
            print(safe(f"  not carried on purpose: {_counts(g.not_carried)}"))
        if g.unmapped:
            print(safe(f"  NOT MAPPED {sum(g.unmapped.values())}: {_counts(g.unmapped)}"))
            for s in g.samples:
                print(safe(f"    {s.reason} at {s.where}: {s.detail}"))
    if result.loss_accepted:
        print(f"loss accepted: {result.unmapped_total} line(s) or row(s) not mapped")


def _run(args: argparse.Namespace) -> int:
    from lcg.ingest import import_reference

    config = config_from(args)
    with alone(config, "import-reference", quiet=args.silent) as client:
        if client is not None:
            raise LcgError(
                f"a service is running in the workspace {config.workspace}: it holds the "
                "streams and projections an import replaces; stop it (Ctrl-C on `lcg serve`, "
                "or the knowledge_close method), run the import, then start the service again"
            )
        lines_bar = ProgressBar("reading", silent=args.silent)
        apply_bar = ProgressBar("applying", silent=args.silent)
        try:
            result = import_reference(
                config,
                Path(args.path).expanduser().resolve(),
                groups=args.group,
                force=args.force,
                accept_loss=args.accept_loss,
                on_lines=lambda done, total, group: lines_bar.update(done, total, group),
                progress=lambda p: show_replay(apply_bar, p, name_group=True),
            )
        finally:
            lines_bar.done()
            apply_bar.done()
    if args.json:
        emit_json(result, indent=2)
    else:
        _show(result)
    if result.message:
        said = f"Error: {result.message}" if not result.success else result.message
        print(safe(said, lines=True), file=sys.stderr)
    return 0 if result.success else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg import-reference``."""
    p = subparsers.add_parser(
        "import-reference",
        help="import a workspace built by the reference (its Cypher streams)",
        description=_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", metavar="PATH", help="the reference workspace, WAL root or group dir")
    p.add_argument(
        "--group",
        action="append",
        default=None,
        metavar="G",
        help="import only group G (repeatable; default: every group found)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace a group this workspace already has"
    )
    p.add_argument(
        "--accept-loss",
        action="store_true",
        help="import even when some lines or rows could not be mapped (they are listed)",
    )
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("-s", "--silent", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
