"""``lcg mcp``: serve the workspace's methods as MCP tools over stdio (standalone or attached)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main", "register"]

_HELP = """Serve lcg's methods as MCP tools on stdin/stdout.

Standalone (default) opens the workspace in this process, or, when the workspace's `lcg
serve` is running, forwards to it. --connect SOCK forwards every tool call to the service on
SOCK; it may start before that service (the tools are listed at once, and calls reach the
service once it is up). --scope picks the tools: read, write, cypher,
admin or all (default all = every scope, read-only Cypher included; read, write and
admin never include cypher).
"""

_EXAMPLE = """Example:
  lcg mcp                                   # standalone, every tool
  lcg mcp --scope read                      # read-only tools
  lcg mcp --scope read,cypher               # reads plus read-only Cypher
  lcg mcp --connect .lcg/service.sock       # attach to a running `lcg serve`
"""


def _run(args: argparse.Namespace) -> int:
    from lcg.cli._common import config_from
    from lcg.rpc.mcp_server import run

    return run(args, config=config_from(args))


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg mcp``."""
    from lcg.rpc.mcp_server import add_arguments

    parser = subparsers.add_parser(
        "mcp",
        help="serve the methods as MCP tools over stdio",
        description=_HELP,
        epilog=_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=_run)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lcg.cli.mcp``: the same command without the ``lcg`` group."""
    from lcg.rpc.mcp_server import main as mcp_main

    return mcp_main(argv)


if __name__ == "__main__":
    sys.exit(main())
