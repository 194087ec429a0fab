"""Helpers shared by the command modules: the workspace, output, help text with examples."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from lcg.config import Config, require_workspace
from lcg.errors import StreamError
from lcg.events import DEFAULT_GROUP, encode_group, list_groups

__all__ = [
    "Handler",
    "add_command",
    "add_group_option",
    "add_json_option",
    "config_from",
    "emit_json",
    "format_table",
    "group_dir",
    "non_negative",
    "selected_groups",
]

#: A subcommand's implementation: parsed arguments in, exit status out.
Handler = Callable[[argparse.Namespace], int]

_json = msgspec.json.Encoder()


def add_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    summary: str,
    example: str,
    func: Handler,
    details: str = "",
) -> argparse.ArgumentParser:
    """Add subcommand ``name`` whose help is ``summary``, optional ``details``, then an example."""
    body = textwrap.dedent(example).strip("\n")
    description = summary if not details else f"{summary}\n\n{textwrap.dedent(details).strip()}"
    parser = subparsers.add_parser(
        name,
        help=_help_line(summary),
        description=description,
        epilog="Example:\n" + textwrap.indent(body, "  "),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=func)
    return parser


def _help_line(summary: str) -> str:
    """The summary as ``lcg --help`` lists it: lower-case first word (unless an acronym), no
    final full stop, like the help of the commands added with ``add_parser`` directly."""
    if len(summary) > 1 and summary[1].islower():
        summary = summary[0].lower() + summary[1:]
    return summary.rstrip(".")


def add_group_option(parser: argparse.ArgumentParser, *, every: bool) -> None:
    """``--group G``: one group; absent means every group (``every``) or the default group."""
    default = None if every else DEFAULT_GROUP
    fallback = "every group" if every else f"{DEFAULT_GROUP!r}"
    parser.add_argument(
        "-g", "--group", default=default, metavar="G", help=f"the group id (default: {fallback})"
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """``--json``: machine-readable output."""
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def non_negative(text: str) -> int:
    """An argparse type: an integer >= 0 (anything else is a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def config_from(args: argparse.Namespace, *, existing: bool = False) -> Config:
    """The settings for the workspace named by ``-C`` (default: the current directory); with
    ``existing``, a ``ConfigError`` when there is no workspace there (nothing is created)."""
    # ``getattr``: a namespace built by hand, without the top-level ``-C``, means the CWD.
    workspace = getattr(args, "workspace", None)
    config = Config.from_env(Path(workspace) if workspace else None)
    if existing:
        require_workspace(config)
    return config


def group_dir(config: Config, group_id: str, *, must_exist: bool = True) -> Path:
    """The stream directory of ``group_id``; a ``StreamError`` if it must exist and does not."""
    path = config.wal_dir / encode_group(group_id)
    if must_exist and not path.is_dir():
        existing = list_groups(config.wal_dir) if config.wal_dir.is_dir() else []
        known = ", ".join(repr(g) for g in existing) if existing else "none"
        raise StreamError(
            f"group {group_id!r} has no stream under {config.wal_dir} (the groups here: "
            f"{known}; `lcg wal ls` lists them, -C names another workspace)"
        )
    return path


def selected_groups(config: Config, group_id: str | None) -> list[str]:
    """``[group_id]`` if given (it must exist), else every group of the workspace."""
    if group_id is not None:
        group_dir(config, group_id)
        return [group_id]
    return list_groups(config.wal_dir)


def emit_json(value: Any, *, indent: int = 0) -> None:
    """Print ``value`` (msgspec-encodable) as JSON, controls escaped (``json_safe``): one line,
    or indented by ``indent`` spaces (a command's one report: status, verify, replay, dump)."""
    from lcg.cli._terminal import json_safe

    data = _json.encode(value)
    text = (msgspec.json.format(data, indent=indent) if indent else data).decode()
    sys.stdout.write(json_safe(text) + "\n")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces; ``None`` prints as ``-``; each cell's
    control characters escaped (``safe``), so a stored value cannot break a row."""
    from lcg.cli._terminal import safe

    cells = [list(headers)] + [["-" if c is None else safe(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)
