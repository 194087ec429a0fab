"""``lcg dump``: compact groups into a new stream with a fresh generation."""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec

from lcg.cli._common import group_dir
from lcg.cli._service import config_of, live_client, open_direct, print_json

__all__ = ["register"]

_HELP = """Write the current state of one group (or all) as a new, minimal event stream in an
empty directory, with a fresh generation. Replaying the dump reproduces the same digests.
To adopt it, stop the service and replace the group's stream directory with the dumped one.

Example:
  lcg dump --group liminis --to /tmp/liminis-compacted
"""


def _run(args: argparse.Namespace) -> int:
    config = config_of(args, existing=True)
    if args.group is not None:
        group_dir(config, args.group)  # an unknown group is an error, as in `lcg wal tail`
    target = Path(args.to).resolve()
    params = {"group_id": args.group, "target_dir": str(target)}
    client = live_client(config)
    if client is not None:
        with client:
            result = client.call("knowledge_dump_wal", params)
    else:
        from lcg.ingest.dump import dump_groups

        with open_direct(config) as ws:
            groups = [args.group] if args.group else None
            result = msgspec.to_builtins(dump_groups(ws, target, groups))
    if args.json:
        print_json(result)
    else:
        print(
            f"dumped {result['nodes_dumped']} nodes and {result['edges_dumped']} edges into "
            f"{result['files_written']} files under {result['target_dir']}"
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
