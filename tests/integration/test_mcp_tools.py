"""The MCP tool surface in-process (the SDK's client over its in-memory streams).

The stdio and attached paths run as real processes in test_mcp_stdio.py; this file covers
the scope table and the tool semantics without paying a process start per case.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams

import rpc_testapp as T
from lcg.rpc.mcp_server import StandaloneBackend, build_mcp_server, parse_scopes
from lcg.rpc.server import Dispatcher

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


def ordered(names: list[str]) -> list[str]:
    order = T.TestApp().registry.names()
    return sorted(names, key=order.index)


@contextlib.asynccontextmanager
async def connected(
    app: Any, scope: str | None, hidden: tuple[str, ...] = ()
) -> AsyncIterator[ClientSession]:
    dispatcher = Dispatcher(app)
    await dispatcher.open_app()
    server = build_mcp_server(
        app.registry, parse_scopes(scope), StandaloneBackend(dispatcher), hidden=hidden
    )
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                server.run,
                server_streams[0],
                server_streams[1],
                server.create_initialization_options(),
            )
            async with ClientSession(client_streams[0], client_streams[1]) as session:
                await session.initialize()
                yield session
            tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        (None, READ + WRITE + ADMIN + CYPHER),
        ("all", READ + WRITE + ADMIN + CYPHER),
        ("read", READ),
        ("write", WRITE),
        ("admin", ADMIN),
        ("cypher", CYPHER),
        ("read,cypher", READ + CYPHER),
        ("all,cypher", READ + WRITE + ADMIN + CYPHER),
        (" Write , admin ", WRITE + ADMIN),
    ],
)
def test_tools_list_per_scope(scope: str | None, expected: list[str]) -> None:
    async def main() -> list[str]:
        async with connected(T.TestApp(), scope) as s:
            return [t.name for t in (await s.list_tools()).tools]

    names = asyncio.run(main())
    assert names == ordered(expected)
    assert "health_check" not in names


def test_hidden_tools_are_unknown() -> None:
    async def main() -> None:
        async with connected(T.TestApp(), "all", hidden=("knowledge_close",)) as s:
            names = [t.name for t in (await s.list_tools()).tools]
            assert "knowledge_close" not in names
            with pytest.raises(MCPError) as info:
                await s.call_tool("knowledge_close", {})
            assert (info.value.code, info.value.message) == (
                -32601,
                "Unknown tool: 'knowledge_close'",
            )

    asyncio.run(main())


def test_tool_semantics() -> None:
    async def main() -> None:
        app = T.TestApp()
        async with connected(app, "read,write,admin") as s:
            listing = {t.name: t for t in (await s.list_tools()).tools}
            assert listing["knowledge_find_entities"].input_schema == {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "search text"},
                    "group_ids": {"type": ["array", "string"]},
                    "num_results": {"type": "integer", "default": 10},
                },
                "required": ["query"],
            }
            assert listing["knowledge_echo"].description == "Echo the params."

            status = await s.call_tool("knowledge_status", {})
            assert status.structured_content == {
                "running": True,
                "state": "healthy",
                "reason": None,
                "is_mcp": True,
            }
            echo = await s.call_tool("knowledge_echo", {"a": [1, 2]})
            assert echo.structured_content is not None
            assert echo.structured_content["params"] == {"a": [1, 2]}
            assert echo.structured_content["request_id"] is not None
            assert '"a":[1,2]' in echo.content[0].text  # type: ignore[union-attr]
            found = await s.call_tool("knowledge_find_entities", {"query": "ada"})
            assert found.structured_content == {"nodes": [], "count": 0, "query": "ada"}
            failed = await s.call_tool("knowledge_fail", {"kind": "notfound", "message": "no x"})
            assert failed.is_error
            assert failed.structured_content == {"code": -32000, "message": "IPC error: no x"}
            bad = await s.call_tool("knowledge_bad_result", {})
            assert bad.is_error and bad.structured_content is not None
            assert bad.structured_content["code"] == -32603

            added = await s.call_tool("knowledge_add_episode", {"name": "n", "episode_body": "b"})
            assert added.structured_content == {"episode_uuid": "uuid-n", "name": "n"}

            for args in ({}, {"name": None}, {"episode_body": "b"}):
                miss = await s.call_tool("knowledge_add_episode", args)
                assert miss.is_error
                names = "name, episode_body" if "episode_body" not in args else "name"
                assert miss.structured_content == {
                    "code": -32602,
                    "message": f"Missing required argument(s) for 'knowledge_add_episode': {names}",
                }

            for name in ("knowledge_nope", "knowledge_query_cypher", "health_check"):
                with pytest.raises(MCPError) as info:
                    await s.call_tool(name, {})
                assert (info.value.code, info.value.message) == (-32601, f"Unknown tool: '{name}'")
            # A near name suggests the closest visible tool (issue 15 item 5).
            with pytest.raises(MCPError) as info:
                await s.call_tool("knowledge_find_entity", {"query": "q"})
            assert info.value.message == (
                "Unknown tool: 'knowledge_find_entity' — did you mean 'knowledge_find_entities'?"
            )

            seen: list[tuple[float, float | None, str | None]] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                seen.append((progress, total, message))

            streamed = await s.call_tool(
                "knowledge_stream", {"count": 2}, progress_callback=on_progress
            )
            assert streamed.structured_content == {"frames": 3, "progress_enabled": True}
            assert seen == [(1.0, None, None), (2.0, None, None), (3.0, None, "done")]
            # Without a progress token the handler streams nothing.
            quiet = await s.call_tool("knowledge_stream", {"count": 2})
            assert quiet.structured_content == {"frames": 3, "progress_enabled": False}

            await s.call_tool("knowledge_set_state", {"state": "degraded", "reason": "r"})
            guarded = await s.call_tool("knowledge_echo", {})
            assert guarded.is_error
            assert guarded.structured_content == {
                "code": -32001,
                "message": "DB unavailable, recovery required",
                "data": {"reason": "r"},
            }
            assert not (await s.call_tool("knowledge_status", {})).is_error

    asyncio.run(main())


@pytest.mark.parametrize("scope", ["", "bogus", "read,,write", ",", "read,root"])
def test_bad_scopes(scope: str) -> None:
    from lcg.errors import ConfigError

    with pytest.raises(ConfigError, match="scope"):
        parse_scopes(scope)


def test_cli_exits_2_on_a_bad_scope(capsys: pytest.CaptureFixture[str]) -> None:
    from lcg.cli.mcp import main

    assert main(["--scope", "read,bogus"], registry=T.TestApp().registry) == 2
    assert "unknown scope 'bogus'" in capsys.readouterr().err
