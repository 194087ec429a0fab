"""``lcg serve``: run the JSON-RPC service of a workspace on its Unix socket."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from lcg import telemetry
from lcg.cli._common import config_from
from lcg.cli._service import attach_extractor_flags, with_embedder_flags
from lcg.cli._terminal import safe
from lcg.config import Config
from lcg.errors import LcgError
from lcg.events import LCG_DIR

if TYPE_CHECKING:
    from lcg.rpc import App, Limits, Server, ServiceApp

__all__ = [
    "announce_when_ready",
    "end_promptly",
    "limit_malloc_arenas",
    "ready_line",
    "register",
    "run_server",
    "run_until_stopped",
    "serve_workspace",
]

T = TypeVar("T")

_HELP = """Run the workspace's JSON-RPC 2.0 service on .lcg/service.sock.

The socket is bound first; health_check answers "initializing" until the projections have
caught up with the streams (its reason says how far: group, events, phase), then "healthy".
Stop it with Ctrl-C, SIGTERM or knowledge_close. Telemetry goes to stderr as JSON lines
(LCG_TELEMETRY=off silences it); on a terminal the per-request ipc_call lines are left out
unless LCG_TELEMETRY=on asks for them.

Example:
  lcg serve                                  # embedded embedder, no extractor (lite mode)
  LCG_EMBEDDER=hash lcg serve                # fast deterministic test embedder
  lcg serve --embedder-http http://127.0.0.1:8080
"""


def ready_line(app: ServiceApp, config: Config) -> str:
    """The one line a person reads when the service is up (or why it is not)."""
    state, reason = app.state()
    stop = f"stop with Ctrl-C, `kill {os.getpid()}` or knowledge_close"
    if state != "healthy":
        return f"lcg serve: {state} ({reason}); workspace {config.workspace}; {stop}"
    embedder = app.ws.embedder
    away = app.ws.embedder_away
    # An embedder that is away serves no vectors yet; everything else is ready (ADR 0171).
    ready = "ready" if away is None else f"ready but for vectors ({away})"
    return (
        f"lcg serve: {ready}; workspace {config.workspace}, socket {config.socket_path}, "
        f"embedder {embedder.model_id} ({embedder.dim}-d); {stop}"
    )


def announce_when_ready(app: ServiceApp, line: Callable[[], str]) -> Callable[[Server], None]:
    """A ``started`` callback that prints ``line()`` once the app has finished opening."""
    import asyncio

    pending: set[asyncio.Task[None]] = set()

    async def wait() -> None:
        while app.state()[0] == "initializing":
            # The app offers no event for the end of its opening; its state is cheap to read.
            await asyncio.sleep(0.05)
        print(safe(line()), flush=True)

    def started(server: Server) -> None:
        task = asyncio.get_running_loop().create_task(wait())
        pending.add(task)  # held until done: the loop keeps only a weak reference
        task.add_done_callback(pending.discard)

    return started


#: ``mallopt`` parameter number of ``M_ARENA_MAX`` in glibc's ``malloc.h``.
_M_ARENA_MAX = -8


def limit_malloc_arenas(arenas: int) -> bool:
    """Cap glibc's malloc arenas at ``arenas`` (0 leaves the default); False where not glibc.

    The service answers reads on worker threads; glibc gives each thread an arena of its own
    and keeps their pages, so RSS climbs with every thread that ever served a heavy call.
    """
    if arenas <= 0 or not sys.platform.startswith("linux"):
        return False
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(_M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False


def run_until_stopped(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, except that threads of the loop's default executor still busy
    at the end are not waited for (``asyncio.run`` joins them, so a close the server left to
    the process's end would hold the process, ADR 0197)."""
    import asyncio

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()  # shuts the default executor down without waiting


def end_promptly(status: int, deadline: float | None) -> int:
    """``status``, once this process's other (non-daemon) threads have ended; if some are
    still busy at ``deadline`` (a write waiting on an LLM call that the stop cut off), the
    process ends now, with ``status`` (ADR 0197).

    What such a thread had not finished is what a crash leaves: the streams hold every
    acknowledged write (a write is acknowledged once durable), and the projections catch up
    on the next open. The workspace lock goes with the process.
    """
    if deadline is None:
        return status
    me = threading.current_thread()
    # A repeated Ctrl-C or SIGTERM while leaving asks for what is being done already.
    signals = (signal.SIGINT, signal.SIGTERM) if me is threading.main_thread() else ()
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in signals}
    others = [t for t in threading.enumerate() if t is not me and not t.daemon]
    for thread in others:
        thread.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in others):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    for s, handler in previous.items():
        signal.signal(s, handler)
    return status


def run_server(
    app: App,
    socket_path: str | os.PathLike[str],
    shutdown_timeout_ms: int = 5000,
    *,
    ready_timeout_s: float = 300.0,
    started: Callable[[Server], None] | None = None,
    limits: Limits | None = None,
) -> int:
    """Serve ``app`` on ``socket_path`` until stopped; exit status 0, or 1 on an ``LcgError``.
    A stop ends the process within the grace plus 2 s (``end_promptly``)."""
    from lcg.rpc import serve

    try:
        server = run_until_stopped(
            serve(
                app,
                socket_path,
                shutdown_timeout_ms,
                ready_timeout_s=ready_timeout_s,
                started=started,
                limits=limits,
            )
        )
    except LcgError as exc:
        print(f"Error: {safe(exc, lines=True)}", file=sys.stderr)
        return 1
    return end_promptly(0, server.deadline)


def serve_workspace(
    config: Config, *, extractor_http: str | None = None, extractor_uds: str | None = None
) -> int:
    """Serve the workspace ``config`` names until stopped; the exit status (1 on an error)."""
    from lcg.rpc import Limits, build_app
    from lcg.workspace import hold_for_process

    # A person watching a foreground service on a terminal reads its states, not a JSON line
    # per request; a log file (or LCG_TELEMETRY=on) gets every record.
    calls = config.telemetry_explicit or not sys.stderr.isatty()
    telemetry.set_sink(None, enabled=config.telemetry, calls=calls)
    limit_malloc_arenas(config.malloc_arena_max)
    try:
        # Before the socket, for the life of the process: a second service refuses here,
        # naming the first, instead of taking its socket path (ADR 0156).
        hold_for_process(config.workspace / LCG_DIR)
        app = build_app(config)
        attach_extractor_flags(app, config, http=extractor_http, uds=extractor_uds)
    except LcgError as exc:
        print(f"Error: {safe(exc, lines=True)}", file=sys.stderr)
        return 1
    return run_server(
        app,
        config.socket_path,
        config.shutdown_timeout_ms,
        started=announce_when_ready(app, lambda: ready_line(app, config)),
        limits=Limits.from_config(config),
    )


def _run(args: argparse.Namespace) -> int:
    config = with_embedder_flags(
        config_from(args), http=args.embedder_http, uds=args.embedder_uds, kind=args.embedder
    )
    return serve_workspace(
        config, extractor_http=args.extractor_http, extractor_uds=args.extractor_uds
    )


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
