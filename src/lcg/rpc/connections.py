"""Which connections the socket service holds, and for how long (ADR 0071, ADR 0153).

* **Limits** (``Limits``): request line bytes, open connections, requests per batch, and two
  deadlines: a connection waiting for its client (for the next request, or for the client to
  read its answer) longer than ``idle_timeout_ms`` is closed; a request line must end within
  ``read_timeout_ms`` of its first byte. A request being served has no deadline here, so a
  long call or a streaming one is never cut off by them. One watcher task checks every
  connection a few times per deadline (``Admission.watch``): a timer per request cost more
  than the rest of a small call's overhead together.
* **Admission** (``Admission``, ``accept_loop``): below the limit a pending connection is
  accepted at once. At the limit the longest-idle connection with no request in flight is
  given up for it (once it has been idle ``EVICT_GRACE_S``, so that a client that has just
  connected has time to send its request); when every connection has a request in flight,
  nothing is accepted and newcomers wait in the kernel's listen backlog, to be accepted as
  soon as a slot frees, instead of being accepted and closed unread.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from lcg.config import Config

__all__ = [
    "EVICT_GRACE_S",
    "Admission",
    "Connection",
    "LineTooLong",
    "Limits",
    "accept_loop",
    "read_request",
]

log = logging.getLogger("lcg.rpc")

#: How long a connection must have been idle before it may be given up for a newcomer: a
#: client that has just connected (or just been answered) gets this long to send its request.
EVICT_GRACE_S = 1.0
#: How far a connection's reader may read ahead of the request being served: asyncio pauses
#: the socket once its buffer holds twice this, so a client that pipelines without reading
#: its answers fills its own socket, not the service's memory.
READ_CHUNK = 64 * 1024
#: accept() errors that mean "out of descriptors or memory for now": retry after a pause.
_ACCEPT_RETRY = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
_ACCEPT_RETRY_S = 1.0


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client may hold of the service (ADR 0071, 0153); ``Config`` carries them."""

    #: The longest request line (bytes); longer → -32600 and the connection closed.
    max_request_bytes: int = 8 * 1024 * 1024
    #: Open connections at once; past it idle ones are given up, else newcomers wait.
    max_connections: int = 256
    #: Requests in one batch (they are all in flight together).
    max_batch: int = 1000
    #: A connection waiting this long for its client is closed (0: never).
    idle_timeout_ms: int = 60_000
    #: A request line must end this long after its first byte (0: no deadline).
    read_timeout_ms: int = 30_000

    @classmethod
    def from_config(cls, config: Config) -> Limits:
        """The limits set in ``config`` (``LCG_RPC_*``)."""
        return cls(
            max_request_bytes=config.rpc_max_request_bytes,
            max_connections=config.rpc_max_connections,
            max_batch=config.rpc_max_batch,
            idle_timeout_ms=config.rpc_idle_timeout_ms,
            read_timeout_ms=config.rpc_read_timeout_ms,
        )

    @property
    def idle_timeout_s(self) -> float | None:
        """The idle deadline in seconds, ``None`` for none."""
        return self.idle_timeout_ms / 1000 if self.idle_timeout_ms > 0 else None

    @property
    def read_timeout_s(self) -> float | None:
        """The read deadline in seconds, ``None`` for none."""
        return self.read_timeout_ms / 1000 if self.read_timeout_ms > 0 else None


class LineTooLong(Exception):
    """A request line grew past ``Limits.max_request_bytes`` before its newline."""


#: ``idle``: waiting for the next request; ``reading``: a request line has begun;
#: ``handling``: a request is being served; ``writing``: its answer is being delivered.
Phase = Literal["idle", "reading", "handling", "writing"]
#: Why the service ended a connection: given up for a newcomer at the limit, idle past the
#: idle deadline, a request line past the read deadline, an answer not taken within the idle
#: deadline.
Ending = Literal["given_up", "idle", "read_timeout", "write_timeout"]


