"""``lcg mcp`` over stdio with the official SDK's client, standalone and attached."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

import rpc_testapp as T
from lcg.rpc.client import Client

ENTRY = Path(T.__file__)

READ = [
    "knowledge_status",
    "knowledge_echo",
    "knowledge_find_entities",
    "knowledge_fail",
    "knowledge_bad_result",
]
WRITE = ["knowledge_add_episode", "knowledge_slow", "knowledge_block"]
ADMIN = ["knowledge_ticks", "knowledge_stream", "knowledge_close", "knowledge_set_state"]
CYPHER = ["knowledge_query_cypher"]


def _order(names: list[str]) -> list[str]:
    order = T.TestApp().registry.names()
    return sorted(names, key=order.index)


@pytest.fixture
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lcg-mcp-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.asynccontextmanager
async def session(
    workdir: Path, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(ENTRY), "mcp", *args],
        env={"LCG_TELEMETRY": "off", **(env or {})},
        cwd=str(workdir),
    )
    with (workdir / "mcp-stderr.log").open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


async def tool_names(s: ClientSession) -> list[str]:
    return [t.name for t in (await s.list_tools()).tools]


@pytest.mark.parametrize("scope", ["bogus", ""])
def test_bad_scope_is_a_startup_error(workdir: Path, scope: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ENTRY), "mcp", "--scope", scope],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=workdir,
        timeout=60,
    )
    assert done.returncode == 2
    assert b"scope" in done.stderr


def test_standalone_tools_over_stdio(workdir: Path) -> None:
    async def main() -> None:
        async with session(workdir, "--scope", "read,write,admin", "--allow-remote-close") as s:
            names = await tool_names(s)
            assert names == _order(READ + WRITE + ADMIN)
            status = await s.call_tool("knowledge_status", {})
            assert status.structured_content == {
                "running": True,
                "state": "healthy",
                "reason": None,
                "is_mcp": True,
            }
            for name in READ:
                result = await s.call_tool(name, {"query": "q"})
                assert result.structured_content is not None
            found = await s.call_tool("knowledge_find_entities", {"query": "ada"})
            assert found.structured_content == {"nodes": [], "count": 0, "query": "ada"}
            miss = await s.call_tool("knowledge_find_entities", {})
            assert miss.is_error and miss.structured_content == {
                "code": -32602,
                "message": "Missing required argument(s) for 'knowledge_find_entities': query",
            }
            with pytest.raises(MCPError) as info:
                await s.call_tool("knowledge_query_cypher", {})
            assert info.value.message == "Unknown tool: 'knowledge_query_cypher'"
            seen: list[float] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                seen.append(progress)

            await s.call_tool("knowledge_stream", {"count": 2}, progress_callback=on_progress)
            assert seen == [1.0, 2.0, 3.0]

    asyncio.run(main())
    # --allow-remote-close only means something attached: standalone warns and ignores it.
    assert "only applies with --connect" in (workdir / "mcp-stderr.log").read_text()


class ServiceProcess:
    """The test service as a real process on a socket."""

    def __init__(self, workdir: Path) -> None:
        self.sock = workdir / "s.sock"
        self.log = workdir / "service-stderr.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ServiceProcess:
        with self.log.open("ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(ENTRY), "serve", str(self.sock)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        client = Client(self.sock)
        try:
            client.wait_ready(timeout=90, starting=True)
        finally:
            client.close()
        return self

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        self.proc = None
        return rc


@pytest.fixture
def service(workdir: Path) -> Iterator[ServiceProcess]:
    svc = ServiceProcess(workdir).start()
    try:
        yield svc
    finally:
        svc.stop()


def test_attached_forwards_and_survives_restarts(workdir: Path, service: ServiceProcess) -> None:
    async def main() -> None:
        async with session(workdir, "--connect", str(service.sock)) as s:
            names = await tool_names(s)
            assert "knowledge_close" not in names
            # The default scope is `all`, which includes cypher (commit 899eb4c).
            every = _order(READ + WRITE + ADMIN + CYPHER)
            assert names == [n for n in every if n != "knowledge_close"]

            found = await s.call_tool("knowledge_find_entities", {"query": "q"})
            assert found.structured_content == {"nodes": [], "count": 0, "query": "q"}
            status = await s.call_tool("knowledge_status", {})
            assert status.structured_content is not None
            assert status.structured_content["is_mcp"] is False  # it ran behind the socket
            failed = await s.call_tool("knowledge_fail", {"kind": "invalid", "message": "bad p"})
            assert failed.structured_content == {"code": -32602, "message": "bad p"}
            seen: list[tuple[float, str | None]] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                seen.append((progress, message))

            # _progress_token is injected for streaming tools; frames become notifications.
            streamed = await s.call_tool(
                "knowledge_stream", {"count": 1}, progress_callback=on_progress
            )
            assert streamed.structured_content == {"frames": 2, "progress_enabled": True}
            assert seen == [(1.0, None), (2.0, "done")]
            missing = await s.call_tool("knowledge_find_entities", {})
            assert missing.is_error and missing.structured_content["code"] == -32602  # type: ignore[index]

            # The service restarts between calls: the next call re-dials and succeeds.
            assert service.stop() == 0
            service.start()
            again = await s.call_tool("knowledge_echo", {"n": 1})
            assert again.structured_content is not None
            assert again.structured_content["params"] == {"n": 1}

            # The service is down: a tool error, not a dead MCP server; then it comes back.
            service.stop()
            down = await s.call_tool("knowledge_echo", {})
            assert down.is_error and down.structured_content is not None
            assert down.structured_content["code"] == -32000
            assert "is not running" in down.structured_content["message"]
            service.start()
            back = await s.call_tool("knowledge_echo", {"n": 2})
            assert back.structured_content is not None and back.structured_content["params"] == {
                "n": 2
            }

    asyncio.run(main())


def test_attached_remote_close(workdir: Path, service: ServiceProcess) -> None:
    async def main() -> None:
        async with session(workdir, "--connect", str(service.sock), "--allow-remote-close") as s:
            assert "knowledge_close" in await tool_names(s)
            closed = await s.call_tool("knowledge_close", {})
            assert closed.structured_content == {"status": "closed"}

    asyncio.run(main())
    assert service.proc is not None
    assert service.proc.wait(timeout=30) == 0


def test_attached_idle_timeout_rearmed_by_progress(workdir: Path, service: ServiceProcess) -> None:
    async def main() -> None:
        env = {"LCG_ATTACHED_CALL_TIMEOUT_MS": "400"}
        async with session(workdir, "--connect", str(service.sock), env=env) as s:
            # 5 frames 0.15 s apart: 0.75 s in all, but never 0.4 s without a line.
            ticks = await s.call_tool("knowledge_ticks", {"count": 5, "interval": 0.15})
            assert ticks.structured_content == {"ticks": 5}
            # One frame, then silence: the idle timeout fires.
            slow = await s.call_tool("knowledge_slow", {"seconds": 1})
            assert slow.is_error and slow.structured_content is not None
            assert (
                "within 400 ms (LCG_ATTACHED_CALL_TIMEOUT_MS)" in slow.structured_content["message"]
            )
            # The broken connection was dropped; the next call dials afresh.
            ok = await s.call_tool("knowledge_echo", {})
            assert not ok.is_error

    asyncio.run(main())


def _raw_mcp(workdir: Path) -> subprocess.Popen[bytes]:
    """``lcg mcp`` standalone (test App) driven by a raw client on its pipes."""
    proc = subprocess.Popen(
        [sys.executable, str(ENTRY), "mcp", "--scope", "admin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=workdir,
        env={
            **os.environ,
            "LCG_TELEMETRY": "off",
            "RPC_TESTAPP_CLOSED_MARKER": str(workdir / "closed"),
        },
    )
    return proc


def _send(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes], rid: int) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        msg = json.loads(proc.stdout.readline())
        if msg.get("id") == rid:
            return dict(msg)


def _initialize(proc: subprocess.Popen[bytes]) -> None:
    _send(
        proc,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        },
    )
    assert _answer(proc, 1)["result"]["serverInfo"]["name"] == "liminis-context-graph"
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})


def _reap(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.stdout.close()


def test_standalone_close_ends_the_process(workdir: Path) -> None:
    """A raw MCP client (newline-delimited JSON-RPC on the pipes): close answers, then exits."""
    proc = _raw_mcp(workdir)
    try:
        _initialize(proc)
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "knowledge_close", "arguments": {}},
            },
        )
        assert _answer(proc, 2)["result"]["structuredContent"] == {"status": "closed"}
        assert proc.wait(timeout=30) == 0
        assert (workdir / "closed").read_text() == "closed"
    finally:
        _reap(proc)


def test_standalone_sigterm_closes_the_app(workdir: Path) -> None:
    proc = _raw_mcp(workdir)
    try:
        _initialize(proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert (workdir / "closed").read_text() == "closed"
    finally:
        _reap(proc)
