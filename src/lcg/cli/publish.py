"""``lcg publish``: stage one group's stream and deliver it to a target (git: commit it).

The transport is chosen by the target's form, from the transports registry
(``lcg.replication.targets``: a path is git, ``nats://`` JetStream); each transport adds its
own options here, in a group named for it, and does the work (``Transport.publish``,
docs/replication.md). This module parses the arguments and is the console the transport
prints through. Light at import: a transport's engine loads when the command runs.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from lcg.cli._common import add_command, add_json_option, config_from, emit_json, format_table
from lcg.cli._terminal import safe
from lcg.replication import PublishRequest, add_transport_arguments, chosen_transport

__all__ = ["register"]


class _Console:
    """The terminal a transport's ``publish`` writes to (every line escaped: ``safe``)."""

    def __init__(self, json: bool) -> None:
        self._json = json

    @property
    def json(self) -> bool:
        """Whether ``--json`` was given."""
        return self._json

    def say(self, text: str) -> None:
        """One line on stdout, flushed (a ``--live`` run is read while it runs)."""
        sys.stdout.write(safe(text) + "\n")
        sys.stdout.flush()

    def warn(self, text: str) -> None:
        """One line on stderr."""
        print(safe(text), file=sys.stderr, flush=True)

    def emit(self, value: object) -> None:
        """``value`` as one line of JSON."""
        emit_json(value)

    def table(self, title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        """``title``, then the rows in columns."""
        sys.stdout.write(f"{safe(title)}\n{format_table(headers, rows)}\n")

    def stop_event(self) -> threading.Event:
        """Set by SIGTERM or SIGINT (Ctrl-C) from now on."""
        stop = threading.Event()

        def _on_signal(_sig: int, _frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)
        return stop


def _run(args: argparse.Namespace) -> int:
    config = config_from(args)
    root = Path(args.stream_root).resolve() if args.stream_root else config.wal_dir
    target, flag = (args.to, "--to") if args.to is not None else (args.repo, "--repo")
    transport, options = chosen_transport(args, target, flag)
    request = PublishRequest(
        target=target, flag=flag, root=root, group=args.group, reset=args.reset, options=options
    )
    return transport.publish(request, _Console(args.json))


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
            what the server acknowledged). A transport's own options (below, by transport)
            are refused with another transport's target.
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
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument(
        "--to", metavar="TARGET", help="where to publish: a git working tree or nats://HOST:PORT"
    )
    to.add_argument("--repo", metavar="DIR", help="a git working tree (the same as --to DIR)")
    p.add_argument(
        "--reset", action="store_true", help="replace a publication of another generation"
    )
    p.add_argument(
        "--stream-root",
        metavar="DIR",
        help="publish from this stream root (e.g. a dump) instead of the workspace's",
    )
    add_json_option(p)
    add_transport_arguments(p, "publish")
