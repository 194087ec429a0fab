"""Parameter checking on the wire (issue 15 item 5, issue 11 item 10): a real service on a real
socket, the same service's registry over MCP, and ``lcg methods NAME`` as a subprocess.

Parameters are checked once, in the dispatcher both transports share, so the socket and MCP
answer a malformed call with the same -32602 text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

import _service_fixtures as sf
from lcg.config import Config
from lcg.rpc.app import build_app
from lcg.rpc.mcp_server import StandaloneBackend, build_mcp_server, parse_scopes
from lcg.rpc.schema import MAX_SAFE_INT, json_schema
from lcg.rpc.server import Dispatcher


@pytest.fixture(scope="module")
def conn() -> Iterator[sf.RawConnection]:
    from lcg import telemetry

    telemetry.set_sink(None, enabled=False)
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        c.result("knowledge_assert_entity", {"name": "Neil Armstrong", "group_id": "g2"})
        yield c


def _error(conn: sf.RawConnection, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = conn.request(method, params)
    assert "error" in answer, answer
    return dict(answer["error"])


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("knowledge_search_passages", {"query": "x", "nmu_results": 3},
         "unknown parameter 'nmu_results' — did you mean 'num_results'?"),
        ("knowledge_get_episodes", {"group_ids": ["g2"]},
         "unknown parameter 'group_ids' — did you mean 'group_id'?"),
        ("knowledge_find_entities", {}, "query is required and must be a string"),
        ("knowledge_search_passages", {"query": "x", "min_score": "abc"},
         'min_score must be a finite number (got "abc")'),
        ("knowledge_list_entities", {"num_results": 2**63},
         f"num_results must be an integer of at least 1 (at most {MAX_SAFE_INT}) "
         "(got 9223372036854775808)"),
        ("knowledge_list_relationships", {"num_results": 1e308},
         "num_results must be an integer"),
        ("knowledge_find_entities", {"query": "x", "num_results": 2**63},
         "num_results must be an integer"),
        ("knowledge_get_entity_neighbors", {"entity_uuid": "u", "num_results": -(2**64)},
         "num_results must be an integer"),
        ("knowledge_rebuild_from_wal", {"to_seq": 2**63}, "to_seq must be a non-negative integer"),
    ],
)  # fmt: skip
def test_bad_parameters_are_invalid_params(
    conn: sf.RawConnection, method: str, params: dict[str, Any], message: str
) -> None:
    err = _error(conn, method, params)
    assert err["code"] == -32602, err
    assert err["message"].startswith(message), err


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("knowledge_find_entities", {"query": "x", "num_results": -5},
         "num_results must be an integer from 1 to 500 (got -5)"),
        ("knowledge_find_relationships", {"query": "x", "num_results": 0},
         "num_results must be an integer from 1 to 500 (got 0)"),
        ("knowledge_search_passages", {"query": "x", "num_results": -5},
         "num_results must be an integer from 1 to 100 (got -5)"),
        ("knowledge_get_episodes", {"last_n": -5},
         "last_n must be an integer from 1 to 100000 (got -5)"),
        ("knowledge_get_entity_neighbors", {"entity_uuid": "u", "num_results": 0},
         "num_results must be an integer from 1 to 100000 (got 0)"),
        ("knowledge_get_entities_by_source", {"source": "s", "num_results": -1.0},
         "num_results must be an integer from 1 to 100000 (got -1.0)"),
        ("knowledge_list_entities", {"num_results": -5}, "num_results must be > 0"),
        ("knowledge_list_relationships", {"num_results": -5}, "num_results must be > 0"),
        ("knowledge_rebuild_from_wal", {"group_id": "g2", "from_seq": -5},
         "from_seq must be a non-negative integer"),
        ("knowledge_extract_pending", {"group_id": "g2", "limit": -5},
         "limit must be an integer of at least 1"),
    ],
)  # fmt: skip
def test_a_count_below_its_range_is_refused_naming_the_range(
    conn: sf.RawConnection, method: str, params: dict[str, Any], message: str
) -> None:
    # Issue 27: ``num_results: -5`` was accepted (read as 1). Over the real socket.
    err = _error(conn, method, params)
    assert err["code"] == -32602, err
    assert err["message"].startswith(message), err
    given = list(params.values())[-1]  # the count is the last parameter of each case
    assert f"(got {given})" in err["message"], err


def test_a_count_above_its_documented_maximum_is_read_as_the_maximum(
    conn: sf.RawConnection,
) -> None:
    found = conn.result("knowledge_find_entities", {"query": "Neil", "num_results": 501})
    assert found["count"] == 1
    assert "passages" in conn.result(
        "knowledge_search_passages", {"query": "Neil", "num_results": 1000, "min_score": 0}
    )


def test_the_largest_accepted_integers_are_served(conn: sf.RawConnection) -> None:
    # The bound keeps every accepted value a valid LIMIT: no database error at the edge.
    for method in ("knowledge_list_entities", "knowledge_list_relationships"):
        assert "count" in conn.result(method, {"num_results": MAX_SAFE_INT})
    found = conn.result("knowledge_find_entities", {"query": "Neil", "num_results": MAX_SAFE_INT})
    assert found["count"] == 1
    assert conn.result("knowledge_get_episodes", {"last_n": MAX_SAFE_INT})["count"] >= 0


def test_get_episodes_with_group_ids_no_longer_reads_the_default_group(
    conn: sf.RawConnection,
) -> None:
    assert conn.result("knowledge_get_episodes", {"group_id": "g2"})["count"] == 0
    assert _error(conn, "knowledge_get_episodes", {"group_ids": "g2"})["code"] == -32602


def test_method_not_found_suggests_the_closest(conn: sf.RawConnection) -> None:
    err = _error(conn, "knowledge_find_entity", {"query": "x"})
    assert err == {
        "code": -32601,
        "message": "IPC error: Method not found: knowledge_find_entity — "
        "did you mean 'knowledge_find_entities'?",
    }
    err = _error(conn, "search_passages", {})
    assert err["message"].endswith("did you mean 'knowledge_search_passages'?"), err
    err = _error(conn, "knowledge_zzz_qqq", {})
    assert err["message"] == "IPC error: Method not found: knowledge_zzz_qqq"


def test_protocol_fields_and_null_pass(conn: sf.RawConnection) -> None:
    found = conn.result(
        "knowledge_find_entities",
        {"query": "Neil", "_progress_token": True, "_meta": {"x": 1}, "num_results": None},
    )
    assert found["count"] == 1
    assert conn.result("knowledge_status", {"_meta": {}})["queryable"] is True


# ---- MCP: the same registry, the same checks -----------------------------------------------


@contextlib.asynccontextmanager
async def _mcp(workspace: Path) -> AsyncIterator[ClientSession]:
    app = build_app(Config.from_env(workspace, env=sf.HASH_ENV))
    dispatcher = Dispatcher(app)
    await dispatcher.open_app()
    server = build_mcp_server(app.registry, parse_scopes("all"), StandaloneBackend(dispatcher))
    try:
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
    finally:
        await app.close()


def test_mcp_tools_use_the_struct_schema_and_checks() -> None:
    workspace = sf.short_tmp()

    async def main() -> None:
        async with _mcp(workspace) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            from lcg.rpc.methods_read import SearchPassagesParams

            assert tools["knowledge_search_passages"].input_schema == json_schema(
                SearchPassagesParams
            )
            bad = await s.call_tool("knowledge_search_passages", {"query": "x", "nmu_results": 3})
            assert bad.is_error
            assert bad.structured_content == {
                "code": -32602,
                "message": "unknown parameter 'nmu_results' — did you mean 'num_results'?",
            }
            huge = await s.call_tool("knowledge_list_entities", {"num_results": 2**63})
            assert huge.is_error and huge.structured_content is not None
            assert huge.structured_content["code"] == -32602
            ok = await s.call_tool("knowledge_find_entities", {"query": "x", "_meta": {"a": 1}})
            assert not ok.is_error, ok

    asyncio.run(main())


# ---- lcg methods NAME ----------------------------------------------------------------------


def test_lcg_methods_name_prints_parameters_and_an_example(lcg_main: sf.LcgMain) -> None:
    done = lcg_main(None, "methods", "knowledge_search_passages", cwd=sf.short_tmp())
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "knowledge_search_passages (scope read)"
    header = next(i for i, line in enumerate(lines) if line.startswith("PARAMETER"))
    assert lines[header].split() == ["PARAMETER", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION"]
    rows = {line.split()[0]: line for line in lines[header + 1 : header + 5]}
    assert set(rows) == {"query", "num_results", "min_score", "group_ids"}
    assert rows["num_results"].split()[:4] == ["num_results", "integer", "no", "10"]
    assert rows["query"].split()[:3] == ["query", "string", "yes"]
    example = json.loads(lines[-1])
    assert example == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "knowledge_search_passages",
        "params": {"query": "Moon landing"},
    }
    # The prefix may be left out; --json carries the same parameters and the input schema.
    done = lcg_main(None, "methods", "rebuild_from_wal", "--json", cwd=sf.short_tmp())
    assert done.returncode == 0, done.stderr
    detail = json.loads(done.stdout)
    assert detail["name"] == "knowledge_rebuild_from_wal" and detail["streaming"] is True
    assert [p["name"] for p in detail["parameters"]][:5] == [
        "group_id", "from_seq", "to_seq", "dry_run", "force_clear",
    ]  # fmt: skip
    assert detail["parameters"][1] == {
        "name": "from_seq",
        "type": "integer",
        "required": False,
        "default": 0,
        "description": "first seq (inclusive)",
    }
    assert detail["input_schema"]["properties"]["from_seq"]["minimum"] == 0


def test_lcg_methods_unknown_name_suggests(lcg_main: sf.LcgMain) -> None:
    done = lcg_main(None, "methods", "knowledge_find_entity", cwd=sf.short_tmp())
    assert done.returncode == 2
    assert "did you mean 'knowledge_find_entities'?" in done.stderr
    assert done.stdout == ""
