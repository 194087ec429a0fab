"""``lcg methods``: print the method table (name, scope, streaming, description)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["method_rows", "register"]

_HELP = """Print every method of the service: its name, MCP scope, whether it streams
progress frames, whether it answers while degraded, and what it does.
"""

_EXAMPLE = """Example:
  lcg methods
  lcg methods --json | jq -r '.[] | select(.scope == "read") | .name'
"""


def method_rows() -> list[dict[str, Any]]:
    """One row per method of ``lcg.rpc.methods.build_registry()``, in registry order."""
    from lcg.rpc.mcp_server import default_registry
    from lcg.rpc.registry import input_schema

    return [
        {
            "name": spec.name,
            "scope": spec.scope,
            "streaming": spec.streaming,
            "exempt": spec.exempt,
            "writes": spec.writes,
            "description": spec.description,
            "params": input_schema(spec),
        }
        for spec in default_registry()
    ]


def _run(args: argparse.Namespace) -> int:
    from lcg.cli._common import emit_json, format_table

    rows = method_rows()
    if args.json:
        emit_json(rows)
        return 0
    table = [
        (
            r["name"],
            r["scope"],
            "yes" if r["streaming"] else "",
            "yes" if r["exempt"] else "",
            r["description"].splitlines()[0] if r["description"] else "",
        )
        for r in rows
    ]
    print(format_table(["METHOD", "SCOPE", "STREAMS", "EXEMPT", "DESCRIPTION"], table))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg methods``."""
    parser = subparsers.add_parser(
        "methods",
        help="print the method table",
        description=_HELP,
        epilog=_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=_run)
