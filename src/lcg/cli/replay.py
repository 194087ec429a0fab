"""``lcg replay``: rebuild a group's projections from its stream."""

from __future__ import annotations

import argparse
from typing import Any

import msgspec

from lcg.cli._service import (
    ProgressBar,
    config_of,
    live_client,
    open_direct,
    print_json,
    show_replay,
)
from lcg.events.layout import DEFAULT_GROUP
from lcg.projections.projector import ReplayProgress

__all__ = ["register"]

_HELP = """Rebuild one group's graph, text and vector projections from its event stream.

A group that already holds data is refused unless --force-clear purges it first; a stream
whose generation changed is detected and replayed in full. --dry-run only reads and counts.
Goes through the running service when there is one.

Example:
  lcg replay --group liminis --force-clear
  lcg replay --group notes --from-seq 1200 --dry-run
"""


def _summary(result: dict[str, Any]) -> str:
    parts = [
        f"group {result['group_id']}: {result['mutations_replayed']} events replayed",
        f"last seq {result.get('last_committed_seq')}",
        f"{result['wal_files_processed']} files",
    ]
    bad = {
        k: result.get(k, 0)
        for k in ("failed_lines", "unrecognised_lines", "unparseable_lines")
        if result.get(k)
    }
    if bad:
        parts.append(", ".join(f"{k}={v}" for k, v in bad.items()))
    if result.get("reset_detected"):
        parts.append(f"reset detected (was {result.get('previous_generation')})")
    if result.get("fidelity_warning"):
        parts.append(f"WARNING: {result['fidelity_warning']}")
    return "; ".join(parts)


def _show_frame(bar: ProgressBar, frame: dict[str, Any]) -> None:
    """Draw a progress frame of the service like a local report (other frames are skipped)."""
    try:
        report = msgspec.convert(frame, ReplayProgress)
    except msgspec.ValidationError:
        return
    show_replay(bar, report)


def _run(args: argparse.Namespace) -> int:
    config = config_of(args)
    bar = ProgressBar("replay", silent=args.silent)
    params = {
        "group_id": args.group,
        "from_seq": args.from_seq,
        "to_seq": args.to_seq,
        "dry_run": args.dry_run,
        "force_clear": args.force_clear,
    }
    client = live_client(config)
    if client is not None:
        with client:
            result = client.call(
                "knowledge_rebuild_from_wal",
                params,
                on_progress=lambda frame: _show_frame(bar, frame),
            )
    else:
        with open_direct(config, catch_up=False) as ws:
            res = ws.projector.rebuild(
                args.group,
                from_seq=args.from_seq,
                to_seq=args.to_seq,
                dry_run=args.dry_run,
                force_clear=args.force_clear,
                progress=lambda p: show_replay(bar, p),
            )
            result = msgspec.to_builtins(res)
    bar.done()
    if args.json:
        print_json(result)
    else:
        print(_summary(result))
    return 0 if not result.get("failed_lines") else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg replay``."""
    p = subparsers.add_parser(
        "replay",
        help="rebuild a group's projections from its stream",
        description=_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--group", default=DEFAULT_GROUP, help="group id (default liminis)")
    p.add_argument("--from-seq", type=int, default=0, help="first seq to apply (inclusive)")
    p.add_argument("--to-seq", type=int, default=None, help="last seq to apply (inclusive)")
    p.add_argument("--force-clear", action="store_true", help="purge the group first")
    p.add_argument("--dry-run", action="store_true", help="read and count only")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("-s", "--silent", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
