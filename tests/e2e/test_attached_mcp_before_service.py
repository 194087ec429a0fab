"""Attached MCP started before its service (issue 19 item 5).

Written from the reference's MCP pages (lcg-api.md §1.5, §9): ``--mcp-stdio --connect SOCK``
forwards every ``tools/call`` to a running service and re-dials broken connections; its tool
list is the static method table (ADR 0143). Editors launch MCP servers at login, often before
the service: ``initialize`` and ``tools/list`` must answer while the socket is absent or
silent, each call must fail with an error naming the service and how to start it, and a later
call must reach the service once it is up. Real subprocesses through the official MCP SDK
client, as tests/e2e/test_reference_launcher.py; the hash embedder is the test double.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _service_fixtures as sf
from lcg.rpc.mcp_server import default_registry, visible_tools

LAUNCHER = Path(sys.executable).with_name("liminis-context-graph")


def _attached_tools() -> list[str]:
    every = ("read", "write", "cypher", "admin")
    return [s.name for s in visible_tools(default_registry(), every, hidden={"knowledge_close"})]


def _error_text(result: object) -> str:
    return json.dumps(getattr(result, "structured_content", None)) + str(
        getattr(result, "content", "")
    )


@pytest.mark.parametrize("command", ["launcher", "lcg"])
def test_answers_before_the_service_and_reconnects_once_it_is_up(command: str) -> None:
    with sf.temp_workspace("lcg-early-") as ws:
        sock = ws / ".lcg" / "service.sock"
        if command == "launcher":
            argv = [str(LAUNCHER), "--mcp-stdio", "--connect", str(sock)]
        else:
            argv = [str(sf.LCG), "mcp", "--connect", str(sock)]

        async def session() -> None:
            params = StdioServerParameters(
                command=argv[0], args=argv[1:], env=sf.serve_env(), cwd=str(ws)
            )
            with (ws / "mcp.log").open("a") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        names = [t.name for t in (await s.list_tools()).tools]
                        assert names == _attached_tools()
                        early = await s.call_tool("knowledge_status", {})
                        assert early.is_error
                        text = _error_text(early)
                        assert str(sock) in text and "not running" in text, text
                        assert "lcg serve" in text, text
                        # The service starts later; the same session reaches it.
                        proc = sf.spawn_serve(ws)
                        try:
                            sf.wait_healthy(sock, proc)
                            late = await s.call_tool("knowledge_status", {})
                            assert not late.is_error, late.content
                            assert late.structured_content is not None
                            assert late.structured_content["queryable"] is True
                        finally:
                            assert sf.stop_serve(proc, sock) == 0

        asyncio.run(session())
        log = (ws / "mcp.log").read_text()
        # A clear warning at start, on stderr.
        assert "not running" in log and str(sock) in log, log


def test_a_silent_socket_lists_tools_and_fails_each_call_with_a_reason() -> None:
    with sf.temp_workspace("lcg-early-") as ws:
        path = ws / "silent.sock"
        # Bound and listening, never accepting nor answering: a hung service.
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(8)
        try:

            async def session() -> None:
                params = StdioServerParameters(
                    command=str(LAUNCHER),
                    args=["--mcp-stdio", "--connect", str(path)],
                    env=sf.serve_env({"LCG_ATTACHED_CALL_TIMEOUT_MS": "500"}),
                    cwd=str(ws),
                )
                with (ws / "mcp.log").open("a") as errlog:
                    async with stdio_client(params, errlog=errlog) as (read, write):
                        async with ClientSession(read, write) as s:
                            await s.initialize()
                            names = [t.name for t in (await s.list_tools()).tools]
                            assert names == _attached_tools()
                            for _ in range(2):
                                result = await s.call_tool("knowledge_status", {})
                                assert result.is_error
                                text = _error_text(result)
                                assert str(path) in text and "no answer" in text, text

            asyncio.run(session())
        finally:
            listener.close()
