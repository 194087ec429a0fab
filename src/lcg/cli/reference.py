"""``liminis-context-graph``: the reference's launch command, for configurations written for it.

The reference ships one binary whose top-level flags choose the transport: no arguments run
the socket service in the current directory, ``--mcp-stdio`` serves MCP on stdio (standalone,
or attached with ``--connect SOCK``), ``--scope`` picks the MCP tools, and the embedder and
extractor flags choose the model servers. Every MCP client configuration written from its
Getting Started page launches it this way; this module gives those flags the same meaning on
top of ``lcg serve`` and ``lcg mcp``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from lcg import REFERENCE_VERSION, __version__
from lcg.cli._terminal import safe
from lcg.errors import LcgError

__all__ = ["build_parser", "main"]

PROG = "liminis-context-graph"

_DESCRIPTION = """Run lcg with the reference's command line (liminis-context-graph).

With no arguments, serve the workspace in the current directory on .lcg/service.sock (as
`lcg serve`). With --mcp-stdio, serve the methods as MCP tools on stdin/stdout (as `lcg mcp`).
"""

_EPILOG = """Example:
  liminis-context-graph                                    # socket service in this directory
  liminis-context-graph --mcp-stdio --scope=read,write     # MCP on stdio, read and write tools
  liminis-context-graph --mcp-stdio --connect .lcg/service.sock --scope=read
"""


def build_parser() -> argparse.ArgumentParser:
    """The reference's top-level flags."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # The reference's own version comes second, as it prints it, so a launcher that gates on
    # it reads the surface this build implements; lcg's version follows.
    version = f"{PROG} {REFERENCE_VERSION} (lcg {__version__})"
    parser.add_argument("-V", "--version", action="version", version=version)
    parser.add_argument(
        "--mcp-stdio", action="store_true", help="serve MCP on stdin/stdout instead of the socket"
    )
    parser.add_argument(
        "--scope",
        default=None,
        metavar="LIST",
        help="MCP only: comma-separated tool scopes read,write,cypher,admin,all (default all)",
    )
    parser.add_argument(
        "--connect",
        default=None,
        metavar="SOCK",
        help="MCP only: forward tool calls to the service listening on SOCK",
    )
    parser.add_argument(
        "--allow-remote-close",
        action="store_true",
        help="MCP attached mode only: expose knowledge_close (it stops the remote service)",
    )
    models = parser.add_argument_group("model servers")
    models.add_argument("--embedder-uds", metavar="PATH", help="embedder on a Unix socket")
    models.add_argument("--embedder-http", metavar="URL", help="OpenAI-compatible embeddings URL")
    models.add_argument("--extractor-uds", metavar="PATH", help="extraction LLM on a Unix socket")
    models.add_argument(
        "--extractor-http", metavar="URL", help="OpenAI-compatible chat completions URL"
    )
    return parser


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The reference's usage rules: MCP-only flags need --mcp-stdio; model flags exclusive."""
    if not args.mcp_stdio:
        for flag, value in (("--connect", args.connect), ("--scope", args.scope)):
            if value is not None:
                parser.error(f"{flag} only applies with --mcp-stdio")
    if args.embedder_uds and args.embedder_http:
        parser.error("--embedder-uds and --embedder-http are exclusive; pass one")
    if args.extractor_uds and args.extractor_http:
        parser.error("--extractor-uds and --extractor-http are exclusive; pass one")
    if args.embedder_http and "://" not in args.embedder_http:
        parser.error(f"--embedder-http {args.embedder_http!r}: give a URL with a scheme and host")
    if args.connect is not None and (args.embedder_uds or args.embedder_http):
        print(
            "warning: the embedder flags do not apply with --connect (the service embeds); ignored",
            file=sys.stderr,
        )


def _serve(args: argparse.Namespace) -> int:
    from lcg.cli._service import with_embedder_flags
    from lcg.cli.serve import serve_workspace
    from lcg.config import Config

    config = with_embedder_flags(Config.from_env(), http=args.embedder_http, uds=args.embedder_uds)
    return serve_workspace(
        config, extractor_http=args.extractor_http, extractor_uds=args.extractor_uds
    )


def _mcp(args: argparse.Namespace) -> int:
    from lcg.cli._service import attach_extractor_flags, with_embedder_flags
    from lcg.cli.mcp import run
    from lcg.config import Config
    from lcg.rpc import ServiceApp, build_app

    config = with_embedder_flags(Config.from_env(), http=args.embedder_http, uds=args.embedder_uds)

    def app_factory() -> ServiceApp:
        app = build_app(config)
        attach_extractor_flags(app, config, http=args.extractor_http, uds=args.extractor_uds)
        return app

    mcp_args = argparse.Namespace(
        scope=args.scope if args.scope is not None else "all",
        connect=args.connect,
        allow_remote_close=args.allow_remote_close,
    )
    return run(mcp_args, config=config, app_factory=app_factory)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``liminis-context-graph`` with ``argv``; return the exit status (2 = usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _check(parser, args)
    try:
        return _mcp(args) if args.mcp_stdio else _serve(args)
    except LcgError as exc:
        print(f"Error: {safe(exc, lines=True)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
