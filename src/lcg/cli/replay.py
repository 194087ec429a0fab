"""``lcg replay``: rebuild a group's projections from its stream."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import msgspec

from lcg.cli._common import config_from, emit_json, group_dir
from lcg.cli._holder import alone
from lcg.cli._service import (
    ProgressBar,
    open_direct,
    show_replay,
)
from lcg.cli._terminal import safe
from lcg.config import Config
from lcg.errors import LcgError
from lcg.events import DEFAULT_GROUP, ReadReport, StreamReader, effective_generation

__all__ = ["register"]

_HELP = """Rebuild one group's graph, text and vector projections from its event stream.

A group that already holds data is refused unless --force-clear purges it first; a stream
whose generation changed is detected and replayed in full. --dry-run only reads and counts.
Goes through the running service when there is one.

A replay that skipped anything (a seq gap, a corrupt, unparseable, unknown, future-version or
foreign-generation line, an event that failed to apply) lists the skipped seqs and exits 1;
--accept-loss makes it succeed (and lifts the group's degraded state) once you have decided the
loss is acceptable.

Example:
  lcg replay --group liminis --force-clear
  lcg replay --group notes --from-seq 1200 --dry-run
  lcg replay --group liminis --force-clear --accept-loss
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
    skipped = result.get("skipped_seqs") or []
    if skipped:
        spans = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in skipped[:20])
        verb = "loss accepted for" if result.get("loss_accepted") else "SKIPPED"
        parts.append(f"{verb} {result.get('seqs_skipped', 0)} seq(s): {spans}")
    elif not result.get("success", True):
        parts.append("SKIPPED lines without a seq")
    if result.get("reset_detected"):
        parts.append(f"reset detected (was {result.get('previous_generation')})")
    if result.get("fidelity_warning"):
        parts.append(f"WARNING: {result['fidelity_warning']}")
    return "; ".join(parts)


def _show_frame(bar: ProgressBar, frame: dict[str, Any]) -> None:
    """Draw a progress frame of the service like a local report (other frames are skipped)."""
    from lcg.projections import ReplayProgress

    try:
        report = msgspec.convert(frame, ReplayProgress)
    except msgspec.ValidationError:
        return
    show_replay(bar, report)


#: The service's parameter names in its refusals, as this command spells them.
_CLI_WORDS = {"force_clear=true": "--force-clear", "pass from_seq": "pass --from-seq"}


def _in_cli_words(exc: LcgError) -> LcgError:
    """``exc`` with the RPC's parameter names replaced by this command's options."""
    message = str(exc)
    for rpc, cli in _CLI_WORDS.items():
        message = message.replace(rpc, cli)
    return exc if message == str(exc) else LcgError(message)


def _dry_run(config: Config, args: argparse.Namespace) -> int:
    """Read and count the events a replay would apply; nothing is opened for writing.

    The service's dry run (``dry_run: true``) follows the reference and refuses a group that
    holds data from seq 0; the command does what its help says instead: it reads the files.
    """
    gdir = group_dir(config, args.group)
    report = ReadReport()
    events = 0
    last: int | None = None
    reader = StreamReader(gdir, generation=effective_generation(gdir))
    for batch in reader.batches(args.from_seq, args.to_seq, batch_size=256, report=report):
        events += len(batch)
        last = batch[-1].seq
    result = {
        "group_id": args.group,
        "dry_run": True,
        "from_seq": args.from_seq,
        "to_seq": args.to_seq,
        "events": events,
        "last_seq": last,
        "files": report.files_read,
        "bad_lines": report.bad_lines,
        "skipped_seqs": report.skipped_seqs,
    }
    if args.json:
        emit_json(result, indent=2)
    else:
        skipped = (
            f"; {report.seqs_skipped} seq(s) and {report.bad_lines} bad line(s) would be skipped"
            if report.damaged
            else ""
        )
        print(
            f"group {safe(args.group)}: dry run, nothing changed: {events} events would be "
            f"replayed (seq {args.from_seq} to {_n(last)}) from {report.files_read} files{skipped}"
        )
    return 0 if not report.damaged else 1


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def _run(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    if args.dry_run:
        return _dry_run(config, args)
    try:
        return _replay(config, args)
    except LcgError as exc:
        raise _in_cli_words(exc) from exc


def _replay(config: Config, args: argparse.Namespace) -> int:
    bar = ProgressBar("replay", silent=args.silent)
    params = {
        "group_id": args.group,
        "from_seq": args.from_seq,
        "to_seq": args.to_seq,
        "dry_run": args.dry_run,
        "force_clear": args.force_clear,
        "accept_loss": args.accept_loss,
    }
    with alone(config, "replay") as client:
        if client is not None:
            result = client.call(
                "knowledge_rebuild_from_wal",
                params,
                on_progress=lambda frame: _show_frame(bar, frame),
            )
        else:
            result = _replay_here(config, args, bar)
    bar.done()
    if args.json:
        emit_json(result, indent=2)
    else:
        print(safe(_summary(result)))
    if not result.get("success", True):
        print(
            f"Error: the replay of group {safe(result['group_id'])} skipped events; inspect "
            f"them with `lcg wal verify --group {safe(result['group_id'])}`, restore the stream, "
            "or rerun with --accept-loss",
            file=sys.stderr,
        )
        return 1
    return 0 if not result.get("failed_lines") or result.get("loss_accepted") else 1


def _replay_here(config: Config, args: argparse.Namespace, bar: ProgressBar) -> dict[str, Any]:
    """The replay in this process, which holds the workspace (``alone``): it opens the files
    without catching up first, as a service's open would."""
    from lcg.ingest import rebind_after_reset

    with open_direct(config, catch_up=False) as ws:
        res = ws.projector.rebuild(
            args.group,
            from_seq=args.from_seq,
            to_seq=args.to_seq,
            dry_run=args.dry_run,
            force_clear=args.force_clear,
            accept_loss=args.accept_loss,
            progress=lambda p: show_replay(bar, p),
        )
        rebind_after_reset(ws, res)
        result: dict[str, Any] = msgspec.to_builtins(res)
    return result


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
    p.add_argument(
        "--accept-loss",
        action="store_true",
        help="succeed even if seqs were skipped (the stream's damage is accepted)",
    )
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("-s", "--silent", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
