"""The service's side of the Cypher sandbox: one worker process, deadlines, kills.

``CypherSandbox.query`` runs one client query at a time in the worker (``worker.py``),
waiting at most until the query's deadline (its arrival plus ``timeout_ms``) for the one
before it, for the worker to be ready and for the read model to catch up with the service's
applied positions. Once the worker says the query runs, it has ``timeout_ms`` (Kuzu's own
timeout) and then ``kill_grace_s``: past that it is killed. A worker that died (a Kuzu
crash, its memory limit) or grew more than ``recycle_growth_mb`` over its baseline is
replaced by a new one, forked from a server process that has imported everything, so that
it only has to open the read model (ADR 0152).
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from lcg.errors import ProjectionError
from lcg.query.sandbox.protocol import (
    Answer,
    CatchingUp,
    Hello,
    Open,
    Opened,
    Reply,
    Request,
    Running,
    Target,
    decode_reply,
    encode,
)

__all__ = ["CypherSandbox", "SandboxLimits"]

_ZYGOTE = (
    "import sys; from lcg.query.sandbox.zygote import main; sys.exit(main(int(sys.argv[1])))"
)
#: How long a new worker may take to import and to open the read model.
_START_S = 120.0


@dataclass(frozen=True)
class SandboxLimits:
    """What one client query may take in the worker."""

    #: Address space a query may add to the worker (``RLIMIT_AS``).
    memory_mb: int = 2048
    #: Kuzu's query threads.
    threads: int = 1
    #: Kuzu's buffer pool (pages of the read model and query state).
    buffer_pool_mb: int = 512
    #: Past its timeout, a query may still wait this long for a worker being replaced (a
    #: kill costs the next query a database open) and for the read model's catch-up.
    ready_grace_s: float = 0.5
    #: A query still running this long past its timeout gets its worker killed (Kuzu's
    #: own timeout is checked between operators, often late): an answer comes at most
    #: ``timeout + kill_grace_s`` after the query arrived.
    kill_grace_s: float = 1.5
    #: A worker whose RSS grew this much over its first catch-up is replaced after a query.
    recycle_growth_mb: int = 64
    #: A query's result may hold this many bytes of values (``LCG_CYPHER_MAX_BYTES``); the
    #: worker refuses a bigger one as it builds it, so it never crosses to the service.
    max_bytes: int = 32 * 1024 * 1024


class _Dead(Exception):
    """The worker's pipe closed: the process died."""


