"""``lcg follow``: serve a read-only replica of a publication.

The transport is chosen by the source's form, from the transports registry
(``lcg.replication.targets``: a path, a clone, is git; ``nats://`` JetStream), which also adds
each transport's own options (in a group named for it) and sets the replica up
(``Transport.follow_setup``); the replica is ``lcg.replication`` (the follower, its workspace,
the puller) served by ``lcg.rpc.replica.ReplicaApp``. This module parses the arguments and
starts the service. Light at import: the service and the engine load when the command runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from lcg import telemetry
from lcg.cli._common import add_command, config_from
from lcg.cli._terminal import safe
from lcg.errors import LcgError
from lcg.events import DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_SEGMENT_BYTES, LCG_DIR, ReadLimits
from lcg.replication import add_transport_arguments, chosen_transport

if TYPE_CHECKING:
    from lcg.rpc import ReplicaApp

__all__ = ["register"]


def _ready_line(app: ReplicaApp, source: str, groups: list[str] | None, sock: Path) -> str:
    """The one line a person reads when the replica is up (or why it is not)."""
    state, reason = app.state()
    which = "every group" if not groups else "group(s) " + ", ".join(groups)
    stop = f"stop with Ctrl-C or `kill {os.getpid()}`"
    if state != "healthy":
        return f"lcg follow: {state} ({reason}); source {source}; {stop}"
    return (
        f"lcg follow: following {which} of {source} (read-only); socket {sock}; "
        f"`lcg status` shows the lag; {stop}"
    )


def _run(args: argparse.Namespace) -> int:
    from lcg.cli.serve import announce_when_ready, end_promptly, run_until_stopped
    from lcg.rpc import Limits, ReplicaApp, serve
    from lcg.workspace import hold_for_process

    workspace = config_from(args).workspace
    transport, options = chosen_transport(args, args.source)
    setup = transport.follow_setup(args.source, workspace, options=options, groups=args.group)
    config = setup.config
    if args.embedder:
        config = msgspec.structs.replace(config, embedder=args.embedder)
    telemetry.set_sink(None, enabled=config.telemetry)
    # The publication is untrusted input: every file is read under these bounds (ADR 0154).
    limits = ReadLimits(
        max_segment_bytes=args.max_segment_bytes, max_line_bytes=args.max_line_bytes
    )
    # Before the socket, for the life of the process: a second replica or service in this
    # workspace refuses at start, naming this one, instead of taking its socket (ADR 0156).
    hold_for_process(config.workspace / LCG_DIR)
    app = ReplicaApp(
        config, source_label=setup.label, groups=args.group, limits=limits, source=setup.source
    )
    puller = setup.puller
    if puller is not None:
        puller.start()
    started = announce_when_ready(
        app, lambda: _ready_line(app, setup.label, args.group, config.socket_path)
    )
    try:
        # As `lcg serve` (ADR 0197): a call still held at the stop (a search waiting on the
        # embedder) is cut after the grace, and the process ends within it plus 2 s.
        server = run_until_stopped(
            serve(
                app,
                config.socket_path,
                config.shutdown_timeout_ms,
                started=started,
                limits=Limits.from_config(config),
            )
        )
    except LcgError as exc:
        print(f"Error: {safe(exc, lines=True)}", file=sys.stderr)
        return 1
    finally:
        if puller is not None:
            puller.stop()
    return end_promptly(0, server.deadline)


def _byte_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes") from None
    if value < 1024:
        raise argparse.ArgumentTypeError(f"{value} is below the 1024 bytes a limit must allow")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg follow``."""
    p = add_command(
        subparsers,
        "follow",
        summary="Serve a read-only replica of a publication, applying new events as they land.",
        details="""
            SOURCE's form chooses the transport: a directory (a clone of a repository that
            `lcg publish` commits to, or any directory of group streams) is git;
            nats://HOST:PORT[/PREFIX] follows JetStream (`lcg publish --to nats://...`). The
            replica's own workspace (-C, default the current directory) holds its
            projections and socket. Events are applied as files change, including
            after `git pull`; a new generation rebuilds the group; a gap, regression, mixed
            generation or rewritten file stops the group with the reason in
            knowledge_replica_status and knowledge_status. Writes are refused.
        """,
        example="""
            git clone git@host:team/pub.git ~/pub
            lcg -C ~/replica follow ~/pub --pull-every 5
            lcg follow ~/pub --group team -C ~/replica
            lcg -C ~/replica follow nats://127.0.0.1:4222 --group team
        """,
        func=_run,
    )
    p.add_argument(
        "source",
        metavar="SOURCE",
        help="the publication: a directory (a clone) or nats://HOST:PORT",
    )
    p.add_argument("-g", "--group", action="append", metavar="G", help="follow only G (repeatable)")
    p.add_argument(
        "-C",
        "--workspace",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="WORKSPACE",
        help="the replica's workspace (default: the current directory)",
    )
    p.add_argument("--embedder", choices=["local", "hash", "http", "uds"], help="embedder kind")
    p.add_argument(
        "--max-segment-bytes",
        type=_byte_count,
        default=DEFAULT_MAX_SEGMENT_BYTES,
        metavar="N",
        help=f"refuse a segment larger than N bytes (default {DEFAULT_MAX_SEGMENT_BYTES})",
    )
    p.add_argument(
        "--max-line-bytes",
        type=_byte_count,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help=f"refuse a line longer than N bytes (default {DEFAULT_MAX_LINE_BYTES})",
    )
    add_transport_arguments(p, "follow")
