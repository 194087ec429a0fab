"""``lcg follow``: serve a read-only replica of a publication directory.

The replica is ``lcg.replication`` (the follower, its workspace, ``git pull``) served by
``lcg.rpc.replica.ReplicaApp``; this module parses the arguments and starts the service.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec

from lcg import telemetry
from lcg.cli._common import add_command, config_from
from lcg.replication.service import GitPuller, replica_config

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from lcg.rpc.replica import ReplicaApp
    from lcg.rpc.server import Limits, run_server

    source = Path(args.source)
    workspace = config_from(args).workspace
    config = replica_config(workspace, source)
    if args.embedder:
        config = msgspec.structs.replace(config, embedder=args.embedder)
    telemetry.set_sink(None, enabled=config.telemetry)
    app = ReplicaApp(config, source_label=str(source.resolve()), groups=args.group)
    puller: GitPuller | None = None
    if args.pull_every:
        puller = GitPuller(source.resolve(), args.pull_every)
        puller.start()
    try:
        return run_server(
            app, config.socket_path, config.shutdown_timeout_ms, limits=Limits.from_config(config)
        )
    finally:
        if puller is not None:
            puller.stop()


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg follow``."""
    p = add_command(
        subparsers,
        "follow",
        summary="Serve a read-only replica of a publication, applying new events as they land.",
        details="""
            DIR is a clone of a repository that `lcg publish` commits to (or any directory of
            group streams). The replica's own workspace (-C, default the current directory)
            holds its projections and socket. Events are applied as files change, including
            after `git pull`; a new generation rebuilds the group; a gap, regression, mixed
            generation or rewritten file stops the group with the reason in
            knowledge_replica_status and knowledge_status. Writes are refused.
        """,
        example="""
            git clone git@host:team/pub.git ~/pub
            lcg -C ~/replica follow ~/pub --pull-every 5
            lcg follow ~/pub --group team -C ~/replica
        """,
        func=_run,
    )
    p.add_argument("source", metavar="DIR", help="the publication directory")
    p.add_argument("-g", "--group", action="append", metavar="G", help="follow only G (repeatable)")
    p.add_argument(
        "-C",
        "--workspace",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="WORKSPACE",
        help="the replica's workspace (default: the current directory)",
    )
    p.add_argument(
        "--pull-every", type=_positive, metavar="S", help="run `git pull --ff-only` every S s"
    )
    p.add_argument("--embedder", choices=["local", "hash", "http", "uds"], help="embedder kind")
