"""The Cypher worker process, forked by the sandbox's forkserver (``serve``).

It holds the read model (``Mirror``) and runs clients' Cypher on it, so that what Kuzu does
with a query — crash on an out-of-range date, allocate without bound, run past its timeout
— happens to this process and not to the service (ADR 0152). Its limits: Kuzu's buffer
pool and thread count, an address-space limit (``RLIMIT_AS``) lowered around each query to
what the process maps then plus ``memory_mb``, and the service's kill at the deadline.

It exits when its pipe closes or its parent changes (the service and its forkserver died),
so an orphan never keeps the read model's database locked.
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from lcg.errors import ProjectionError
from lcg.projections import GraphProjection
from lcg.projections import graph_records as gr
from lcg.query.sandbox.mirror import Mirror
from lcg.query.sandbox.protocol import (
    Answer,
    CatchingUp,
    Hello,
    Open,
    Opened,
    Reply,
    Request,
    Running,
    decode_request,
    encode,
)

__all__ = ["serve"]

#: Kuzu's message when another process holds the database (an orphan that is exiting).
_LOCKED = "Could not set lock"
_LIBC = ctypes.CDLL(None)
_PAGE = os.sysconf("SC_PAGE_SIZE")
#: A query that left more than this resident gives the freed part back (``malloc_trim``).
_TRIM_BYTES = 8 << 20
_M_ARENA_MAX = -8
_MEMORY_WORDS = ("bad_alloc", "allocate", "Mmap", "out of memory", "MemoryError")


def _status_kb(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class _Channel:
    """The worker's end of its pipe to the service."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def send(self, message: Reply) -> None:
        self.conn.send_bytes(encode(message))

    def recv(self) -> Open | Request | None:
        try:
            return decode_request(self.conn.recv_bytes())
        except (EOFError, OSError):
            return None


def _watch_parent() -> None:
    parent = os.getppid()
    while True:
        time.sleep(0.25)
        if os.getppid() != parent:
            os._exit(0)


def _open(spec: Open) -> GraphProjection:
    """The read model at ``spec.db_dir``; a damaged one is deleted and made again (it is
    derived from the streams)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return GraphProjection(
                Path(spec.db_dir), buffer_pool_mb=spec.buffer_pool_mb, max_threads=spec.threads
            )
        except ProjectionError as exc:
            if _LOCKED in str(exc) and time.monotonic() < deadline:
                time.sleep(0.05)  # a killed worker's file lock goes with its process
                continue
            if _LOCKED in str(exc):
                raise
            shutil.rmtree(spec.db_dir, ignore_errors=True)
            return GraphProjection(
                Path(spec.db_dir), buffer_pool_mb=spec.buffer_pool_mb, max_threads=spec.threads
            )


def _statm() -> tuple[int, int]:
    """``(address space, resident)`` in bytes, from one small read."""
    with open("/proc/self/statm", "rb") as fh:
        size, resident = fh.read().split()[:2]
    return int(size) * _PAGE, int(resident) * _PAGE


def _run(chan: _Channel, mirror: Mirror, req: Request, memory_mb: int) -> Answer:
    if mirror.pending(req.targets, req.dirty):
        # The service waits for a catch-up up to the deadline, and kills only a query.
        chan.send(CatchingUp(id=req.id))
        mirror.sync(req.targets, req.dirty)
        if req.query is not None:
            chan.send(Running(id=req.id))
    left_ms = int((req.deadline - time.monotonic()) * 1000)
    if req.query is None:
        return Answer(id=req.id, rows=[])
    if left_ms <= 0:
        return Answer(id=req.id, expired=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_statm()[0] + (memory_mb << 20), hard))
    try:
        rows = gr.query_cypher(
            mirror.graph, req.query, min(req.timeout_ms, left_ms), req.max_rows, req.max_bytes
        )
    except (ProjectionError, MemoryError) as exc:
        text = str(exc) or type(exc).__name__
        if isinstance(exc, MemoryError) or any(w in text for w in _MEMORY_WORDS):
            return Answer(
                id=req.id,
                error=(
                    f"graph query failed: it needed more memory than the Cypher worker's "
                    f"{memory_mb} MB (LCG_CYPHER_MEMORY_MB); narrow it (WHERE, LIMIT, smaller "
                    "ranges)"
                ),
            )
        return Answer(id=req.id, error=text)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return Answer(id=req.id, rows=rows)


def serve(conn: Connection) -> None:
    """Answer the service's requests on ``conn`` until it closes."""
    # Two malloc arenas: Kuzu's threads would otherwise each keep one (ADR 0085).
    _LIBC.mallopt(_M_ARENA_MAX, 2)
    threading.Thread(target=_watch_parent, name="lcg-cypher-parent", daemon=True).start()
    chan = _Channel(conn)
    chan.send(Hello(pid=os.getpid()))
    spec = chan.recv()
    if not isinstance(spec, Open):
        return
    try:
        graph = _open(spec)
    except Exception as exc:  # noqa: BLE001 - reported to the service, which says why
        chan.send(Opened(rss_kb=0, error=f"{type(exc).__name__}: {exc}"))
        return
    mirror = Mirror(graph, Path(spec.wal_dir))
    chan.send(Opened(rss_kb=_status_kb("VmRSS")))
    while True:
        req = chan.recv()
        if req is None:
            break
        if not isinstance(req, Request):
            continue
        resident = _statm()[1]
        try:
            answer = _run(chan, mirror, req, spec.memory_mb)
        except Exception as exc:  # noqa: BLE001 - a failed catch-up is the request's answer
            answer = Answer(id=req.id, error=f"the Cypher read model failed to catch up: {exc}")
        after = _statm()[1]
        if after - resident > _TRIM_BYTES:
            # What the query freed goes back to the system, so that RSS says what is held.
            _LIBC.malloc_trim(0)
            after = _statm()[1]
        answer.rss_kb = after >> 10
        chan.send(answer)
    graph.close()
