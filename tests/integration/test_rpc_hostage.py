"""Connections cannot be held hostage (issue 23 item 4, ADR 0153), against a real ``lcg serve``.

Before: 256 idle connections (or 260 sending a byte a second) locked every new client out, and
of 400 clients connecting at once 144 were answered an error and closed. Now a connection idle
past ``LCG_RPC_IDLE_TIMEOUT_MS`` is closed, a request line begun must end within
``LCG_RPC_READ_TIMEOUT_MS``, at the connection limit the longest-idle connection with no
request in flight is given up to admit a new one, and connections beyond the limit wait in the
listen backlog instead of being accepted and closed. The deadlines are set short here (or long,
where a test must show eviction rather than a deadline at work).

The slow call of the in-flight test is held at the embedder boundary: the service embeds
through a small OpenAI-compatible server started here (a FAKE embedder serving HashEmbedder
vectors), which keeps any request whose text contains ``HOLD`` until the test releases it.
"""

from __future__ import annotations

import contextlib
import json
import resource
import select
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _service_fixtures import spawn_serve, stop_serve, temp_workspace, wait_healthy
from lcg.extract.embedders import HashEmbedder

HEALTH = b'{"jsonrpc":"2.0","id":1,"method":"health_check"}\n'
#: How long a new client's socket waits for an answer before the test calls it locked out: the
#: hang signal, not a measurement (a client locked out waits for the 600 s idle deadline).
HANG_S = 60.0


def _raise_nofile(need: int) -> None:
    """Let this process (and the service it starts, which inherits it) open ``need`` files."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        top = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (top, hard))


@contextlib.contextmanager
def service(env: dict[str, str]) -> Iterator[Path]:
    """A real ``lcg serve`` on a fresh workspace; yields its socket once healthy."""
    _raise_nofile(4096)
    with temp_workspace("lcg-hst-") as ws:
        proc = spawn_serve(ws, env=env)
        sock = ws / ".lcg" / "service.sock"
        try:
            wait_healthy(sock, proc)
            yield sock
        finally:
            stop_serve(proc, sock)


def _connect(path: Path, timeout: float = 30.0) -> socket.socket:
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


def _request(method: str, rid: int, **params: Any) -> bytes:
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return json.dumps(body).encode() + b"\n"


def _new_client_answer(path: Path) -> dict[str, Any]:
    """A new client's ``health_check`` answer; fails if it is refused or never answered."""
    with contextlib.closing(_connect(path, timeout=HANG_S)) as s:
        with contextlib.suppress(BrokenPipeError):
            s.sendall(HEALTH)  # (a service that refused and hung up breaks the pipe)
        try:
            line = _read_line(s)
        except ConnectionResetError:
            line = b""
        except TimeoutError:
            raise AssertionError(f"the new client was not answered in {HANG_S} s") from None
    assert line, "the service closed the new client's connection"
    answer = json.loads(line)
    assert isinstance(answer, dict)
    return answer


def _close_all(socks: list[socket.socket]) -> None:
    for s in socks:
        s.close()


def test_300_idle_connections_do_not_lock_a_new_client_out() -> None:
    # A long idle deadline: what admits the new client is the eviction of idle connections.
    with service({"LCG_RPC_IDLE_TIMEOUT_MS": "600000"}) as path:
        idle = [_connect(path) for _ in range(300)]
        try:
            answer = _new_client_answer(path)
            assert answer.get("result", {}).get("healthy") is True, answer
        finally:
            _close_all(idle)


def test_300_trickling_connections_do_not_lock_a_new_client_out() -> None:
    env = {"LCG_RPC_IDLE_TIMEOUT_MS": "600000", "LCG_RPC_READ_TIMEOUT_MS": "3000"}
    with service(env) as path:
        trickling = [_connect(path) for _ in range(300)]
        stop = threading.Event()
        cut: list[bytes] = []

        def trickle() -> None:
            # A byte a second on every connection, never a newline: a request begun, never ended.
            payload = b'{"jsonrpc":"2.0","id":1,"method":"health_check","params":{"pad":"'
            payload += b"x" * 10_000
            for i in range(len(payload)):
                for s in trickling:
                    with contextlib.suppress(OSError):
                        s.send(payload[i : i + 1])
                if stop.wait(1.0):
                    return

        pump = threading.Thread(target=trickle, daemon=True)
        pump.start()
        try:
            time.sleep(1.5)  # let every connection begin its line
            answer = _new_client_answer(path)
            assert answer.get("result", {}).get("healthy") is True, answer
            # The oldest trickler was cut off by the read deadline or given up for a newcomer;
            # either way the service said why, or hung up, and holds it no longer.
            first = trickling[0]
            first.settimeout(HANG_S)
            with contextlib.suppress(ConnectionResetError):
                cut.append(_read_line(first))
            assert cut and (cut[0] == b"" or b"LCG_RPC_" in cut[0]), cut
        finally:
            stop.set()
            pump.join(10)
            _close_all(trickling)


