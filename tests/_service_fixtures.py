"""Shared helpers for the service tests: a real service (in a thread or as a ``lcg serve``
subprocess), a raw one-line-per-request socket connection, and stream inspection.

The embedder is the hash test double (``LCG_EMBEDDER=hash``), named as such; everything else
is real (Kuzu, hnswlib, the socket, the event stream).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lcg.config import Config
from lcg.rpc.app import ServiceApp, build_app
from lcg.rpc.client import Client
from lcg.rpc.server import Server, serve

REPO = Path(__file__).resolve().parent.parent
#: The ``lcg`` script of the environment running the tests (a clone tested with another
#: checkout's venv has no ``.venv`` of its own).
LCG = Path(sys.executable).parent / "lcg"
HASH_ENV = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"}
#: The type of conftest's ``lcg_main`` fixture: ``lcg_main(workspace | None, *args)`` runs
#: ``lcg`` in the test's process and returns what ``run_lcg`` returns for a subprocess.
LcgMain = Callable[..., "subprocess.CompletedProcess[str]"]


def short_tmp(prefix: str = "lcg-svc-") -> Path:
    """A temporary directory with a short path (Unix socket paths are limited to 107 bytes)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


@contextmanager
def temp_workspace(prefix: str = "lcg-svc-") -> Iterator[Path]:
    """A fresh workspace directory, removed afterwards."""
    path = short_tmp(prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class InProcessService:
    """A real ``ServiceApp`` behind the real socket server, running in a thread."""

    workspace: Path
    config: Config
    app: ServiceApp
    thread: threading.Thread
    server: Server | None = None
    _clients: list[Client] = field(default_factory=list)

    @property
    def socket_path(self) -> Path:
        """The service's socket."""
        return self.config.socket_path

    def client(self) -> Client:
        """A connected client (closed when the service stops)."""
        c = Client(self.socket_path, timeout=120)
        self._clients.append(c)
        return c

    def stop(self) -> None:
        """Stop the server gracefully and wait for its thread."""
        for c in self._clients:
            c.close()
        if self.thread.is_alive():
            try:
                with Client(self.socket_path, timeout=30) as c:
                    c.call("knowledge_close", {})
            except Exception:  # noqa: BLE001 - already stopping
                if self.server is not None:
                    self.server.request_shutdown()
            self.thread.join(60)
        assert not self.thread.is_alive(), "the service thread did not stop"


@contextmanager
def in_process_service(
    workspace: Path | None = None,
    env: dict[str, str] | None = None,
    prepare: Callable[[ServiceApp], None] | None = None,
) -> Iterator[InProcessService]:
    """Run the real app on a real socket in a thread; yields once it is healthy.

    ``prepare`` is called with the app before it serves (to add methods or wire a fake
    extractor)."""
    own = workspace is None
    ws = workspace or short_tmp()
    config = Config.from_env(ws, env={**HASH_ENV, **(env or {})})
    app = build_app(config)
    if prepare is not None:
        prepare(app)
    bound = threading.Event()
    holder: dict[str, Server] = {}
    errors: list[BaseException] = []

    def started(server: Server) -> None:
        holder["server"] = server
        bound.set()

    def run() -> None:
        try:
            asyncio.run(serve(app, config.socket_path, 5000, started=started))
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            errors.append(exc)
            bound.set()

    thread = threading.Thread(target=run, name="lcg-service", daemon=True)
    thread.start()
    assert bound.wait(60), "the server never bound its socket"
    if errors:
        raise errors[0]
    svc = InProcessService(ws, config, app, thread, holder.get("server"))
    try:
        with Client(config.socket_path, timeout=60) as c:
            c.wait_ready(60)
        yield svc
    finally:
        svc.stop()
        if own:
            shutil.rmtree(ws, ignore_errors=True)


# ---- subprocess --------------------------------------------------------------------------


def serve_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a ``lcg serve`` subprocess: hash embedder, no extractor."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "ANTHROPIC_", "LIMINIS_"))
    }
    env.update(HASH_ENV)
    env.pop("LCG_TELEMETRY", None)  # subprocess telemetry goes to its stderr log
    env.update(extra or {})
    return env


