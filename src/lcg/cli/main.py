"""``lcg``: the entry point. Each command module in ``COMMAND_MODULES`` adds its subcommands.

A command module exposes ``register(subparsers) -> None``, which adds its subcommand(s) with a
``func`` default: ``func(args) -> int`` runs the command and returns the exit status. Exit
statuses: 0 ok, 1 for an ``LcgError`` (printed as ``Error: <message>``) or a failed check, 2 for
a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from lcg import REFERENCE_VERSION, __version__, telemetry
from lcg.cli._terminal import safe
from lcg.errors import LcgError

__all__ = ["COMMAND_MODULES", "CommandModuleError", "build_parser", "main"]

#: The command modules, in help order. Append a module here to add its commands.
COMMAND_MODULES: list[str] = [
    "lcg.cli.serve",
    "lcg.cli.ingest",
    "lcg.cli.search",
    "lcg.cli.watch",
    "lcg.cli.sources",
    "lcg.cli.status",
    "lcg.cli.replay",
    "lcg.cli.dump",
    "lcg.cli.import_reference",
    "lcg.cli.verify",
    "lcg.cli.wal",
    "lcg.cli.mark",
    "lcg.cli.publish",
    "lcg.cli.follow",
    "lcg.cli.mcp",
    "lcg.cli.methods",
    "lcg.cli.demo",
    "lcg.cli.eval",
    "lcg.cli.ui",
]


class CommandModuleError(LcgError):
    """A module in ``COMMAND_MODULES`` cannot be imported or has no ``register``."""


def _register(
    module_name: str, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]
) -> None:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandModuleError(
            f"command module {module_name!r} (listed in lcg.cli.main.COMMAND_MODULES) cannot be "
            f"imported: {exc}; reinstall lcg or remove it from the list"
        ) from exc
    register = getattr(module, "register", None)
    if not callable(register):
        raise CommandModuleError(
            f"command module {module_name!r} has no register(subparsers) function"
        )
    register(subparsers)


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``lcg`` argument parser with the subcommands of every command module."""
    parser = argparse.ArgumentParser(
        prog="lcg",
        description="lcg: a local-first, event-sourced context graph engine.",
        epilog="Example:\n  lcg -C ~/notes wal ls\n  lcg wal verify --group liminis",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"lcg {__version__} (implements liminis-context-graph {REFERENCE_VERSION})",
    )
    parser.add_argument(
        "-C",
        "--workspace",
        type=Path,
        default=None,
        metavar="DIR",
        help="run in workspace DIR instead of the current directory",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES if modules is None else modules:
        _register(name, subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``lcg`` with ``argv`` (default: the process arguments); return the exit status."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "func", None) is None:
            # ``lcg`` or ``lcg wal`` alone: show what there is to run.
            target = getattr(args, "_parser", parser)
            target.print_help(sys.stderr)
            return 2
        # A person reads a command's stderr: telemetry's JSON lines only when LCG_TELEMETRY
        # asks for them (Config.cli_telemetry); serve and mcp turn on their own for their logs.
        telemetry.set_sink(None, enabled=os.environ.get("LCG_TELEMETRY", "off") != "off")
        status: int = args.func(args)
        return status
    except LcgError as exc:
        print(f"Error: {safe(_with_reason(exc), lines=True)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # ``lcg wal tail | head``: the reader left; not an error of ours.
        sys.stderr.close()
        return 0


def _with_reason(exc: LcgError) -> str:
    """``exc``'s message, and the reason a service gave with it (a -32001 answer keeps the
    reference's words as its message and says why in ``data.reason``: a busy holder, ADR 0199)."""
    data = getattr(exc, "data", None)
    reason = data.get("reason") if isinstance(data, dict) else None
    if isinstance(reason, str) and reason and reason not in str(exc):
        return f"{exc} ({reason})"
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
