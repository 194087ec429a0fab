"""One holder, always reachable (ADR 0199): how every command reaches a workspace.

Whatever process holds a workspace serves its socket for as long as it holds it, so every
other command goes through it. One rule, ``claim``:

1. a service answers on the workspace's socket: be its client;
2. none answers and the workspace's lock is free: take it, and serve the socket here for as
   long as the command runs (``hosting``: the service in a thread of this process, the
   command a client of it);
3. the lock is held but no socket answers yet (a holder starting, catching up): wait for it,
   saying so in one line, up to ``LCG_HOLDER_WAIT_MS``; then say what holds it and what to do.

No daemon is left behind: when the holder's command ends, its socket goes, and the next
command becomes the holder.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TypeVar

from lcg import telemetry
from lcg.cli._service import ProgressBar, live_client, wait_serving
from lcg.cli._terminal import safe
from lcg.client import Client, TransportError
from lcg.config import Config
from lcg.errors import LcgError, StreamLockedError
from lcg.events import LCG_DIR

if TYPE_CHECKING:
    from lcg.rpc import Server

__all__ = [
    "HolderUnreachable",
    "alone",
    "claim",
    "describe_holder",
    "hosting",
    "service",
    "take_for_process",
    "through_service",
]

T = TypeVar("T")

#: How often a command waiting for a holder looks at the socket and the lock again.
_POLL_S = 0.1
#: How many times a command goes on through the next holder when the one it used ended.
_TRIES = 5
#: How long the vectors left to a hosting command's service may make no progress before the
#: command gives the workspace back with them still to come.
_STALL_S = 60.0
#: How long a hosted service may take to stop once its command ended.
_STOP_JOIN_S = 60.0


class HolderUnreachable(LcgError):
    """The workspace is held by a process that did not answer on its socket in time."""


def describe_holder(lcg_dir: Path) -> str:
    """What holds the workspace, for a person: ``lcg serve (pid N)`` from the holder's
    command line where it can be read, else ``an lcg process (pid N)``."""
    from lcg.workspace import holder_pid

    pid = holder_pid(lcg_dir)
    if pid is None:
        return "another lcg process"
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"an lcg process (pid {pid})"
    words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
    name = _command_name(words)
    return f"lcg {name} (pid {pid})" if name else f"an lcg process (pid {pid})"


def _command_name(words: list[str]) -> str | None:
    """The lcg subcommand in a command line (``lcg -C WS serve`` -> ``serve``)."""
    from lcg.cli.main import COMMAND_MODULES

    commands = {m.rsplit(".", 1)[-1].replace("_", "-") for m in COMMAND_MODULES}
    for word in words[1:]:
        if word in commands:
            return word
    return None


def claim(
    config: Config,
    command: str,
    *,
    take: Callable[[], T],
    quiet: bool = False,
) -> Client | T:
    """A client of the workspace's service when one answers; else ``take()``'s value once it
    took the workspace (it raises ``StreamLockedError`` while another process holds it).

    While the workspace is held and nothing answers, wait for the holder's socket (one line
    on stderr unless ``quiet``), up to ``config.holder_wait_ms``; then ``HolderUnreachable``
    names the holder and what to do. A holder that ends meanwhile frees the lock: ``take``."""
    lcg_dir = config.workspace / LCG_DIR
    deadline: float | None = None
    while True:
        client = live_client(config)
        if client is not None:
            return client
        try:
            return take()
        except StreamLockedError:
            pass
        now = time.monotonic()
        if deadline is None:
            deadline = now + config.holder_wait_ms / 1000
            if not quiet:
                print(
                    f"lcg {command}: waiting for {describe_holder(lcg_dir)}, which holds "
                    f"the workspace, to answer on {safe(config.socket_path)}",
                    file=sys.stderr,
                    flush=True,
                )
        if now >= deadline:
            holder = describe_holder(lcg_dir)
            raise HolderUnreachable(
                f"the workspace {config.workspace} is in use by {holder}, which has not "
                f"answered on {config.socket_path} for {config.holder_wait_ms / 1000:g} s: "
                "wait for it to finish and run this again, or stop it (Ctrl-C where it runs, "
                "or `kill` its pid)"
            )
        time.sleep(_POLL_S)  # polling a socket and a lock another process holds


def take_for_process(config: Config) -> None:
    """Take the workspace's lock for the life of this process (it will serve the socket);
    ``StreamLockedError`` while another process holds it."""
    from lcg.workspace import hold_for_process

    hold_for_process(config.workspace / LCG_DIR)


@contextmanager
def hosting(config: Config, command: str, *, quiet: bool = False) -> Iterator[Client]:
    """Serve the workspace's socket from a thread of this process (which holds the
    workspace's lock) while the ``with`` body runs, and yield a ready client of it. Other
    commands and agents go through this socket meanwhile; on leaving, the vectors the body's
    writes left to the background are made (``finish_vectors``), then the service stops, its
    socket goes and the lock is given up. SIGTERM ends the body as Ctrl-C does."""
    import asyncio

    from lcg.rpc import Limits, build_app, serve
    from lcg.workspace import release_for_process

    lcg_dir = config.workspace / LCG_DIR
    # A person reads this command's stderr: the service's JSON lines only when asked for.
    telemetry.set_sink(None, enabled=config.cli_telemetry)
    bound = threading.Event()
    opened = threading.Event()
    servers: list[Server] = []
    failed: list[BaseException] = []

    def started(server: Server) -> None:
        servers.append(server)
        server.on_open(opened.set)
        bound.set()

    def run() -> None:
        try:
            asyncio.run(
                serve(
                    build_app(config, one_shot=True),
                    config.socket_path,
                    config.shutdown_timeout_ms,
                    started=started,
                    limits=Limits.from_config(config),
                )
            )
        except BaseException as exc:  # noqa: BLE001 - told to the command below
            failed.append(exc)
        finally:
            bound.set()
            opened.set()

    thread = threading.Thread(target=run, name=f"lcg-{command}-service", daemon=True)
    previous = _terminate_as_interrupt()
    try:
        thread.start()
        bound.wait()
        if failed:
            raise failed[0]
        opened.wait()  # the workspace is open (or the service says why not): no polling
        with Client(config.socket_path, timeout=None) as client:
            wait_serving(client, 600, starting=True)
            yield client
            finish_vectors(client, quiet=quiet)
    finally:
        for server in servers:
            server.request_shutdown()
        thread.join(_STOP_JOIN_S)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        release_for_process(lcg_dir)


@contextmanager
def alone(config: Config, command: str, *, quiet: bool = False) -> Iterator[Client | None]:
    """By ``claim``'s rule: a client of the running service (the command goes through it), or
    ``None`` once this process holds the workspace's lock to do its work in the files itself
    (work no service method does, or that needs the workspace to itself). Meanwhile the
    socket is served by a ``BusyApp``: another command or agent is answered at once, degraded
    with "busy: lcg COMMAND (pid N) ...", instead of waiting for the lock. On leaving, the
    socket goes and the lock is given up."""
    import asyncio
    import os

    from lcg.rpc import BusyApp, busy_reason, serve
    from lcg.workspace import release_for_process

    got = claim(config, command, take=lambda: take_for_process(config), quiet=quiet)
    if isinstance(got, Client):
        with got:
            yield got
        return
    lcg_dir = config.workspace / LCG_DIR
    bound = threading.Event()
    servers: list[Server] = []
    failed: list[BaseException] = []

    def started(server: Server) -> None:
        servers.append(server)
        bound.set()

    def run() -> None:
        try:
            app = BusyApp(busy_reason(command, os.getpid()))
            asyncio.run(serve(app, config.socket_path, config.shutdown_timeout_ms, started=started))
        except BaseException as exc:  # noqa: BLE001 - told to the command below
            failed.append(exc)
        finally:
            bound.set()

    thread = threading.Thread(target=run, name=f"lcg-{command}-busy", daemon=True)
    try:
        thread.start()
        bound.wait()
        if failed:
            raise failed[0]
        yield None
    finally:
        for server in servers:
            server.request_shutdown()
        thread.join(_STOP_JOIN_S)
        release_for_process(lcg_dir)


def finish_vectors(client: Client, *, quiet: bool = False) -> None:
    """Wait until the service has made the vectors its writes left to the background (text
    first, ADR 0201): a command that holds the workspace only while it runs gives it back
    complete, so the next holder opens no backlog. Searches are served meanwhile. Stops
    waiting, saying so, when no vector was made for ``_STALL_S`` (an embedder away): the
    backlog is then the next holder's, as after Ctrl-C."""
    total: int | None = None
    bar = ProgressBar("making vectors", silent=quiet)
    last_change, last_pending = time.monotonic(), -1
    try:
        while True:
            pending = int(client.health_check().get("vectors_pending") or 0)
            if pending <= 0:
                return
            now = time.monotonic()
            if pending != last_pending:
                last_change, last_pending = now, pending
            elif now - last_change >= _STALL_S:
                print(
                    f"{pending:,} chunks' vectors are not made yet (no progress for "
                    f"{_STALL_S:g} s: is the embedder away?); they are searchable by their words "
                    "and the next command or service that opens the workspace makes them",
                    file=sys.stderr,
                )
                return
            if total is None:
                total = pending
                if not quiet:
                    print(
                        f"making {pending:,} chunks' vectors before giving the workspace back "
                        "(searchable by their words meanwhile)",
                        file=sys.stderr,
                        flush=True,
                    )
            bar.update(total - pending, total, "vectors")
            time.sleep(_POLL_S)
    finally:
        bar.done()


