"""The JSON-RPC 2.0 service on a Unix socket (its dispatcher, shared with MCP: ``dispatch``).

Contract (reference §1.1–§1.3, §6.3, with the differences listed in docs/compatibility.md):

* The socket (mode 0600) is bound **before** ``app.open()`` runs, so early clients queue
  instead of failing; ``health_check`` and the other exempt methods answer at once.
* One JSON value per line; blank lines are ignored; requests on one connection are served
  strictly in order (the next line is read after the answer is written and drained, so a
  client that never reads its answers stalls only itself); connections run concurrently.
* Limits (``Limits``, ADR 0071): a request line longer than ``LCG_RPC_MAX_REQUEST_BYTES``
  (8 MiB) is answered -32600 and the connection closed, having held at most that much; a
  batch holds at most ``LCG_RPC_MAX_BATCH`` requests.
* Connections (``lcg.rpc.connections``, ADR 0153): at ``LCG_RPC_MAX_CONNECTIONS`` (256) the
  longest-idle connection with no request in flight is given up for a newcomer; with every
  one in flight, newcomers wait in the listen backlog (1024). A connection idle past
  ``LCG_RPC_IDLE_TIMEOUT_MS`` is closed; a request line unfinished ``LCG_RPC_READ_TIMEOUT_MS``
  after its first byte is answered -32600 and the connection closed.
* A line that is not JSON (or nests too deeply to decode) gets ``-32700`` with ``id: null``
  and the connection stays open. Batches (arrays) are answered with an array; notifications
  get nothing.
* ``params._progress_token`` (non-null) on a streaming method makes the handler's progress
  frames bare ``{"type": "progress", ...}`` lines written before the response.
* Degraded: non-exempt methods answer -32001. Initializing: they wait for readiness, up to
  ``ready_timeout_s``, then answer -32001 with reason ``initializing``.
* Shutdown (SIGTERM, SIGINT, ``request_shutdown()``): stop accepting, close idle
  connections, let in-flight calls finish within ``shutdown_timeout_ms``, cancel the rest,
  ``app.close()`` within ``CLOSE_BUDGET_S`` more (else it is left to the process's end, ADR
  0197), remove the socket file, emit ``service_state stopped {drained, cancelled}``. The
  signal handlers stay until then: a second Ctrl-C while draining changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import stat
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec

from lcg import telemetry
from lcg.errors import ConfigError
from lcg.rpc import _jsonrpc as J
from lcg.rpc.connections import (
    READ_CHUNK,
    Admission,
    Connection,
    Limits,
    LineTooLong,
    accept_loop,
    read_request,
)
from lcg.rpc.dispatch import App, Dispatcher, ProgressSink, State
from lcg.rpc.errors import APPLICATION_ERROR, WireError, invalid_request, parse_error, to_wire
from lcg.rpc.progress import ClientGone, Frame, encode_frame

__all__ = [
    "CLOSE_BUDGET_S",
    "App",
    "Dispatcher",
    "Limits",
    "ProgressSink",
    "Server",
    "State",
    "serve",
]

log = logging.getLogger("lcg.rpc")

#: Pending connections the kernel queues before ``accept`` (capped by
#: /proc/sys/net/core/somaxconn); asyncio's default of 100 refused a burst of 400. Past the
#: connection limit newcomers wait here (ADR 0153).
_BACKLOG = 1024
#: How long a closing connection may take to deliver its last line before it is aborted.
_HANG_UP_S = 1.0
#: Unix socket paths longer than this cannot be bound (sun_path is 108 bytes with the NUL).
_MAX_SOCKET_PATH = 107
#: Seconds that closing the app may take past the drain's grace: a stop ends within the grace
#: plus this, and a process within the grace plus 2 s (ADR 0197). A close still running then
#: (its workspace waiting on a thread an LLM call holds) is left to the process's end.
CLOSE_BUDGET_S = 1.5

_item_encoder = msgspec.json.Encoder()


class _TrackedProtocol(asyncio.StreamReaderProtocol):
    """A stream protocol that keeps its transport in the server's set while connected."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        callback: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
        registry: set[asyncio.BaseTransport],
    ) -> None:
        super().__init__(reader, callback)
        self._registry = registry
        self._tracked: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._tracked = transport
        self._registry.add(transport)
        super().connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._tracked is not None:
            self._registry.discard(self._tracked)
        super().connection_lost(exc)


