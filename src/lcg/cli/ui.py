"""``lcg ui``: a local web page over the workspace — its graph, sources and health (ADR 0224).

The page is served by this process on 127.0.0.1 only, reading through the workspace's
service (the one running, or one this command serves while it runs, ADR 0199). It prints one
line, the page's URL with its token, and serves until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import webbrowser
from types import FrameType

from lcg.cli._common import add_command, config_from
from lcg.cli._holder import service
from lcg.errors import ConfigError

__all__ = ["register"]

_SUMMARY = "Serve a local web page to look at the workspace: graph, sources, health."
_DETAILS = """
The page runs on 127.0.0.1 only and prints its URL with a random token: open that URL (or
pass --open). It shows each group's counts, search (the same hits as `lcg search`), an entity
with its neighbourhood drawn as a graph, the sources and their files with links and
backlinks, the service's health (refreshing while work runs) and the latest `lcg eval`
reports. It only reads: nothing on the page writes to the workspace. A running `lcg serve`
is used; with none, this command serves the workspace while it runs.
"""
_EXAMPLE = """
lcg ui                     # prints: lcg ui: http://127.0.0.1:PORT/?token=...
lcg ui --port 8765 --open
lcg -C ~/notes ui --group work
"""


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0-65535; 0: any free one)")
    return value


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _run(args: argparse.Namespace) -> int:
    # The page's views read sources and eval reports (the engine's packages): loaded only
    # when the page is served, never to parse a command line.
    from lcg.ui import Reads, Site, UiServer, new_token

    config = config_from(args, existing=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with service(config, "ui", quiet=True) as (_client, _how):
            reads = Reads(config.socket_path)
            try:
                server = UiServer(args.port, new_token(), Site(config.workspace, reads, args.group))
            except OSError as exc:
                raise ConfigError(
                    f"cannot serve on 127.0.0.1:{args.port}: {exc.strerror}"
                ) from None
            url = f"http://127.0.0.1:{server.port}/?token={server.guard.token}"
            thread = threading.Thread(target=server.serve_forever, name="lcg-ui", daemon=True)
            thread.start()
            try:
                print(f"lcg ui: {url}", flush=True)
                if args.open:
                    webbrowser.open(url)
                threading.Event().wait()
            finally:
                server.shutdown()
                server.server_close()
                reads.close()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    print("lcg ui: stopped", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg ui``."""
    p = add_command(
        subparsers, "ui", summary=_SUMMARY, details=_DETAILS, example=_EXAMPLE, func=_run
    )
    p.add_argument(
        "--port",
        type=_port,
        default=0,
        metavar="N",
        help="port on 127.0.0.1 (default: any free one)",
    )
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument("-g", "--group", metavar="G", help="the group searches and files default to")
