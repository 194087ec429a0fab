"""``lcg dump``: compact groups into a new stream with a fresh generation."""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec

from lcg.cli._common import config_from, emit_json, group_dir
from lcg.cli._holder import alone
from lcg.cli._service import open_direct
from lcg.cli._terminal import safe
from lcg.errors import StreamError
from lcg.events import encode_group

__all__ = ["register"]

_HELP = """Write the current state of one group (or all) as a new, minimal event stream with
a fresh generation. DIR must be empty or absent; it becomes a stream root, one directory per
group (DIR/<group>/), whether a service runs or not: `lcg publish --stream-root DIR` publishes
it as is, and DIR/<group>/ can take the place of .lcg/wal/<group>/ while the service is
stopped. Replaying the dump reproduces the same digests. While `lcg serve` runs, the service
writes the dump, so DIR must be inside the workspace (or under LCG_EXPORT_ROOT).

Example:
  lcg dump --group liminis --to .lcg/wal-compacted
  lcg publish --group liminis --repo ~/pub --reset --stream-root .lcg/wal-compacted
"""


def _run(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    if args.group is not None:
        group_dir(config, args.group)  # an unknown group is an error, as in `lcg wal tail`
    target = Path(args.to).resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise StreamError(
            f"dump target {target} is not empty; choose a new directory or empty it first"
        )
    with alone(config, "dump") as client:
        if client is not None:
            # One layout either way (ADR 0172): the socket method writes one group's stream
            # straight into its target_dir (the reference's layout), so it is given DIR/<group>.
            params: dict[str, str] = {"target_dir": str(target)}
            if args.group is not None:
                params = {
                    "group_id": args.group,
                    "target_dir": str(target / encode_group(args.group)),
                }
            result = client.call("knowledge_dump_wal", params)
            result["target_dir"] = str(target)
        else:
            from lcg.ingest import dump_groups

            with open_direct(config) as ws:
                groups = [args.group] if args.group else None
                result = msgspec.to_builtins(dump_groups(ws, target, groups))
    if args.json:
        emit_json(result, indent=2)
    else:
        print(
            f"dumped {result['nodes_dumped']} nodes and {result['edges_dumped']} edges into "
            f"{result['files_written']} files under {safe(result['target_dir'])}"
        )
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg dump``."""
    p = subparsers.add_parser(
        "dump",
        help="compact groups into a new stream",
        description=_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--group", default=None, help="one group (default: every group)")
    p.add_argument("--to", required=True, metavar="DIR", help="an empty target directory")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run)
