"""What one client may hold of the service (issue 11 item 8, ADR 0071), with real sockets.

An oversize request line is answered -32600 naming the limit and its setting, having been
read only up to the limit, and the service stays healthy; at the connection limit the
longest-idle connection is given up for a newcomer, and with every connection in flight a
newcomer waits in the backlog (ADR 0153); a request line must end within the read deadline
and an idle connection is closed past the idle deadline; 400 simultaneous connects queue
(backlog) instead of failing with EAGAIN; a client that pipelines requests and never reads
the answers cannot make the service read (and buffer) without bound; the memory long lines
took is returned once their connections close (RSS of a real ``serve`` subprocess).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rpc_testapp as T
from lcg.config import Config
from lcg.rpc.server import Limits

HEALTH = b'{"jsonrpc":"2.0","id":1,"method":"health_check"}\n'


@contextlib.contextmanager
def running(limits: Limits | None = None) -> Iterator[tuple[Any, Path]]:
    """The test app on a real socket in a thread, with ``limits``."""
    with T.short_tmpdir() as d:
        path = d / "s.sock"
        srv = T.ThreadedServer(T.TestApp(), path, limits=limits).start()
        try:
            yield srv, path
        finally:
            srv.stop()


def _connect(path: Path, timeout: float = 60) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(path))
    except OSError:
        s.close()
        raise
    return s


def _read_line(s: socket.socket) -> bytes:
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def _closed(s: socket.socket) -> bool:
    """The service hung up (closing with unread input resets the connection)."""
    try:
        return s.recv(65536) == b""
    except ConnectionResetError:
        return True


def _healthy(path: Path) -> bool:
    with contextlib.closing(_connect(path)) as s:
        s.sendall(HEALTH)
        return json.loads(_read_line(s))["result"]["healthy"] is True


def test_defaults_come_from_config_and_env() -> None:
    assert Limits() == Limits.from_config(Config.from_env(Path("/tmp"), env={}))
    assert Limits().max_request_bytes == 8 * 1024 * 1024
    assert (Limits().idle_timeout_ms, Limits().read_timeout_ms) == (60_000, 30_000)
    env = {
        "LCG_RPC_MAX_REQUEST_BYTES": "65536",
        "LCG_RPC_MAX_CONNECTIONS": "3",
        "LCG_RPC_MAX_BATCH": "7",
        "LCG_RPC_IDLE_TIMEOUT_MS": "0",
        "LCG_RPC_READ_TIMEOUT_MS": "250",
    }
    limits = Limits.from_config(Config.from_env(Path("/tmp"), env=env))
    assert limits == Limits(
        max_request_bytes=65536,
        max_connections=3,
        max_batch=7,
        idle_timeout_ms=0,
        read_timeout_ms=250,
    )
    assert (limits.idle_timeout_s, limits.read_timeout_s) == (None, 0.25)


def test_oversize_line_is_refused_without_reading_it_all() -> None:
    limit = 256 * 1024
    with running(Limits(max_request_bytes=limit)) as (_srv, path):
        s = _connect(path)
        sent = [0]

        def send() -> None:
            # 64 MiB with no newline; the service must answer long before it is all sent.
            chunk = b"x" * 65536
            with contextlib.suppress(OSError):
                for _ in range(1024):
                    s.sendall(chunk)
                    sent[0] += len(chunk)

        t = threading.Thread(target=send, daemon=True)
        t.start()
        reply = json.loads(_read_line(s))
        assert reply["id"] is None
        assert reply["error"]["code"] == -32600
        message = reply["error"]["message"]
        assert str(limit) in message and "LCG_RPC_MAX_REQUEST_BYTES" in message
        assert _closed(s)
        t.join(30)
        assert sent[0] < 16 * 1024 * 1024, sent[0]
        s.close()
        assert _healthy(path)


def test_line_within_the_limit_is_served() -> None:
    with running(Limits(max_request_bytes=256 * 1024)) as (_srv, path):
        payload = "y" * 200_000
        line = json.dumps(
            {"jsonrpc": "2.0", "id": 5, "method": "knowledge_echo", "params": {"text": payload}}
        )
        with contextlib.closing(_connect(path)) as s:
            s.sendall(line.encode() + b"\n")
            reply = json.loads(_read_line(s))
        assert reply["result"]["params"]["text"] == payload


def test_at_the_connection_limit_the_longest_idle_connection_is_given_up() -> None:
    with running(Limits(max_connections=4)) as (srv, path):
        held = [_connect(path) for _ in range(4)]
        for s in held:
            s.sendall(HEALTH)
            assert b'"healthy":true' in _read_line(s)
        held[0].sendall(HEALTH)  # the oldest is used again: now held[1] has been idle longest
        assert b'"healthy":true' in _read_line(held[0])
        extra = _connect(path)
        extra.sendall(HEALTH)
        assert b'"healthy":true' in _read_line(extra)
        assert _closed(held[1])  # given up, with nothing said: it had no request begun
        for s in (held[0], held[2], held[3], extra):
            s.sendall(HEALTH)
            assert b'"healthy":true' in _read_line(s)
        assert srv.server.admission.given_up == 1
        for s in [*held, extra]:
            s.close()


def test_with_every_connection_in_flight_a_newcomer_waits_in_the_backlog() -> None:
    with running(Limits(max_connections=1, idle_timeout_ms=200)) as (srv, path):
        busy = _connect(path)
        busy.sendall(b'{"jsonrpc":"2.0","id":1,"method":"knowledge_block","params":{}}\n')
        deadline = time.monotonic() + 60  # the hang signal, not a measurement
        while not any(c.phase == "handling" for c in srv.server.admission):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        waiting = _connect(path)  # queued by the kernel, not accepted
        waiting.sendall(HEALTH)
        # Well past the idle deadline and the eviction grace: the call in flight is kept,
        # and the newcomer is neither answered nor refused.
        readable, _, _ = select.select([waiting], [], [], 2.0)
        assert not readable
        assert len(srv.server.admission) == 1
        srv.call_soon(srv.app.release.set)
        assert json.loads(_read_line(busy)) == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"released": True},
        }
        assert b'"healthy":true' in _read_line(waiting)
        busy.close()
        waiting.close()


def test_a_connection_given_up_mid_line_is_told_why() -> None:
    with running(Limits(max_connections=1)) as (_srv, path):
        slow = _connect(path)
        slow.sendall(b'{"jsonrpc":"2.0","id":1,')  # a request line begun, never finished
        newcomer = _connect(path)
        newcomer.sendall(HEALTH)
        assert b'"healthy":true' in _read_line(newcomer)
        reply = json.loads(_read_line(slow))
        assert reply["id"] is None and reply["error"]["code"] == -32000
        assert "LCG_RPC_MAX_CONNECTIONS" in reply["error"]["message"]
        assert _closed(slow)
        slow.close()
        newcomer.close()


def test_a_request_line_must_end_within_the_read_deadline() -> None:
    with running(Limits(read_timeout_ms=300, idle_timeout_ms=60_000)) as (_srv, path):
        with contextlib.closing(_connect(path)) as s:
            # A line in two parts inside the deadline is served...
            s.sendall(HEALTH[:10])
            time.sleep(0.05)
            s.sendall(HEALTH[10:])
            assert b'"healthy":true' in _read_line(s)
            # ...one that does not end within it is answered -32600 and the connection closed.
            s.sendall(HEALTH[:10])
            reply = json.loads(_read_line(s))
            assert reply["id"] is None and reply["error"]["code"] == -32600
            assert "300 ms" in reply["error"]["message"]
            assert "LCG_RPC_READ_TIMEOUT_MS" in reply["error"]["message"]
            assert _closed(s)
        assert _healthy(path)


def test_an_idle_connection_is_closed_at_its_deadline_unless_used() -> None:
    # The deadline is 7 gaps between calls long: a loaded machine that stalls the test for a
    # second still leaves the used connection within it.
    with running(Limits(idle_timeout_ms=1400)) as (_srv, path):
        idle, used = _connect(path), _connect(path)
        for _ in range(8):  # 1.6 s of calls 0.2 s apart: longer than the deadline, never idle
            used.sendall(HEALTH)
            assert b'"healthy":true' in _read_line(used)
            time.sleep(0.2)
        assert _closed(idle)
        used.sendall(HEALTH)
        assert b'"healthy":true' in _read_line(used)
        idle.close()
        used.close()


def test_a_client_that_does_not_take_its_answer_is_cut_off_at_the_idle_deadline() -> None:
    with running(Limits(idle_timeout_ms=300)) as (srv, path):
        s = _connect(path)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        text = "a" * (6 * 1024 * 1024)  # an answer far larger than the socket buffers
        line = {"jsonrpc": "2.0", "id": 1, "method": "knowledge_echo", "params": {"text": text}}
        s.sendall(json.dumps(line).encode() + b"\n")
        deadline = time.monotonic() + 60  # the hang signal, not a measurement
        while not any(c.phase == "writing" for c in srv.server.admission):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        while len(srv.server.admission):  # it never reads: its slot is taken back
            assert time.monotonic() < deadline, [c.phase for c in srv.server.admission]
            time.sleep(0.05)
        assert _healthy(path)
        s.close()


def test_the_client_library_redials_a_connection_the_service_closed() -> None:
    from lcg.rpc.client import AsyncClient, Client

    with running(Limits(max_connections=1, idle_timeout_ms=300)) as (_srv, path):
        with Client(path, timeout=10) as first, Client(path, timeout=10) as second:
            assert first.call("health_check", {})["healthy"] is True
            # The second is admitted by giving the first up; each call re-dials in turn.
            for client in (second, first, second):
                assert client.call("health_check", {})["healthy"] is True
            time.sleep(0.6)  # past the idle deadline: closed by the service
            assert first.call("health_check", {})["healthy"] is True

        async def use_async() -> None:
            async with AsyncClient(path, timeout=10) as client:
                assert (await client.call("health_check", {}))["healthy"] is True
                await asyncio.sleep(0.6)
                assert (await client.call("health_check", {}))["healthy"] is True

        asyncio.run(use_async())


def test_batch_limit() -> None:
    with running(Limits(max_batch=3)) as (_srv, path):
        batch = [{"jsonrpc": "2.0", "id": i, "method": "health_check"} for i in range(4)]
        with contextlib.closing(_connect(path)) as s:
            s.sendall(json.dumps(batch).encode() + b"\n")
            reply = json.loads(_read_line(s))
            assert (
                reply["error"]["code"] == -32600
                and "LCG_RPC_MAX_BATCH" in reply["error"]["message"]
            )
            s.sendall(json.dumps(batch[:3]).encode() + b"\n")
            assert len(json.loads(_read_line(s))) == 3


def test_400_simultaneous_connects_all_queue() -> None:
    with running(Limits(max_connections=512)) as (srv, path):
        stalled = threading.Event()

        def stall() -> None:
            stalled.set()
            time.sleep(1.5)  # the loop accepts nothing meanwhile: connects must queue

        srv.call_soon(stall)
        assert stalled.wait(10)
        socks: list[socket.socket] = []
        refused = 0
        try:
            for _ in range(400):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.setblocking(False)
                try:
                    s.connect(str(path))
                except BlockingIOError:
                    refused += 1  # EAGAIN: the listen backlog is full
                    s.close()
                    continue
                socks.append(s)
            assert refused == 0, f"{refused} of 400 connects failed with EAGAIN"
            for s in socks:
                s.setblocking(True)
                s.settimeout(30)
                s.sendall(HEALTH)
            answered = sum(b'"healthy":true' in _read_line(s) for s in socks)
            assert answered == 400
        finally:
            for s in socks:
                s.close()


def test_pipelining_client_that_never_reads_is_not_buffered_without_bound() -> None:
    with running() as (_srv, path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(path))
        s.setblocking(False)
        block = HEALTH * (65536 // len(HEALTH))
        budget = 64 * 1024 * 1024
        sent = 0
        try:
            while sent < budget:
                try:
                    sent += s.send(block)
                except BlockingIOError:
                    # The service stopped reading: wait a little for it to read on.
                    _, writable, _ = select.select([], [s], [], 1.5)
                    if not writable:
                        break
            # What the service took in is what it buffers (read-ahead, queued answers and
            # the kernel's socket buffers); with asyncio's 64 MB line limit it took it all.
            assert sent < 8 * 1024 * 1024, f"the service read {sent:,} bytes ahead"
            assert _healthy(path)  # and it still serves everyone else
        finally:
            s.close()


# ---- memory released on close (a real `serve` subprocess, its RSS) ----------------------


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.fixture
def serve_proc() -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    with T.short_tmpdir() as d:
        path = d / "s.sock"
        proc = subprocess.Popen(
            [sys.executable, T.__file__, "serve", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            # The socket file appears at bind(), a moment before listen(): until then a
            # connect is refused (seen once under load), so wait for an answer, not the file.
            while True:
                assert proc.poll() is None and time.monotonic() < deadline
                try:
                    if _healthy(path):
                        break
                except (FileNotFoundError, ConnectionRefusedError):
                    pass
                time.sleep(0.05)
            yield proc, path
        finally:
            proc.terminate()
            proc.wait(30)


def test_long_lines_hold_bounded_memory_released_on_close(
    serve_proc: tuple[subprocess.Popen[bytes], Path],
) -> None:
    proc, path = serve_proc
    before = _rss_kib(proc.pid)

    # Lines under the 8 MiB limit are held until their newline (or the client's close)...
    clients = [_connect(path, timeout=60) for _ in range(8)]
    for s in clients:
        s.sendall(b"z" * (7 * 1024 * 1024))
    deadline = time.monotonic() + 30
    while _rss_kib(proc.pid) - before < 40 * 1024:  # the service really holds them
        assert time.monotonic() < deadline, (before, _rss_kib(proc.pid))
        time.sleep(0.05)
    held = _rss_kib(proc.pid)
    for s in clients:
        s.shutdown(socket.SHUT_WR)  # the line ends unterminated: answered -32700, closed
        with contextlib.suppress(OSError):
            _read_line(s)
        s.close()
    assert _healthy(path)
    # ...and given back once their connections close.
    deadline = time.monotonic() + 60  # the hang signal, not a measurement
    while (after := _rss_kib(proc.pid)) - before > 24 * 1024:
        assert time.monotonic() < deadline, (
            f"RSS {before} KiB before, {held} KiB holding 8 x 7 MiB, {after} KiB after closing"
        )
        time.sleep(0.1)

    # 8 clients sending 60 MiB without a newline (the 64 MB limit took 480 MB):
    # each is cut off at the limit, so the service never holds more than 8 x 8 MiB.
    base = _rss_kib(proc.pid)
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_kib(proc.pid))
            time.sleep(0.01)

    def flood() -> None:
        with contextlib.closing(_connect(path, timeout=60)) as s, contextlib.suppress(OSError):
            for _ in range(60):
                s.sendall(b"w" * (1024 * 1024))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    floods = [threading.Thread(target=flood, daemon=True) for _ in range(8)]
    for t in floods:
        t.start()
    for t in floods:
        t.join(120)
    done.set()
    sampler.join(10)
    assert peak[0] - base < 100 * 1024, f"RSS {base} KiB → peak {peak[0]} KiB"
    assert _healthy(path)


def test_eagain_is_what_a_full_backlog_gives() -> None:
    # Guards the 400-connect test's reading of EAGAIN: a listener with a tiny backlog that
    # never accepts refuses the connects beyond it with EAGAIN (not some other error).
    with T.short_tmpdir() as d:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(d / "l.sock"))
        listener.listen(2)
        errors: list[int] = []
        socks = []
        for _ in range(10):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(str(d / "l.sock"))
                socks.append(s)
            except OSError as exc:
                errors.append(exc.errno or 0)
                s.close()
        for s in socks:
            s.close()
        listener.close()
        assert errors and set(errors) == {errno.EAGAIN}
        assert os.path.exists(d / "l.sock")