def test_400_clients_connecting_at_once_are_all_answered() -> None:
    with service({"LCG_RPC_IDLE_TIMEOUT_MS": "600000"}) as path:
        n = 400
        start = threading.Barrier(n)
        everyone_answered = threading.Event()
        answers: list[bytes] = []
        failures: list[str] = []
        lock = threading.Lock()

        def client() -> None:
            try:
                start.wait(60)
                # Each keeps its connection until all are answered: none frees its slot early.
                with contextlib.closing(_connect(path, timeout=60)) as s:
                    s.sendall(HEALTH)
                    line = _read_line(s)
                    with lock:
                        answers.append(line)
                        if len(answers) == n:
                            everyone_answered.set()
                    everyone_answered.wait(60)
            except (OSError, threading.BrokenBarrierError) as exc:
                with lock:
                    failures.append(repr(exc))

        threads = [threading.Thread(target=client, daemon=True) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        healthy = sum(b'"healthy":true' in a for a in answers)
        refused = [a for a in answers if b'"healthy":true' not in a]
        assert not failures, failures[:5]
        assert healthy == n, f"{healthy} of {n} answered; others got {refused[:3]}"


# ---- a request in flight is never given up ---------------------------------------------


class _HoldingEmbedder:
    """A fake OpenAI-compatible embeddings server; texts with ``HOLD`` wait for ``release``."""

    def __init__(self) -> None:
        self.hasher = HashEmbedder(32)
        self.held = threading.Semaphore(0)
        self.release = threading.Event()
        state = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                # One text comes as a string, several as a list (the reference's body).
                raw = body["input"]
                texts: list[str] = [raw] if isinstance(raw, str) else raw
                if any("HOLD" in t for t in texts):
                    state.held.release()
                    state.release.wait(60)
                vectors = state.hasher.embed(texts).tolist()
                data = [
                    {"object": "embedding", "embedding": v, "index": i}
                    for i, v in enumerate(vectors)
                ]
                out = json.dumps({"object": "list", "data": data, "model": "hold-v0"}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL the service embeds through."""
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def __enter__(self) -> _HoldingEmbedder:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.http.shutdown()
        self.http.server_close()
        self.thread.join(10)


def _no_answer_for(s: socket.socket, seconds: float) -> bool:
    readable, _, _ = select.select([s], [], [], seconds)
    return not readable


def test_a_connection_with_a_request_in_flight_is_not_given_up() -> None:
    with _HoldingEmbedder() as fake:
        env = {
            "LCG_EMBEDDER": "http",
            "LCG_EMBEDDING_URL": fake.url,
            "LCG_RPC_MAX_CONNECTIONS": "2",
            # Far shorter than the held calls: the idle deadline must not touch them either.
            "LCG_RPC_IDLE_TIMEOUT_MS": "1000",
        }
        with service(env) as path:
            first = _connect(path, timeout=60)
            first.sendall(_request("knowledge_find_entities", 7, query="HOLD the first call"))
            assert fake.held.acquire(timeout=30), "the held call never reached the embedder"
            idle = _connect(path)
            idle.sendall(HEALTH)
            assert b'"healthy":true' in _read_line(idle)
            # At the limit (2) a newcomer is admitted by giving up the idle connection, not
            # the older one whose call is in flight...
            answer = _new_client_answer(path)
            assert answer.get("result", {}).get("healthy") is True, answer
            idle.settimeout(HANG_S)
            assert _read_line(idle) == b""
            # ...and with every slot in flight, a newcomer waits in the backlog, neither
            # answered nor refused, however long past the idle deadline the calls run.
            second = _connect(path, timeout=60)
            second.sendall(_request("knowledge_find_entities", 8, query="HOLD the second call"))
            assert fake.held.acquire(timeout=30), "the second held call never reached it"
            waiting = _connect(path)
            waiting.sendall(HEALTH)
            assert _no_answer_for(waiting, 4.0), _read_line(waiting)
            fake.release.set()
            for s, rid in ((first, 7), (second, 8)):
                reply = json.loads(_read_line(s))
                assert reply["id"] == rid and "result" in reply, reply
            waiting.settimeout(HANG_S)
            assert b'"healthy":true' in _read_line(waiting)
            for s in (first, idle, second, waiting):
                s.close()


def test_an_idle_connection_is_closed_past_its_deadline_and_a_used_one_lives() -> None:
    with service({"LCG_RPC_IDLE_TIMEOUT_MS": "1500"}) as path:
        idle = _connect(path)
        used = _connect(path)
        # Calls spaced under the deadline keep a connection open for longer than it.
        for _ in range(4):
            used.sendall(HEALTH)
            assert b'"healthy":true' in _read_line(used)
            time.sleep(0.5)
        idle.settimeout(HANG_S)
        assert _read_line(idle) == b""  # closed, with nothing said: no request was begun
        used.sendall(HEALTH)
        assert b'"healthy":true' in _read_line(used)
        idle.close()
        used.close()