def spawn_serve(
    workspace: Path, *, env: dict[str, str] | None = None, log_name: str = "serve.log"
) -> subprocess.Popen[bytes]:
    """Start ``lcg -C WS serve`` (stderr appended to ``WS/<log_name>``)."""
    log = (workspace / log_name).open("ab")
    try:
        return subprocess.Popen(
            [str(LCG), "-C", str(workspace), "serve"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=serve_env(env),
            cwd=str(workspace),
        )
    finally:
        log.close()


def spawn_lcg(
    workspace: Path, *args: str, log_name: str = "watch.log", env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start a long-running ``lcg -C WS ARGS`` (``watch``, ``follow``) with its stdout and
    stderr appended to ``WS/<log_name>``; the process and the log's path."""
    log = workspace / log_name
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [str(LCG), "-C", str(workspace), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=serve_env(env),
        )
    return proc, log


#: How long a test polls for something that is going to happen before it calls the run a
#: hang. Not a timing claim: far past what any load makes a correct run take, so only a run
#: where the thing never happens reaches it (the process under test ending fails at once).
PATIENCE_S = 600.0


def eventually(
    check: Callable[[], object],
    what: str | Callable[[], str],
    *,
    proc: subprocess.Popen[Any] | None = None,
    step: float = 0.02,
) -> float:
    """Poll ``check()`` until it holds; the seconds it took. Fails at once when ``proc`` (the
    process under test) has exited, and after ``PATIENCE_S`` as a hang, saying ``what``."""
    started = time.monotonic()
    while not check():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process exited ({proc.returncode}): {_said(what)}")
        if time.monotonic() - started > PATIENCE_S:
            raise AssertionError(f"never happened in {PATIENCE_S:g} s: {_said(what)}")
        time.sleep(step)
    return time.monotonic() - started


def _said(what: str | Callable[[], str]) -> str:
    return what if isinstance(what, str) else what()


def wait_healthy(
    sock: Path, proc: subprocess.Popen[bytes] | None = None, timeout: float = 90
) -> None:
    """Poll ``health_check`` until healthy (the socket appears first; no sleeps)."""
    import time

    deadline = time.monotonic() + timeout
    while not sock.exists():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"lcg serve exited with {proc.returncode} before binding")
        if time.monotonic() > deadline:
            raise AssertionError("lcg serve never bound its socket")
        # The bind happens in the child; give it the CPU rather than spinning.
        time.sleep(0.02)
    with Client(sock, timeout=timeout) as c:
        c.wait_ready(max(1.0, deadline - time.monotonic()), starting=True)


def stop_serve(proc: subprocess.Popen[bytes], sock: Path) -> int:
    """Stop a ``lcg serve`` with ``knowledge_close``; return its exit status."""
    if proc.poll() is None:
        try:
            with Client(sock, timeout=30) as c:
                c.call("knowledge_close", {})
        except Exception:  # noqa: BLE001 - fall back to SIGTERM
            proc.terminate()
        try:
            return proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait(10)
    return proc.returncode


def run_lcg(
    workspace: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the ``lcg`` CLI on a workspace; returns the completed process."""
    return subprocess.run(
        [str(LCG), "-C", str(workspace), *args],
        capture_output=True,
        text=True,
        env=serve_env(env),
        cwd=str(workspace),
        timeout=300,
        check=False,
    )


# ---- raw socket ---------------------------------------------------------------------------


class RawConnection:
    """One Unix-socket connection speaking newline-delimited JSON, with no client library."""

    def __init__(self, path: Path, timeout: float = 120.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self._buf = b""
        self._next_id = 0

    def send_line(self, line: bytes) -> None:
        """Send one raw line (a newline is added)."""
        self.sock.sendall(line + b"\n")

    def read_message(self) -> Any:
        """Read one JSON line."""
        while b"\n" not in self._buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the service closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def pending(self) -> bytes:
        """Whatever was received past the last complete line."""
        return self._buf

    def request(self, method: str, params: Any = None, *, rid: Any = None) -> dict[str, Any]:
        """Send one request; return its response (progress frames are skipped)."""
        self._next_id += 1
        msg = {
            "jsonrpc": "2.0",
            "id": self._next_id if rid is None else rid,
            "method": method,
            "params": {} if params is None else params,
        }
        self.send_line(json.dumps(msg).encode())
        while True:
            answer = self.read_message()
            if isinstance(answer, dict) and answer.get("type") == "progress":
                continue
            assert isinstance(answer, dict), answer
            return answer

    def result(self, method: str, params: Any = None) -> Any:
        """The ``result`` of a call that must succeed."""
        answer = self.request(method, params)
        assert "error" not in answer, (method, params, answer)
        return answer["result"]

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        """The ``error`` of a call that must fail."""
        answer = self.request(method, params)
        assert "error" in answer, (method, params, answer)
        err = answer["error"]
        assert isinstance(err, dict)
        return err

    def close(self) -> None:
        """Close the connection."""
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---- the stream ---------------------------------------------------------------------------


def stream_bytes(wal_dir: Path) -> int:
    """Total bytes of every stream segment: it grows exactly when an event is appended."""
    total = 0
    if not wal_dir.is_dir():
        return 0
    for gdir in os.scandir(wal_dir):
        if not gdir.is_dir():
            continue
        for entry in os.scandir(gdir.path):
            if entry.name.endswith(".jsonl"):
                total += entry.stat().st_size
    return total


def stream_events(wal_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Every line of every group stream, decoded as JSON, in file order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for gdir in sorted(p for p in wal_dir.iterdir() if p.is_dir()):
        lines: list[dict[str, Any]] = []
        for seg in sorted(gdir.glob("*.jsonl")):
            for raw in seg.read_text().splitlines():
                if raw.strip():
                    lines.append(json.loads(raw))
        out[gdir.name] = lines
    return out


def python() -> str:
    """The interpreter running the tests."""
    return sys.executable
