"""``lcg mcp``: serve the workspace's methods as MCP tools over stdio (standalone or attached)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lcg.cli._terminal import safe
from lcg.errors import ConfigError, LcgError

if TYPE_CHECKING:
    from lcg.config import Config
    from lcg.rpc import App, Registry

__all__ = ["add_arguments", "main", "register", "run"]

_HELP = """Serve lcg's methods as MCP tools on stdin/stdout.

Standalone (default) opens the workspace in this process and serves its socket too, so
`lcg search`, `lcg ingest`, `lcg watch` and other agents go through it while it runs; when
the workspace's service is already running, it forwards to that one. --connect SOCK
forwards every tool call to the service on SOCK; it may start before that service (the
tools are listed at once, and calls reach the service once it is up). --scope picks the
tools: read, write, cypher, admin or all (default all = every scope, read-only Cypher
included; read, write and admin never include cypher).
"""

_EXAMPLE = """Example:
  lcg mcp                                   # standalone, every tool
  lcg mcp --scope read                      # read-only tools
  lcg mcp --scope read,cypher               # reads plus read-only Cypher
  lcg mcp --connect .lcg/service.sock       # attach to a running `lcg serve`
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``lcg mcp`` options."""
    parser.add_argument(
        "--scope",
        default="all",
        help="tool scopes: comma-separated read,write,cypher,admin,all (default all = every "
        "scope; read, write and admin never include cypher)",
    )
    parser.add_argument(
        "--connect",
        metavar="SOCK",
        default=None,
        help="attach to a running service's socket instead of opening the workspace",
    )
    parser.add_argument(
        "--allow-remote-close",
        action="store_true",
        help="attached mode: expose knowledge_close (which stops the service)",
    )


def _default_app(config: Config) -> App:
    from lcg.rpc import build_app

    return build_app(config)


def run(
    args: argparse.Namespace,
    *,
    config: Config | None = None,
    registry: Registry | None = None,
    app_factory: Callable[[], App] | None = None,
) -> int:
    """Run ``lcg mcp`` with parsed ``args``: exit 0, 1 on an ``LcgError``, 2 on a bad scope.

    ``config`` defaults to the environment's for the current directory; tests inject a
    ``registry`` (attached mode) and an ``app_factory`` (standalone).
    """
    # Imported here: the command table is built on every lcg start, and MCP is not needed.
    from lcg.rpc import default_registry, parse_scopes, serve_attached

    try:
        scopes = parse_scopes(args.scope)
    except ConfigError as exc:
        print(f"Error: {safe(exc, lines=True)}", file=sys.stderr)
        return 2
    try:
        if config is None:
            from lcg.config import Config

            config = Config.from_env()
        from lcg import telemetry

        # stdout carries the protocol: telemetry stays on stderr, and only if enabled.
        telemetry.set_sink(None, enabled=config.telemetry)
        connect, socket_path, allow_close = _where(args, config, hold=app_factory is None)
        if connect:
            reg = registry if registry is not None else default_registry()
            serve_attached(reg, scopes, connect, config.attached_call_timeout_ms, allow_close)
        else:
            _serve_here(args, config, app_factory, scopes, socket_path)
    except LcgError as exc:
        print(f"Error: {safe(exc, lines=True)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


def _where(
    args: argparse.Namespace, config: Config, *, hold: bool
) -> tuple[str | None, Path | None, bool]:
    """Where the tools are served from: the service to forward them to (``--connect``, or the
    workspace's running one), else the socket this process serves too when it may ``hold``
    the workspace (``None``: a test's app, served alone); and whether ``knowledge_close`` is
    offered."""
    from lcg.rpc import dial_once, not_running

    connect: str | None = args.connect
    allow_close = bool(args.allow_remote_close)
    if connect:
        # The tool list is static (ADR 0143): initialize and tools/list answer whether or
        # not the service is up yet; each call dials it. Only a warning here.
        missing = dial_once(Path(connect))
        if missing is not None:
            print(f"warning: {safe(not_running(Path(connect), missing))}", file=sys.stderr)
        return connect, None, allow_close
    if not hold:
        return None, None, allow_close
    # One holder, always reachable (ADR 0199): the workspace's service when one answers (a
    # second opener would only degrade, ADR 0172), else this process holds the workspace and
    # serves its socket too, for every other command and client.
    from lcg.cli._holder import claim, take_for_process

    got = claim(config, "mcp", take=lambda: take_for_process(config))
    if got is None:
        return None, config.socket_path, allow_close
    got.close()
    connect = str(config.socket_path)
    print(
        f"lcg mcp: the workspace's service is running; forwarding the tools to "
        f"{safe(connect)} (as --connect; knowledge_close is not offered)",
        file=sys.stderr,
    )
    return connect, None, False


def _serve_here(
    args: argparse.Namespace,
    config: Config,
    app_factory: Callable[[], App] | None,
    scopes: frozenset[str],
    socket_path: Path | None,
) -> None:
    """Serve the tools from an app of this process (and ``socket_path`` beside stdio)."""
    from lcg.rpc import Limits, serve_standalone

    if args.allow_remote_close:
        print("warning: --allow-remote-close only applies with --connect; ignored", file=sys.stderr)
    app = app_factory() if app_factory is not None else _default_app(config)
    if serve_standalone(
        app,
        scopes,
        socket_path,
        shutdown_timeout_ms=config.shutdown_timeout_ms,
        limits=Limits.from_config(config),
    ):
        # knowledge_close: the stdin reader thread cannot be unwound (serve_standalone).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _run(args: argparse.Namespace) -> int:
    from lcg.cli._common import config_from

    return run(args, config=config_from(args))


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg mcp``."""
    parser = subparsers.add_parser(
        "mcp",
        help="serve the methods as MCP tools over stdio",
        description=_HELP,
        epilog=_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=_run)


def main(
    argv: Sequence[str] | None = None,
    *,
    registry: Registry | None = None,
    app_factory: Callable[[], App] | None = None,
) -> int:
    """``python -m lcg.cli.mcp``: the same command without the ``lcg`` group; tests inject a
    registry (attached) or an App (standalone)."""
    parser = argparse.ArgumentParser(
        prog="lcg mcp",
        description="Serve lcg's methods as MCP tools over stdio.",
    )
    add_arguments(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    return run(args, registry=registry, app_factory=app_factory)


if __name__ == "__main__":
    sys.exit(main())
