"""``lcg methods [NAME]``: the method table, or one method's parameters and an example request.

Both are rendered from the registry's parameter Structs (``lcg.rpc.schema``), the same ones
that check every call and build the MCP input schemas, so the three cannot disagree.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lcg.rpc import MethodSpec

__all__ = ["method_detail", "method_rows", "register", "render_method"]

_HELP = """Print every method of the service: its name, MCP scope, whether it streams
progress frames, whether it answers while degraded, and what it does. With a NAME, print
that method's parameters (type, required, default, description) and an example request.
"""

_EXAMPLE = """Example:
  lcg methods
  lcg methods knowledge_search_passages
  lcg methods --json | jq -r '.[] | select(.scope == "read") | .name'
"""


def method_rows() -> list[dict[str, Any]]:
    """One row per method of ``lcg.rpc.methods.build_registry()``, in registry order."""
    from lcg.rpc import default_registry, input_schema

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


def _type_words(types: tuple[str, ...]) -> str:
    return " | ".join(types) if types else "any"


def method_detail(spec: MethodSpec) -> dict[str, Any]:
    """One method as ``lcg methods NAME --json`` prints it."""
    from lcg.rpc import example_params, field_docs, input_schema

    params = []
    example: dict[str, Any] = {}
    if spec.params is not None:
        example = example_params(spec.params)
        params = [
            {
                "name": d.name,
                "type": _type_words(d.json_types),
                "required": d.required,
                "default": d.default,
                "description": d.description,
            }
            for d in field_docs(spec.params)
        ]
    return {
        "name": spec.name,
        "scope": spec.scope,
        "streaming": spec.streaming,
        "exempt": spec.exempt,
        "writes": spec.writes,
        "description": spec.description,
        "parameters": params,
        "input_schema": input_schema(spec),
        "example": {"jsonrpc": "2.0", "id": 1, "method": spec.name, "params": example},
    }


def render_method(detail: dict[str, Any]) -> str:
    """``method_detail`` as text for people."""
    from lcg.cli._common import format_table

    flags = [f"scope {detail['scope']}"]
    flags += [word for word in ("streaming", "exempt", "writes") if detail[word]]
    lines = [f"{detail['name']} ({', '.join(flags)})", detail["description"], ""]
    if detail["parameters"]:
        rows = [
            (
                p["name"],
                p["type"],
                "yes" if p["required"] else "no",
                "" if p["default"] is None else json.dumps(p["default"]),
                p["description"],
            )
            for p in detail["parameters"]
        ]
        headers = ["PARAMETER", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION"]
        lines.append(format_table(headers, rows))
        lines.append("null means absent (the default); a parameter not listed is refused.")
    else:
        lines.append("No parameters; any parameter is refused.")
    lines.append(
        "Keys starting with _ (_progress_token, MCP's _meta) are protocol fields, always allowed."
    )
    if detail["streaming"]:
        lines.append('Pass "_progress_token": true for progress frames before the answer.')
    lines += [
        "",
        "Example request (one line on the service socket, .lcg/service.sock):",
        "  " + json.dumps(detail["example"], ensure_ascii=False),
    ]
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from lcg.cli._common import emit_json, format_table

    if args.name is not None:
        return _run_one(args)
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


def _run_one(args: argparse.Namespace) -> int:
    import sys

    from lcg.cli._common import emit_json
    from lcg.rpc import closest, default_registry

    registry = default_registry()
    name: str = args.name
    spec = registry.get(name) or registry.get("knowledge_" + name)
    if spec is None:
        guess = closest(name, registry.names(), prefix="knowledge_", cutoff=75.0)
        hint = f"; did you mean {guess!r}?" if guess else ""
        print(f"lcg methods: no method {name!r}{hint} (`lcg methods` lists them)", file=sys.stderr)
        return 2
    detail = method_detail(spec)
    if args.json:
        emit_json(detail)
    else:
        print(render_method(detail))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg methods``."""
    parser = subparsers.add_parser(
        "methods",
        help="print the method table, or one method's parameters",
        description=_HELP,
        epilog=_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="one method (the knowledge_ prefix may be left out)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=_run)
