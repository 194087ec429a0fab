"""``lcg publish``: stage one group's stream and deliver it to a target (git: commit it).

The transport is chosen by the target's form (``lcg.replication.targets``: a path or a git
URL is git); the work is ``lcg.replication.publish_group`` (docs/replication.md). This module
parses the arguments and prints the result.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lcg.cli._common import add_command, add_json_option, config_from, emit_json
from lcg.cli._terminal import safe
from lcg.errors import ConfigError
from lcg.replication import open_publisher, publish_group, transport_of

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    config = config_from(args)
    root = Path(args.stream_root).resolve() if args.stream_root else config.wal_dir
    target, flag = (args.to, "--to") if args.to is not None else (args.repo, "--repo")
    if transport_of(target) == "jetstream":
        from lcg.cli._publish_jetstream import run_jetstream

        return run_jetstream(args, root, target)
    if args.all or args.live or args.status or not args.group:
        raise ConfigError(
            "--all, --live and --status are JetStream's (--to nats://HOST:PORT); "
            "a git publish names its --group"
        )
    result = publish_group(
        root,
        args.group,
        open_publisher(target, flag=flag),
        message=args.message,
        with_marks=args.with_marks,
        reset=args.reset,
    )
    if args.json:
        emit_json(result)
    elif result.committed:
        short = (result.commit or "")[:12]
        extra = f" (reset from {result.previous_generation})" if result.reset else ""
        sys.stdout.write(
            f"published group {safe(result.group_id)} through seq {result.max_seq}, "
            f"generation {safe(result.generation)}{safe(extra)}: {result.files_copied} file(s), "
            f"{result.bytes_copied} bytes, commit {short}\n"
        )
    else:
        sys.stdout.write(
            f"group {safe(result.group_id)} is already published through seq {result.max_seq}; "
            "nothing to commit\n"
        )
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg publish``."""
    p = add_command(
        subparsers,
        "publish",
        summary="Publish one group's stream into a git working tree and commit it.",
        details="""
            The target's form chooses the transport: a path (a git working tree) is git;
            nats://HOST:PORT[/PREFIX] is JetStream (a stream per group, a message per line;
            --all, --live keeps publishing new lines as they become durable, --status shows
            what the server acknowledged).
            Copies the group's whole stream directory (dot-files included; .checkpoints/ only
            with --with-marks) into <repo>/<group dir>/ and commits it. Safe while `lcg serve`
            runs. A repository copy of another generation is refused unless --reset.
        """,
        example="""
            lcg publish --group team --to ~/pub
            lcg publish --group team --to ~/pub --reset --stream-root .lcg/wal-compacted
            lcg publish --to nats://127.0.0.1:4222 --all --live
        """,
        func=_run,
    )
    p.add_argument("-g", "--group", metavar="G", help="the group to publish")
    p.add_argument("--all", action="store_true", help="every group (JetStream)")
    p.add_argument(
        "--live", action="store_true", help="keep publishing new lines (JetStream; Ctrl-C stops)"
    )
    p.add_argument(
        "--status", action="store_true", help="show what the server acknowledged (JetStream)"
    )
    p.add_argument(
        "--replicas", type=int, default=1, metavar="N", help="JetStream copies of a new stream"
    )
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument(
        "--to", metavar="TARGET", help="where to publish: a git working tree or nats://HOST:PORT"
    )
    to.add_argument("--repo", metavar="DIR", help="a git working tree (the same as --to DIR)")
    p.add_argument("-m", "--message", metavar="M", help="the commit message")
    p.add_argument("--with-marks", action="store_true", help="also publish .checkpoints/")
    p.add_argument(
        "--reset", action="store_true", help="replace a publication of another generation"
    )
    p.add_argument(
        "--stream-root",
        metavar="DIR",
        help="publish from this stream root (e.g. a dump) instead of the workspace's",
    )
    add_json_option(p)