class Server:
    """The asyncio Unix-socket JSON-RPC server hosting one App."""

    def __init__(
        self,
        app: App,
        socket_path: str | os.PathLike[str],
        *,
        shutdown_timeout_ms: int = 5000,
        ready_timeout_s: float = 300.0,
        limits: Limits | None = None,
    ) -> None:
        """Prepare to serve ``app`` on ``socket_path``; nothing is bound until ``start()``."""
        self.app = app
        self.socket_path = Path(socket_path)
        self.shutdown_timeout_ms = shutdown_timeout_ms
        self.limits = limits or Limits()
        self.dispatcher = Dispatcher(
            app, ready_timeout_s=ready_timeout_s, on_shutdown=self.request_shutdown
        )
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._open_task: asyncio.Task[None] | None = None
        #: The open connections, and who is given up at the limit (ADR 0153).
        self.admission = Admission(self.limits)
        self._transports: set[asyncio.BaseTransport] = set()
        self._closing = False
        self._stop: asyncio.Event | None = None
        self._inode: int | None = None
        #: Set by ``shutdown()``: how many in-flight calls finished, and how many were cancelled.
        self.drained = 0
        self.cancelled = 0
        #: Set by ``shutdown()``: the ``time.monotonic()`` by which the stop is to be over
        #: (the grace, then ``CLOSE_BUDGET_S``); whoever ends the process keeps to it.
        self.deadline: float | None = None
        #: Whether ``app.close()`` finished by the deadline.
        self.closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind the socket (0600, stale file removed), then start ``app.open()`` behind it."""
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        path = self.socket_path
        if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
            raise ConfigError(
                f"socket path {str(path)!r} is longer than {_MAX_SOCKET_PATH} bytes; "
                "set LCG_SOCKET_PATH to a shorter path"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_socket(path)
        # umask makes the socket 0600 from its first moment; chmod states it explicitly.
        old_mask = os.umask(0o177)
        try:
            sock = _listening_socket(path)
        except FileExistsError:
            raise ConfigError(f"another service is already listening on {path}") from None
        except OSError as exc:
            raise ConfigError(f"cannot bind {path}: {exc.strerror or exc}") from exc
        finally:
            os.umask(old_mask)
        # Our own accept loop, not loop.create_unix_server: at the connection limit it stops
        # accepting (newcomers wait in the backlog) instead of accepting and closing.
        sock.setblocking(False)
        self._listener = sock
        self._accepting = asyncio.create_task(
            accept_loop(sock, self.admission, self._connected), name="lcg-rpc-accept"
        )
        os.chmod(path, 0o600)
        self._inode = os.stat(path).st_ino
        self._open_task = asyncio.create_task(self.dispatcher.open_app())

    def on_open(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the loop) once ``app.open()`` has ended, however it ended: a
        process hosting its own service starts its work then, with no polling."""
        task = self._open_task
        if task is None or task.done():
            callback()
            return
        task.add_done_callback(lambda _task: callback())

    def request_shutdown(self) -> None:
        """Begin a graceful shutdown (idempotent; safe from handlers, signal handlers and
        other threads: ``asyncio.Event.set`` is not thread-safe, so it runs on the loop)."""
        stop, loop = self._stop, getattr(self, "_loop", None)
        if stop is None:
            return
        if loop is None or loop.is_closed():
            stop.set()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            stop.set()
        else:
            loop.call_soon_threadsafe(stop.set)

    async def wait_for_shutdown_request(self) -> None:
        """Return once ``request_shutdown()`` was called."""
        assert self._stop is not None, "start() first"
        await self._stop.wait()

    async def shutdown(self) -> None:
        """Drain in-flight calls within the timeout, cancel the rest, close the app."""
        telemetry.emit(telemetry.ServiceState(state="shutting_down"))
        self.deadline = time.monotonic() + self.shutdown_timeout_ms / 1000 + CLOSE_BUDGET_S
        self._closing = True
        await self._stop_accepting()
        for conn in self.admission:
            if not conn.busy and conn.task is not None:
                conn.task.cancel()
        busy = [c.task for c in self.admission if c.busy and c.task is not None]
        if busy:
            done, pending = await asyncio.wait(busy, timeout=self.shutdown_timeout_ms / 1000)
            self.drained = len(done)
            self.cancelled = len(pending)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        rest = [c.task for c in self.admission if c.task is not None]
        await asyncio.gather(*rest, return_exceptions=True)
        if self._open_task is not None and not self._open_task.done():
            self._open_task.cancel()
            await asyncio.gather(self._open_task, return_exceptions=True)
        # A connection accepted just before close() is still being set up by asyncio (an
        # accept task, then connection_made) and its own task may never run: let the set-up
        # finish, then close every transport still open, so no socket is left to the GC.
        for _ in range(5):
            await asyncio.sleep(0)
        for transport in list(self._transports):
            transport.close()
        for _ in range(2):
            await asyncio.sleep(0)
        await self._close_app(self.deadline)
        self._remove_socket()
        telemetry.emit(
            telemetry.ServiceState(
                state="stopped", detail={"drained": self.drained, "cancelled": self.cancelled}
            )
        )

    async def _close_app(self, deadline: float) -> None:
        """``app.close()``, waited for until ``deadline`` at most."""
        closing = asyncio.ensure_future(self.app.close())
        try:
            await asyncio.wait_for(asyncio.shield(closing), max(0.0, deadline - time.monotonic()))
            self.closed = True
        except TimeoutError:
            telemetry.emit(
                telemetry.ServiceNotice(
                    kind="close_cut",
                    reason=f"closing the workspace took longer than {CLOSE_BUDGET_S:g} s past "
                    "the grace (a call still holds it); left to the process's end: the streams "
                    "hold every acknowledged write, the projections catch up on the next open",
                )
            )
        except Exception as exc:
            log.error("closing the service failed", exc_info=exc)

    def _remove_socket(self) -> None:
        # Only our own socket: a successor may already have bound the same path.
        try:
            st = os.stat(self.socket_path)
        except FileNotFoundError:
            return
        if st.st_ino == self._inode:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()

    # -- connections -------------------------------------------------------------------------

    async def _stop_accepting(self) -> None:
        if self._accepting is not None:
            self._accepting.cancel()
            await asyncio.gather(self._accepting, return_exceptions=True)
        if self._listener is not None:
            self._listener.close()

    async def _connected(self, sock: socket.socket, conn: Connection) -> None:
        """Serve an accepted socket (counted in ``admission`` already)."""

        def protocol() -> asyncio.BaseProtocol:
            reader = asyncio.StreamReader(limit=READ_CHUNK)
            serve = functools.partial(self._on_connection, conn)
            return _TrackedProtocol(reader, serve, self._transports)

        await self._loop.connect_accepted_socket(protocol, sock)

    async def _on_connection(
        self, conn: Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        conn.task = asyncio.current_task()
        try:
            await self._serve_connection(conn, reader, writer)
        except (ConnectionError, ClientGone):
            pass
        except asyncio.CancelledError:
            # Ended by the service (a deadline, or given up at the limit) or shut down. A
            # client whose request line had begun is told why; nothing was begun otherwise.
            if conn.ended == "read_timeout":
                _say(writer, _read_timeout_error(self.limits.read_timeout_ms))
            elif conn.ended == "given_up" and conn.phase == "reading":
                _say(writer, _given_up_error(self.limits.max_connections))
            elif conn.ended == "write_timeout":
                writer.transport.abort()  # it does not read: what is left for it goes
        finally:
            self.admission.discard(conn)
            await _hang_up(writer)

    async def _serve_connection(
        self, conn: Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        sink = _sink_for(writer)
        while not self._closing:
            self.admission.enter(conn, "idle")
            try:
                line = await read_request(reader, conn, self.admission)
            except LineTooLong:
                # Its end cannot be found without reading it all: answer, then hang up.
                limit = self.limits.max_request_bytes
                writer.write(
                    J.encode_error(
                        None,
                        invalid_request(
                            f"request line longer than {limit} bytes (LCG_RPC_MAX_REQUEST_BYTES);"
                            " send smaller requests or raise the limit; closing the connection"
                        ),
                    )
                )
                await writer.drain()
                return
            if not line:
                return
            if not line.strip():
                continue
            self.admission.enter(conn, "handling")
            try:
                out = await self.handle_line(line, sink)
            except (ClientGone, asyncio.CancelledError):
                raise
            except Exception as exc:
                # A bug in the envelope code must cost one answer, never the connection.
                out = J.encode_error(None, to_wire(exc))
            if out is not None:
                # A client that does not take its answer within the idle deadline is ended.
                self.admission.enter(conn, "writing")
                writer.write(out)
                await writer.drain()

    async def handle_line(self, line: bytes, sink: ProgressSink | None) -> bytes | None:
        """The answer to one request line (newline included), or ``None`` for no answer."""
        try:
            value = J.decode_line(line)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            # msgspec reports invalid UTF-8 inside a string as UnicodeDecodeError; a lone
            # surrogate escape is answered -32602 with the request's id.
            return J.encode_error(*J.undecodable(line, exc))
        except RecursionError:
            # msgspec decodes nested arrays/objects recursively; ~1,000 levels exhaust it.
            return J.encode_error(
                None, parse_error("JSON nested too deeply to decode; flatten the request")
            )
        if isinstance(value, list):
            if not value:
                return J.encode_error(None, _empty_batch())
            if len(value) > self.limits.max_batch:
                return J.encode_error(
                    None,
                    invalid_request(
                        f"batch of {len(value)} requests; at most {self.limits.max_batch} "
                        "(LCG_RPC_MAX_BATCH): split it"
                    ),
                )
            items = [await self._handle_value(v, sink) for v in value]
            present = [i for i in items if i is not None]
            if not present:
                return None
            return b"[" + b",".join(present) + b"]\n"
        item = await self._handle_value(value, sink)
        return None if item is None else item + b"\n"

    async def _handle_value(self, value: Any, sink: ProgressSink | None) -> bytes | None:
        parsed = J.parse_request(value)
        if isinstance(parsed, J.Invalid):
            if parsed.silent:
                return None
            return _item_encoder.encode(J.failure(parsed.id, parsed.error))
        notification = parsed.is_notification
        rid = None if notification else parsed.id
        wants_progress = parsed.params.get("_progress_token") is not None and not notification
        try:
            result = await self.dispatcher.call(
                parsed.method,
                parsed.params,
                request_id=rid,
                sink=sink if wants_progress else None,
            )
        except ClientGone:
            raise
        except Exception as exc:
            if notification:
                return None
            return _item_encoder.encode(J.failure(rid, to_wire(exc)))
        if notification:
            return None
        try:
            return _item_encoder.encode(J.success(rid, result))
        except (TypeError, msgspec.EncodeError, OverflowError) as exc:
            return _item_encoder.encode(J.failure(rid, to_wire(exc)))


def _empty_batch() -> WireError:
    return invalid_request("empty batch")


def _read_timeout_error(timeout_ms: int) -> WireError:
    return invalid_request(
        f"request line not finished within {timeout_ms} ms of its first byte "
        "(LCG_RPC_READ_TIMEOUT_MS); send each request as one whole line, or raise the limit; "
        "closing the connection"
    )


def _given_up_error(limit: int) -> WireError:
    return WireError(
        APPLICATION_ERROR,
        f"IPC error: connection given up: the service was at its limit of {limit} connections "
        "(LCG_RPC_MAX_CONNECTIONS) and this one's request line had not been finished; "
        "reconnect and send whole lines, or raise the limit",
    )


def _say(writer: asyncio.StreamWriter, error: WireError) -> None:
    """Write one error line (id null) to a connection about to be closed, if it still can."""
    with contextlib.suppress(Exception):
        writer.write(J.encode_error(None, error))


async def _hang_up(writer: asyncio.StreamWriter) -> None:
    """Close a connection; one whose client does not read what is left for it is aborted."""
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), _HANG_UP_S)
    except TimeoutError:
        writer.transport.abort()
    except Exception:  # noqa: BLE001 - the connection is gone whatever went wrong
        pass