class Connection:
    """One accepted connection: its task, what it is doing, and since when it is idle."""

    __slots__ = ("ended", "phase", "since", "started", "task")

    def __init__(self, since: float) -> None:
        self.task: asyncio.Task[None] | None = None
        self.phase: Phase = "idle"
        #: Loop time it last started waiting for its client (accepted, or answered); a
        #: request line that has begun but not ended does not move it, so a client that
        #: trickles bytes is as idle as one that sends none.
        self.since = since
        #: Loop time the current phase began (a line's first byte, an answer's first write).
        self.started = since
        #: Set when the service ends the connection (its task is cancelled): why.
        self.ended: Ending | None = None

    @property
    def busy(self) -> bool:
        """A request is in flight: being served, or its answer being delivered."""
        return self.phase in ("handling", "writing")


class Admission:
    """The open connections, and room for one more at the limit (see the module doc)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._conns: set[Connection] = set()
        self._changed = asyncio.Event()
        #: How many connections were given up for newcomers (tests and telemetry read it).
        self.given_up = 0
        #: How often ``watch`` looks: a tenth of the shorter deadline, within 50 ms .. 1 s.
        deadlines = [t for t in (limits.idle_timeout_s, limits.read_timeout_s) if t is not None]
        self.tick_s = min(1.0, max(0.05, min(deadlines, default=1.0) / 10))

    def __len__(self) -> int:
        return len(self._conns)

    def __iter__(self) -> Iterator[Connection]:
        return iter(list(self._conns))

    def add(self, conn: Connection) -> None:
        """Count ``conn`` as open."""
        self._conns.add(conn)

    def discard(self, conn: Connection) -> None:
        """``conn`` has closed: its slot is free."""
        self._conns.discard(conn)
        self._changed.set()

    def enter(self, conn: Connection, phase: Phase) -> None:
        """``conn`` moves to ``phase``; waiting for its client again restarts its idle time."""
        conn.phase = phase
        if phase == "handling":
            return  # no deadline runs while a request is served
        now = asyncio.get_running_loop().time()
        conn.started = now
        if phase == "idle":
            conn.since = now
            self._changed.set()

    async def watch(self) -> None:
        """End the connections past a deadline, every ``tick_s``; runs until cancelled."""
        loop = asyncio.get_running_loop()
        idle_s, read_s = self.limits.idle_timeout_s, self.limits.read_timeout_s
        while True:
            await asyncio.sleep(self.tick_s)
            now = loop.time()
            for conn in list(self._conns):
                ending = _overdue(conn, now, idle_s, read_s)
                if ending is not None:
                    self._end(conn, ending)

    def _victim(self, now: float) -> tuple[Connection | None, float | None]:
        """The connection to give up now, or else when the first one may be given up."""
        oldest: Connection | None = None
        for conn in self._conns:
            if conn.busy or conn.task is None or conn.ended is not None:
                continue
            if oldest is None or conn.since < oldest.since:
                oldest = conn
        if oldest is None:
            return None, None
        ready_at = oldest.since + EVICT_GRACE_S
        return (oldest, None) if ready_at <= now else (None, ready_at)

    async def make_room(self) -> None:
        """Return once a connection may be accepted: below the limit, or having given up the
        longest-idle connection; while every one has a request in flight, wait."""
        loop = asyncio.get_running_loop()
        while len(self._conns) >= self.limits.max_connections:
            now = loop.time()
            victim, ready_at = self._victim(now)
            if victim is not None:
                self._give_up(victim)
                continue
            self._changed.clear()
            wait = None if ready_at is None else max(0.0, ready_at - now)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), wait)

    def _give_up(self, conn: Connection) -> None:
        self.given_up += 1
        self._end(conn, "given_up")

    def _end(self, conn: Connection, ending: Ending) -> None:
        # Its slot is free from now on; its task closes it (saying why when a request line
        # had begun) as it unwinds.
        if conn.task is None or conn.ended is not None:
            return
        conn.ended = ending
        self._conns.discard(conn)
        self._changed.set()
        conn.task.cancel()


def _overdue(
    conn: Connection, now: float, idle_s: float | None, read_s: float | None
) -> Ending | None:
    """Which deadline ``conn`` has passed, if any."""
    if conn.phase == "idle":
        return "idle" if idle_s is not None and now - conn.since > idle_s else None
    if conn.phase == "reading":
        return "read_timeout" if read_s is not None and now - conn.started > read_s else None
    if conn.phase == "writing":
        return "write_timeout" if idle_s is not None and now - conn.started > idle_s else None
    return None


async def accept_loop(
    listener: socket.socket,
    admission: Admission,
    connected: Callable[[socket.socket, Connection], Awaitable[None]],
) -> None:
    """Accept connections from ``listener`` while there is room (see the module doc).

    Runs until cancelled. ``connected`` starts serving an accepted socket; the connection is
    counted from its accept, so a burst cannot pass the limit before its tasks have run.
    """
    loop = asyncio.get_running_loop()
    watcher = asyncio.create_task(admission.watch(), name="lcg-rpc-deadlines")
    try:
        await _accept_forever(loop, listener, admission, connected)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)


async def _accept_forever(
    loop: asyncio.AbstractEventLoop,
    listener: socket.socket,
    admission: Admission,
    connected: Callable[[socket.socket, Connection], Awaitable[None]],
) -> None:
    while True:
        if len(admission) >= admission.limits.max_connections:
            # Make room only for a client that is really waiting, never in advance.
            await _readable(loop, listener)
            await admission.make_room()
        try:
            sock = await _accept(loop, listener)
        except OSError as exc:
            if exc.errno in _ACCEPT_RETRY:
                log.warning("accepting a connection failed (%s); retrying in 1 s", exc)
                await asyncio.sleep(_ACCEPT_RETRY_S)
            elif not isinstance(exc, ConnectionAbortedError):
                log.warning("accepting a connection failed: %s", exc)
            continue
        conn = Connection(loop.time())
        admission.add(conn)
        try:
            await connected(sock, conn)
        except OSError as exc:
            # The client went before its connection was set up; nothing to serve.
            log.debug("setting up a connection failed: %s", exc)
            admission.discard(conn)
            sock.close()


async def _accept(loop: asyncio.AbstractEventLoop, listener: socket.socket) -> socket.socket:
    """The next accepted socket; one accepted just as the loop is cancelled is closed."""
    accepting = asyncio.ensure_future(loop.sock_accept(listener))
    try:
        sock, _ = await asyncio.shield(accepting)
    except asyncio.CancelledError:
        # Let the accept finish unwinding (it unregisters the listener from the selector
        # before the listener may be closed), and close what it may have accepted.
        accepting.cancel()
        await asyncio.wait([accepting])
        if not accepting.cancelled() and accepting.exception() is None:
            accepting.result()[0].close()
        raise
    return sock


async def _readable(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    """Wait until ``sock`` has a connection to accept."""
    ready = loop.create_future()
    fd = sock.fileno()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


async def read_request(
    reader: asyncio.StreamReader, conn: Connection, admission: Admission
) -> bytes:
    """The next line (newline included; ``b""`` at end of stream); raises ``LineTooLong``.

    Read in chunks of at most ``READ_CHUNK`` so only a line being received is held, never
    what follows it. The first byte is read alone so that the line's read deadline starts
    there (``watch`` ends a connection past it).
    """
    first = await reader.read(1)
    if not first or first == b"\n":
        return first
    admission.enter(conn, "reading")
    return await _rest_of_line(reader, first, admission.limits.max_request_bytes)


async def _rest_of_line(reader: asyncio.StreamReader, first: bytes, limit: int) -> bytes:
    parts: list[bytes] = [first]
    size = len(first)
    while True:
        try:
            chunk = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError as exc:
            # No newline within the buffered bytes: take them and keep reading.
            chunk = await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError as exc:
            chunk = exc.partial  # the stream ended; an unterminated tail is one line
            size += len(chunk)
            if size > limit:
                raise LineTooLong from None
            parts.append(chunk)
            return b"".join(parts)
        size += len(chunk)
        if size > limit:
            raise LineTooLong
        parts.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(parts)