class _Zygote:
    """The process workers are forked from (``zygote.py``), and its control socket."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.popen = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, str(theirs.fileno())],
            stdin=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        self._ctl = ours
        #: Exit statuses of workers that exited, by pid.
        self.exited: dict[int, int] = {}

    def fork(self, conn: socket.socket, until: float) -> int:
        """A new worker serving ``conn``; its pid."""
        try:
            socket.send_fds(self._ctl, [b"S"], [conn.fileno()])
            while True:
                msg = self._next(until)
                if msg is None:
                    raise TimeoutError
                if msg.startswith(b"P"):
                    return int(msg[1:])
        except OSError as exc:
            raise _Dead from exc

    def status(self, pid: int, until: float) -> int | None:
        """The exit status of worker ``pid`` once the zygote reaped it."""
        while pid not in self.exited:
            try:
                if self._next(until) is None:
                    return None
            except OSError:
                return None
        return self.exited.pop(pid)

    def _next(self, until: float) -> bytes | None:
        while True:
            self._ctl.settimeout(max(0.001, until - time.monotonic()))
            try:
                msg: bytes = self._ctl.recv(64)
            except TimeoutError:
                return None
            if not msg:
                raise _Dead
            if msg.startswith(b"X"):
                pid, code = msg[1:].split()
                self.exited[int(pid)] = int(code)
            return msg

    def alive(self) -> bool:
        """The zygote has not exited."""
        return self.popen.poll() is None

    def close(self) -> None:
        """Stop the zygote (it exits when its control socket closes)."""
        self._ctl.close()
        try:
            self.popen.wait(5)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()


class _Proc:
    """One worker process and its framed socket."""

    def __init__(self, zygote: _Zygote, until: float) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.pid = zygote.fork(theirs, until)
        finally:
            theirs.close()
        self._zygote = zygote
        # The connection owns the descriptor from here (closing it is the worker's EOF).
        self._conn = Connection(ours.detach())
        self.exit_status: int | None = None
        self.baseline_kb: int | None = None

    def send(self, message: Open | Request) -> None:
        try:
            self._conn.send_bytes(encode(message))
        except (OSError, ValueError) as exc:
            raise _Dead from exc

    def recv(self, until: float) -> Reply | None:
        """The next reply, or ``None`` once ``until`` (monotonic) passed without one."""
        try:
            while not self._conn.poll(max(0.0, min(until - time.monotonic(), 3600.0))):
                if time.monotonic() >= until:
                    return None
            return decode_reply(self._conn.recv_bytes())
        except (EOFError, OSError) as exc:
            raise _Dead from exc

    def alive(self) -> bool:
        """The process has not exited (as far as the zygote has told)."""
        if self.exit_status is not None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return self.pid not in self._zygote.exited

    def kill(self) -> int:
        """SIGKILL the process; its exit status."""
        if self.exit_status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return self.wait(10)

    def wait(self, timeout: float) -> int:
        """Its exit status once it exited (killed after ``timeout``)."""
        if self.exit_status is None:
            status = self._zygote.status(self.pid, time.monotonic() + timeout)
            if status is None:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                status = self._zygote.status(self.pid, time.monotonic() + 5)
            self.exit_status = -signal.SIGKILL if status is None else status
            if not self._conn.closed:
                self._conn.close()
        return self.exit_status

    def close_input(self) -> None:
        """Ask it to stop (its end of the socket sees end of file)."""
        self._conn.close()

    def rss_kb(self) -> int:
        """Resident memory now (0 once exited)."""
        try:
            with open(f"/proc/{self.pid}/statm", encoding="ascii") as fh:
                return int(fh.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") >> 10)
        except (OSError, ValueError, IndexError):
            return 0


def _signal_name(code: int) -> str:
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


class CypherSandbox:
    """Clients' Cypher, run in a worker process on its own read model of the graph."""

    def __init__(
        self,
        db_dir: Path,
        wal_dir: Path,
        targets: Callable[[], dict[str, Target]],
        limits: SandboxLimits | None = None,
    ) -> None:
        self.db_dir = db_dir
        self.wal_dir = wal_dir
        self.limits = limits or SandboxLimits()
        self._targets = targets
        self._lock = threading.Lock()  # one query (and one process change) at a time
        self._active: _Proc | None = None
        self._zygote: _Zygote | None = None
        #: A request the worker still owes an answer for: (id, deadline or kill time once
        #: its query runs, running).
        self._owed: tuple[int, float, bool] | None = None
        #: The lock is held to replace a worker (not by a query).
        self._replacing = False
        self._dirty: set[str] = set()
        self._next_id = 0
        self._closed = False
        #: Workers replaced so far, by cause (for tests and status).
        self.replaced: dict[str, int] = {}
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="lcg-cypher")

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker and open the read model; its catch-up goes on in the worker."""
        with self._lock:
            self._replace(time.monotonic() + _START_S)
            self._request(None, 0, 0, float("inf"))

    def close(self) -> None:
        """Stop the worker and the spare (idempotent)."""
        self._closed = True
        with self._lock:
            proc, self._active = self._active, None
        self._executor.shutdown(wait=False, cancel_futures=True)
        if proc is not None:
            proc.close_input()
            proc.wait(5)
        zygote, self._zygote = self._zygote, None
        if zygote is not None:
            zygote.close()

    def mark_dirty(self, group_id: str) -> None:
        """The service purged ``group_id``: the read model rebuilds it before the next query."""
        self._dirty.add(group_id)

    # ---- queries -------------------------------------------------------------------------

    async def run(self, query: str, timeout_ms: int, max_rows: int) -> list[list[str]]:
        """``query`` from the event loop: queued on the sandbox's own thread, so that
        waiting queries hold none of the service's read threads."""
        arrived = time.monotonic()
        loop = asyncio.get_running_loop()
        call = functools.partial(self.query, query, timeout_ms, max_rows, arrived=arrived)
        return await loop.run_in_executor(self._executor, call)

    def query(
        self, query: str, timeout_ms: int, max_rows: int, *, arrived: float | None = None
    ) -> list[list[str]]:
        """The stringified rows of a (guarded) read query, or ``ProjectionError`` saying why
        not, within ``timeout_ms`` (from ``arrived``, default now) plus the kill grace."""
        start = time.monotonic() if arrived is None else arrived
        deadline = start + timeout_ms / 1000 + self.limits.ready_grace_s
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            if self._replacing:
                raise ProjectionError(
                    f"graph query failed: the Cypher worker was being replaced for "
                    f"{timeout_ms} ms (after a query that crashed it or ran past its timeout); "
                    "retry"
                )
            raise ProjectionError(
                f"graph query failed: it waited {timeout_ms} ms behind other "
                "knowledge_query_cypher queries (one runs at a time); retry once they finished"
            )
        try:
            if self._closed:
                raise ProjectionError("graph query failed: the Cypher sandbox is closed")
            return self._request(query, timeout_ms, max_rows, deadline, start)
        finally:
            self._lock.release()

    def _request(
        self,
        query: str | None,
        timeout_ms: int,
        max_rows: int,
        deadline: float,
        start: float = 0.0,
    ) -> list[list[str]]:
        proc = self._ready(deadline, timeout_ms)
        self._settle(proc, deadline, timeout_ms)
        self._next_id += 1
        rid = self._next_id
        dirty, self._dirty = self._dirty, set()
        request = Request(
            id=rid,
            targets=self._targets(),
            dirty=sorted(dirty),
            query=query,
            timeout_ms=timeout_ms,
            max_rows=max_rows,
            max_bytes=self.limits.max_bytes,
            deadline=deadline,
        )
        try:
            proc.send(request)
        except _Dead:
            self._dirty |= dirty
            raise self._died(proc, timeout_ms) from None
        if query is None:
            self._owed = (rid, deadline, False)
            return []  # a catch-up: its answer is drained by the next query
        self._owed = (rid, start + timeout_ms / 1000 + self.limits.kill_grace_s, True)
        try:
            kill_at = start + timeout_ms / 1000 + self.limits.kill_grace_s
            answer = self._await(proc, rid, deadline, kill_at, timeout_ms)
        except _Dead:
            self._dirty |= dirty
            raise self._died(proc, timeout_ms) from None
        if answer is None:
            raise ProjectionError(
                f"graph query failed: the Cypher read model was still catching up with the "
                f"streams after {timeout_ms} ms; retry shortly (it goes on catching up)"
            )
        self._after(proc, answer)
        if answer.error is not None:
            raise ProjectionError(answer.error)
        if answer.expired:
            raise ProjectionError(
                f"graph query failed: the Cypher read model caught up with the streams only "
                f"after {timeout_ms} ms; retry"
            )
        return answer.rows or []

    def _await(
        self, proc: _Proc, rid: int, deadline: float, kill_at: float, timeout_ms: int
    ) -> Answer | None:
        """The answer to ``rid``; ``None`` if the deadline passed while it caught up (it is
        then still owed); a query still running at ``kill_at`` gets its worker killed."""
        # A request runs its query at once unless the worker says it catches up first.
        running = True
        while True:
            until = kill_at if running else deadline
            reply = proc.recv(until)
            if reply is None:
                if not running:
                    self._owed = (rid, deadline, False)
                    return None
                self._kill(proc, "timeout")
                raise ProjectionError(
                    f"graph query failed: it ran past {timeout_ms} ms and was stopped "
                    "(LCG_CYPHER_TIMEOUT_MS); narrow it (WHERE, LIMIT) or raise the limit"
                )
            if isinstance(reply, CatchingUp) and reply.id == rid:
                running = False
            elif isinstance(reply, Running) and reply.id == rid:
                running = True
            elif isinstance(reply, Answer) and reply.id == rid:
                self._owed = None
                return reply

    def _settle(self, proc: _Proc, deadline: float, timeout_ms: int) -> None:
        """Wait (until ``deadline``) for the answer a request before this one is owed."""
        while self._owed is not None:
            rid, owed_until, running = self._owed
            # A running query is waited for at most to its own kill time.
            try:
                reply = proc.recv(min(deadline, owed_until) if running else deadline)
            except _Dead:
                self._forget(proc, "crash")
                raise ProjectionError(
                    "graph query failed: the query before this one crashed the Cypher worker; "
                    "retry (a new worker takes over)"
                ) from None
            if reply is None and running and time.monotonic() >= owed_until:
                self._kill(proc, "timeout")
                raise ProjectionError(
                    "graph query failed: the query before this one ran past its timeout and "
                    f"its worker is being replaced; retry (waited {timeout_ms} ms)"
                )
            if reply is None:
                raise ProjectionError(
                    f"graph query failed: the Cypher read model was still catching up with the "
                    f"streams after {timeout_ms} ms; retry shortly (it goes on catching up)"
                )
            if isinstance(reply, CatchingUp) and reply.id == rid:
                self._owed = (rid, owed_until, False)
            elif isinstance(reply, Running) and reply.id == rid:
                self._owed = (rid, owed_until, True)
            elif isinstance(reply, Answer) and reply.id == rid:
                self._owed = None
                self._after(proc, reply)

    def _after(self, proc: _Proc, answer: Answer) -> None:
        """Recycle a worker that kept the memory a query took."""
        if proc.baseline_kb is None:
            proc.baseline_kb = answer.rss_kb
        elif answer.rss_kb - proc.baseline_kb > self.limits.recycle_growth_mb << 10:
            self._kill(proc, "memory")

    # ---- processes -----------------------------------------------------------------------

    def _ready(self, deadline: float, timeout_ms: int) -> _Proc:
        proc = self._active
        if proc is not None and proc.alive():
            return proc
        if proc is not None:
            self._forget(proc, "died")
        try:
            return self._replace(deadline)
        except _Dead:
            raise ProjectionError(
                "graph query failed: the Cypher worker could not be started; see the service's log"
            ) from None
        except TimeoutError:
            raise ProjectionError(
                f"graph query failed: the Cypher worker was not ready within {timeout_ms} ms "
                "(it is starting); retry shortly"
            ) from None

    def _replace(self, deadline: float) -> _Proc:
        """Fork a new worker and open the read model in it."""
        if self._zygote is None or not self._zygote.alive():
            if self._zygote is not None:
                self._zygote.close()
            self._zygote = _Zygote()
        proc = _Proc(self._zygote, max(deadline, time.monotonic() + 1))
        hello = proc.recv(deadline)
        if not isinstance(hello, Hello):
            proc.kill()
            raise TimeoutError
        proc.send(
            Open(
                db_dir=str(self.db_dir),
                wal_dir=str(self.wal_dir),
                memory_mb=self.limits.memory_mb,
                threads=self.limits.threads,
                buffer_pool_mb=self.limits.buffer_pool_mb,
            )
        )
        opened = proc.recv(max(deadline, time.monotonic() + _START_S))
        if not isinstance(opened, Opened) or opened.error is not None:
            proc.kill()
            why = opened.error if isinstance(opened, Opened) else "no answer"
            raise ProjectionError(f"graph query failed: the Cypher read model did not open: {why}")
        self._active = proc
        self._owed = None
        return proc

    def _kill(self, proc: _Proc, cause: str) -> None:
        proc.kill()
        self._forget(proc, cause)

    def _forget(self, proc: _Proc, cause: str) -> None:
        proc.wait(10)
        self.replaced[cause] = self.replaced.get(cause, 0) + 1
        if self._active is proc:
            self._active = None
            self._replace_soon()
        self._owed = None
        # A request the dead worker was catching up for may have left a group half-built:
        # its positions say where it stopped, so nothing is lost (each batch commits).

    def _replace_soon(self) -> None:
        """Start the next worker once the current query has answered, so that the next
        query finds one open and caught up."""

        def replace() -> None:
            with self._lock:
                if self._closed or self._active is not None:
                    return
                self._replacing = True
                try:
                    self._replace(time.monotonic() + _START_S)
                    self._request(None, 0, 0, float("inf"))
                except (ProjectionError, TimeoutError, _Dead):
                    pass  # the next query tries again and says why
                finally:
                    self._replacing = False

        threading.Thread(target=replace, name="lcg-cypher-replace", daemon=True).start()

    def _died(self, proc: _Proc, timeout_ms: int) -> ProjectionError:
        code = proc.wait(10)
        self._forget(proc, "crash")
        return ProjectionError(
            f"graph query failed: it crashed the Cypher worker ({_signal_name(code)}); the "
            "service is unaffected and a new worker takes over. Kuzu fails this way on some "
            "out-of-range values (dates, intervals, timestamps) and when a query exceeds the "
            "worker's memory (LCG_CYPHER_MEMORY_MB); change the query"
        )
