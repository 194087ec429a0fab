"""``lcg serve``: run the JSON-RPC service of a workspace on its Unix socket."""

from __future__ import annotations

import argparse

from lcg import telemetry
from lcg.cli._service import attach_extractor_flags, config_of, with_embedder_flags

__all__ = ["register"]

_HELP = """Run the workspace's JSON-RPC 2.0 service on .lcg/service.sock.

The socket is bound first; health_check answers "initializing" until the projections have
caught up with the streams (its reason says how far: group, events, phase), then "healthy".
Stop it with Ctrl-C, SIGTERM or knowledge_close.

Example:
  lcg serve                                  # embedded embedder, no extractor (lite mode)
  LCG_EMBEDDER=hash lcg serve                # fast deterministic test embedder
  lcg serve --embedder-http http://127.0.0.1:8080
"""


def _run(args: argparse.Namespace) -> int:
    from lcg.rpc.app import build_app
    from lcg.rpc.server import run_server

    config = with_embedder_flags(
        config_of(args), http=args.embedder_http, uds=args.embedder_uds, kind=args.embedder
    )
    telemetry.set_sink(None, enabled=config.telemetry)
    app = build_app(config)
    attach_extractor_flags(app, config, http=args.extractor_http, uds=args.extractor_uds)
    return run_server(app, config.socket_path, config.shutdown_timeout_ms)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg serve``."""
    p = subparsers.add_parser(
        "serve",
        help="run the JSON-RPC service of a workspace",
        description=_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--embedder", choices=["local", "hash", "http", "uds"], help="embedder kind")
    p.add_argument("--embedder-http", metavar="URL", help="OpenAI-compatible embeddings URL")
    p.add_argument("--embedder-uds", metavar="PATH", help="embeddings server on a Unix socket")
    p.add_argument(
        "--extractor-http", metavar="URL", help="OpenAI-compatible chat completions URL (LLM)"
    )
    p.add_argument("--extractor-uds", metavar="PATH", help="chat completions server on a socket")
    p.set_defaults(func=_run)
