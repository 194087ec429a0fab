"""``lcg serve``: run the JSON-RPC service of a workspace on its Unix socket."""

from __future__ import annotations

import argparse

import msgspec

from lcg import telemetry
from lcg.cli._service import config_of
from lcg.errors import ConfigError

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

    config = config_of(args)
    if args.embedder_http and args.embedder_uds:
        raise ConfigError("--embedder-http and --embedder-uds are exclusive; pass one")
    if args.embedder_http:
        if "://" not in args.embedder_http:
            raise ConfigError(f"--embedder-http {args.embedder_http!r}: give a URL with a scheme")
        config = msgspec.structs.replace(config, embedder="http", embedder_url=args.embedder_http)
    elif args.embedder_uds:
        config = msgspec.structs.replace(config, embedder="uds", embedder_uds=args.embedder_uds)
    elif args.embedder:
        config = msgspec.structs.replace(config, embedder=args.embedder)
    telemetry.set_sink(None, enabled=config.telemetry)
    app = build_app(config)
    if args.extractor_http and args.extractor_uds:
        raise ConfigError("--extractor-http and --extractor-uds are exclusive; pass one")
    if args.extractor_http or args.extractor_uds:
        from lcg.extract.factory import make_extractor
        from lcg.ingest.extraction import ExtractionService

        extractor = make_extractor(
            config, explicit_url=args.extractor_http, explicit_uds=args.extractor_uds
        )
        app.extraction = ExtractionService.from_config(config, extractor)
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