_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


def _terminate_as_interrupt() -> _Handler:
    """SIGTERM raises ``KeyboardInterrupt`` in the main thread (the hosted service then stops
    as on Ctrl-C); the handler before, to put back, or ``None`` off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


@contextmanager
def service(config: Config, command: str, *, quiet: bool = False) -> Iterator[tuple[Client, str]]:
    """A ready client of the workspace's service by ``claim``'s rule: the one running, or one
    this command serves while it runs; with a phrase saying which."""
    got = claim(config, command, take=lambda: take_for_process(config), quiet=quiet)
    if isinstance(got, Client):
        try:
            wait_serving(got, 600)
            yield got, "through the running service"
        finally:
            got.close()
        return
    with hosting(config, command, quiet=quiet) as client:
        yield client, f"served on {config.socket_path} while it ran"


def through_service(
    config: Config, command: str, work: Callable[[Client, str], T], *, quiet: bool = False
) -> T:
    """``work(client, how)`` on the workspace's service (``service``). When the holder it went
    through ends meanwhile (its own command finished: the socket goes with it), the next
    holder is found, or this command becomes it, and ``work`` runs again: what is given here
    must be safe to run again (a read, a sync of a tree)."""
    for tries in range(1, _TRIES + 1):
        try:
            with service(config, command, quiet=quiet) as (client, how):
                return work(client, how)
        except TransportError as exc:
            if tries == _TRIES:
                raise
            if not quiet:
                print(
                    f"lcg {command}: the service went away ({safe(exc)}); going on through "
                    "the workspace's next holder",
                    file=sys.stderr,
                    flush=True,
                )
    raise AssertionError("unreachable")  # the last try returned or raised