def _sink_for(writer: asyncio.StreamWriter) -> ProgressSink:
    async def sink(frame: Frame) -> None:
        if writer.is_closing():
            raise ClientGone("the client disconnected")
        try:
            writer.write(encode_frame(frame))
            await writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            raise ClientGone("the client disconnected") from exc

    return sink


def _remove_stale_socket(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise ConfigError(f"{path} exists and is not a socket; remove it or set LCG_SOCKET_PATH")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        # Nobody listens: a socket file left behind by a process that died.
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    except OSError as exc:
        raise ConfigError(f"cannot check socket {path}: {exc}") from exc
    finally:
        probe.close()
    raise ConfigError(f"another service is already listening on {path}")


def _listening_socket(path: Path) -> socket.socket:
    """A socket listening at ``path``, whose file appears there only once it listens.

    bind() creates the file a moment before listen(); a client (or a second service checking
    for a stale file) that connects in between is refused. So the socket is bound under a
    temporary name beside ``path``, listens, and is then linked into place - a link, not a
    rename, so that a file another service put there first is never replaced
    (``FileExistsError``). A temporary name that would be too long binds ``path`` directly.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    direct = len(os.fsencode(tmp)) > _MAX_SOCKET_PATH
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if direct:
            sock.bind(str(path))
            sock.listen(_BACKLOG)
            return sock
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # left by a process of this pid that died
        sock.bind(str(tmp))
        sock.listen(_BACKLOG)
        try:
            os.link(tmp, path)
        finally:
            tmp.unlink()
    except BaseException:
        sock.close()
        raise
    return sock


async def serve(
    app: App,
    socket_path: str | os.PathLike[str],
    shutdown_timeout_ms: int = 5000,
    *,
    ready_timeout_s: float = 300.0,
    started: Callable[[Server], None] | None = None,
    limits: Limits | None = None,
) -> Server:
    """Serve ``app`` until SIGTERM, SIGINT or ``request_shutdown()``, then shut down gracefully.

    ``started`` is called with the server once the socket is bound (tests use it to reach
    ``request_shutdown`` from another thread). Returns the stopped server (drain counts).
    """
    server = Server(
        app,
        socket_path,
        shutdown_timeout_ms=shutdown_timeout_ms,
        ready_timeout_s=ready_timeout_s,
        limits=limits,
    )
    await server.start()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        # Signal handlers can only be installed from the main thread (tests run servers in
        # threads and stop them with request_shutdown()).
        try:
            loop.add_signal_handler(sig, server.request_shutdown)
            installed.append(sig)
        except (RuntimeError, ValueError):
            pass
    if started is not None:
        started(server)
    try:
        await server.wait_for_shutdown_request()
    finally:
        try:
            await server.shutdown()
        finally:
            # Only now: a signal while draining or closing is one more request, no exception.
            for sig in installed:
                loop.remove_signal_handler(sig)
    return server
