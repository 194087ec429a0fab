"""The server as a real process: SIGTERM drains an in-flight call, then the process exits."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rpc_testapp as T
from lcg.rpc.client import Client

ENTRY = Path(T.__file__)


@pytest.fixture
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lcg-rpcp-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def start(workdir: Path, *extra: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    sock = workdir / "s.sock"
    log = workdir / "stderr.jsonl"
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [sys.executable, str(ENTRY), "serve", str(sock), *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    client = Client(sock)
    try:
        client.wait_ready(timeout=90, starting=True)
    finally:
        client.close()
    return proc, sock, log


def telemetry(log: Path) -> list[dict[str, Any]]:
    out = []
    for line in log.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def slow_call(sock: Path, seconds: float) -> tuple[socket.socket, Any]:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(30)
    conn.connect(str(sock))
    req = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "knowledge_slow",
        "params": {"seconds": seconds, "_progress_token": True},
    }
    conn.sendall(json.dumps(req).encode() + b"\n")
    reader = conn.makefile("rb")
    assert json.loads(reader.readline()) == {"type": "progress", "message": "started"}
    return conn, reader


def test_sigterm_drains_the_in_flight_call(workdir: Path) -> None:
    proc, sock, log = start(workdir)
    conn, reader = slow_call(sock, 0.3)
    try:
        proc.send_signal(signal.SIGTERM)
        answer = json.loads(reader.readline())
        assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"slept": 0.3}}
        assert reader.readline() == b""
    finally:
        reader.close()
        conn.close()
    assert proc.wait(timeout=30) == 0
    assert not sock.exists()
    states = [r for r in telemetry(log) if r.get("type") == "service_state"]
    assert [r["state"] for r in states][-2:] == ["shutting_down", "stopped"]
    assert states[-1]["detail"] == {"drained": 1, "cancelled": 0}
    assert any(
        r.get("type") == "ipc_call" and r["method"] == "knowledge_slow" for r in telemetry(log)
    )


def test_sigterm_cancels_past_the_shutdown_timeout(workdir: Path) -> None:
    proc, sock, log = start(workdir, "--shutdown-timeout-ms", "100")
    conn, reader = slow_call(sock, 60)
    try:
        proc.send_signal(signal.SIGTERM)
        assert reader.readline() == b""  # cancelled: the connection closes unanswered
    finally:
        reader.close()
        conn.close()
    assert proc.wait(timeout=30) == 0
    assert not sock.exists()
    stopped = [r for r in telemetry(log) if r.get("state") == "stopped"]
    assert stopped[-1]["detail"] == {"drained": 0, "cancelled": 1}


def test_sigint_also_stops_and_socket_is_0600(workdir: Path) -> None:
    proc, sock, _ = start(workdir)
    assert oct(os.stat(sock).st_mode & 0o777) == "0o600"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    assert not sock.exists()
