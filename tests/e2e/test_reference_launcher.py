"""The reference's launch command, ``liminis-context-graph``, as its documentation uses it.

Written from the seed's Getting Started and configuration pages (lcg-api.md §1.5, §9): the MCP
configuration ``{"command": "liminis-context-graph", "args": ["--mcp-stdio",
"--scope=read,write"], "cwd": WS}`` works with the official MCP SDK client; no arguments serve
the socket; ``--mcp-stdio --connect SOCK`` attaches; MCP-only flags without ``--mcp-stdio``
and unknown flags are usage errors (exit 2). Real subprocesses, real Kuzu; the hash embedder
is the test double.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _service_fixtures as sf
import lcg
from lcg.rpc.mcp_server import default_registry, visible_tools

LAUNCHER = Path(sys.executable).with_name("liminis-context-graph")


def _tools(*scopes: str) -> list[str]:
    return [s.name for s in visible_tools(default_registry(), scopes)]


async def _mcp_session_calls(workspace: Path, args: list[str]) -> tuple[list[str], list[str]]:
    """Tool names and the passage ids found after one ingest, through the SDK client."""
    params = StdioServerParameters(
        command=str(LAUNCHER), args=args, env=sf.serve_env(), cwd=str(workspace)
    )
    with (workspace / "mcp.log").open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = [t.name for t in (await session.list_tools()).tools]
                if "knowledge_process_chunk" in names:
                    added = await session.call_tool(
                        "knowledge_process_chunk",
                        {
                            "chunk_text": "The Saturn V rocket launched Apollo 11 in July 1969.",
                            "chunk_id": "saturn#0",
                            "source_file": "saturn.md",
                        },
                    )
                    assert not added.is_error, added.content
                # A query whose cosine under the hash test double clears the default
                # min_score of 0.5, the reference's floor (ADR 0173).
                found = await session.call_tool(
                    "knowledge_search_passages", {"query": "Saturn V rocket"}
                )
                assert not found.is_error, found.content
                assert found.structured_content is not None
                ids = [p["name"] for p in found.structured_content["passages"]]
                return names, ids


def test_getting_started_mcp_configuration_works_unchanged() -> None:
    with sf.temp_workspace("lcg-ref-") as ws:
        names, ids = asyncio.run(_mcp_session_calls(ws, ["--mcp-stdio", "--scope=read,write"]))
        assert names == _tools("read", "write")
        assert "knowledge_query_cypher" not in names and "knowledge_dump_wal" not in names
        assert ids[:1] == ["saturn#0"]
        # The write went to the workspace's stream, where `lcg` sees it.
        status = sf.run_lcg(ws, "status")
        assert status.returncode == 0, status.stderr
        assert "liminis" in status.stdout


def test_default_scope_is_every_scope_including_cypher() -> None:
    with sf.temp_workspace("lcg-ref-") as ws:
        names, _ = asyncio.run(_mcp_session_calls(ws, ["--mcp-stdio"]))
        assert names == _tools("read", "write", "cypher", "admin")
        assert "knowledge_query_cypher" in names


def test_no_arguments_serve_and_attached_mcp_forwards() -> None:
    with sf.temp_workspace("lcg-ref-") as ws:
        log = (ws / "serve.log").open("ab")
        proc = subprocess.Popen(
            [str(LAUNCHER)],
            cwd=ws,
            env=sf.serve_env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        log.close()
        sock = ws / ".lcg" / "service.sock"
        try:
            sf.wait_healthy(sock, proc)
            args = ["--mcp-stdio", "--connect", str(sock), "--scope=read"]
            names, ids = asyncio.run(_mcp_session_calls(ws, args))
            assert names == [n for n in _tools("read") if n != "knowledge_close"]
            assert ids == []
        finally:
            assert sf.stop_serve(proc, sock) == 0


@pytest.mark.parametrize(
    "args",
    [
        ["--connect", "x.sock"],
        ["--scope=read"],
        ["--no-such-flag"],
        ["--embedder-http", "http://a", "--embedder-uds", "/tmp/x"],
        ["--mcp-stdio", "--scope=bogus"],
    ],
)
def test_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [str(LAUNCHER), *args],
        cwd=tmp_path,
        env=sf.serve_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip()
    assert not (tmp_path / ".lcg").exists()


def test_version_and_help() -> None:
    for flag in ("--version", "-V"):
        done = subprocess.run([str(LAUNCHER), flag], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "liminis-context-graph" in done.stdout
        # A launcher gates on the second word: the reference release whose surface this is.
        name, version = done.stdout.split()[:2]
        assert name == "liminis-context-graph" and version == "0.13.3", done.stdout
        assert f"(lcg {lcg.__version__})" in done.stdout
    done = subprocess.run([str(LAUNCHER), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for flag in ("--mcp-stdio", "--scope", "--connect", "--allow-remote-close", "--embedder-http"):
        assert flag in done.stdout
    assert "Example:" in done.stdout
