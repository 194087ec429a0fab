"""``knowledge_query_cypher`` is read-only by construction (issue 11 item 1), over the real
socket and over MCP (``lcg mcp --connect SOCK --scope cypher``), against real Kuzu.

Each reproduction from the issue is refused, the graph keeps every row, the file outside
the workspace that ``COPY … TO`` targeted is byte-for-byte unchanged (no ``.json`` or
``.parquet`` beside it), and the rows of the "shadow" file ``LOAD FROM`` pointed at never
come back. Behind the guard, the query runs in a read-only transaction on its own
connection: a write that reached it anyway is refused by Kuzu.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _service_fixtures as sf
from lcg.errors import ProjectionError

COUNT = "MATCH (e:Entity) RETURN count(e)"
SECRET = "root:$6$not-a-real-hash:19000:0:99999:7:::"


def issue_repros(shadow: Path, victim: Path) -> list[str]:
    """The issue's reproductions, pointed at ``shadow`` (LOAD FROM) and ``victim`` (COPY TO)."""
    return [
        f'// \'\nLOAD FROM "{shadow}" (file_format="csv", header=false, delim=":") '
        "RETURN * LIMIT 2 // '",
        "/*'*/ MATCH (e:Entity) DETACH DELETE e //'",
        f"// '\nCOPY (RETURN 'overwritten' AS x) TO \"{victim}\" // '",
        "CALL show_tables() RETURN *",
        "/*'*/ CALL show_tables() RETURN * //'",
        "MATCH (e:Entity) SET e.name = 'overwritten'",
        "/*'*/ MATCH (e:Entity) SET e.name = 'overwritten' //'",
        # Kuzu does not close a comment at '**/': the DELETE is code to it
        "/* **/ MATCH (e) RETURN '*/ MATCH (e:Entity) DETACH DELETE e //'",
    ]


class Env:
    """The shared service, a connection to it, and files outside its workspace."""

    def __init__(self, svc: sf.InProcessService, conn: sf.RawConnection, outside: Path) -> None:
        self.svc = svc
        self.conn = conn
        self.shadow = outside / "shadow"
        self.victim = outside / "victim.csv"
        self.shadow.write_text(SECRET + "\ndaemon:*:19000:0:99999:7:::\n")
        self.victim.write_text("id,value\n1,original\n")
        self.victim_bytes = self.victim.read_bytes()

    def repros(self) -> list[str]:
        """The issue's reproductions, pointed at this test's files."""
        return issue_repros(self.shadow, self.victim)

    def assert_untouched(self, entities: list[list[str]]) -> None:
        """The graph and the files outside the workspace are as they were."""
        assert self.conn.result("knowledge_query_cypher", {"query": COUNT})["rows"] == entities
        names = self.conn.result(
            "knowledge_query_cypher", {"query": "MATCH (e:Entity) RETURN e.name ORDER BY e.name"}
        )["rows"]
        assert names == [["Kepler"], ["Tycho"]]
        assert self.victim.read_bytes() == self.victim_bytes
        siblings = sorted(p.name for p in self.victim.parent.iterdir())
        assert siblings == ["shadow", "victim.csv"], siblings


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    from lcg import telemetry

    telemetry.set_sink(None, enabled=False)
    outside = Path(tempfile.mkdtemp(prefix="lcg-outside-", dir="/tmp"))
    try:
        with sf.in_process_service() as s, sf.RawConnection(s.socket_path) as conn:
            conn.result("knowledge_assert_entity", {"name": "Kepler", "summary": "astronomer"})
            conn.result("knowledge_assert_entity", {"name": "Tycho", "summary": "astronomer"})
            yield Env(s, conn, outside)
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_issue_reproductions_are_refused_over_the_socket(env: Env) -> None:
    before = env.conn.result("knowledge_query_cypher", {"query": COUNT})["rows"]
    assert before == [["2"]]
    for query in env.repros():
        error = env.conn.error("knowledge_query_cypher", {"query": query})
        assert error["code"] == -32000, (query, error)
        assert "read-only" in error["message"], (query, error)
        assert "root:" not in error["message"]
        env.assert_untouched(before)


def test_verify_still_agrees_after_the_attempts(env: Env) -> None:
    for query in env.repros():
        env.conn.error("knowledge_query_cypher", {"query": query})
    report = env.conn.result("knowledge_verify", {})
    assert report["ok"] is True, report


def test_read_queries_still_answer(env: Env) -> None:
    rows = env.conn.result(
        "knowledge_query_cypher",
        {"query": "MATCH (e:Entity) WHERE e.summary <> 'DETACH DELETE' RETURN e.name "
                  "ORDER BY e.name // a comment with a ' quote"},
    )["rows"]  # fmt: skip
    assert rows == [["Kepler"], ["Tycho"]]


def test_read_only_transaction_refuses_a_write_the_guard_missed(env: Env) -> None:
    # Straight to the client connection, as if the guard had let it through.
    graph = env.svc.app.ws.graph
    with pytest.raises(ProjectionError, match="read-only transaction"):
        graph.query_read_only("MATCH (e:Entity) DETACH DELETE e")
    with pytest.raises(ProjectionError, match="read-only transaction"):
        graph.query_read_only("MATCH (e:Entity) SET e.name = 'x'")
    assert graph.query_read_only(COUNT) == [[2]]
    env.assert_untouched([["2"]])


async def _mcp_calls(cwd: Path, args: list[str], queries: list[str]) -> list[tuple[bool, str]]:
    params = StdioServerParameters(
        command=str(sf.LCG),
        args=["mcp", *args, "--scope", "cypher"],
        env=sf.serve_env(),
        cwd=str(cwd),
    )
    out: list[tuple[bool, str]] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        assert names == ["knowledge_query_cypher"]
        for q in queries:
            result = await session.call_tool("knowledge_query_cypher", {"query": q})
            text = " ".join(getattr(c, "text", "") for c in result.content)
            out.append((bool(result.is_error), text))
    return out


def test_issue_reproductions_are_refused_over_attached_mcp(env: Env) -> None:
    queries = env.repros()
    sock = env.svc.socket_path
    answers = asyncio.run(_mcp_calls(sock.parent, ["--connect", str(sock)], [*queries, COUNT]))
    for q, (is_error, text) in zip(queries, answers[:-1], strict=True):
        assert is_error, (q, text)
        assert "read-only" in text, (q, text)
        assert "root:" not in text
    assert answers[-1] == (False, answers[-1][1]) and '"2"' in answers[-1][1]
    env.assert_untouched([["2"]])


def test_queries_that_crash_kuzu_s_parser_are_refused_and_the_service_lives(env: Env) -> None:
    # Kuzu 0.11.3 segfaults on both (the whole service with it) before any timeout applies.
    for query in ("RETURN " + "(" * 5000 + "1" + ")" * 5000, "RETURN 1" + "+1" * 10_000):
        error = env.conn.error("knowledge_query_cypher", {"query": query})
        assert error["code"] == -32000 and "simplify it" in error["message"]
    env.assert_untouched([["2"]])


# 10^10 rows: minutes of work on any machine, so only the timeout ends it.
HEAVY = (
    "UNWIND range(1, 100000) AS a UNWIND range(1, 100000) AS b "
    "WITH a, b WHERE (a * b) % 7 = 3 RETURN count(*)"
)


def test_a_long_query_is_stopped_at_the_timeout_and_a_big_result_refused() -> None:
    limits = {"LCG_CYPHER_TIMEOUT_MS": "300", "LCG_CYPHER_MAX_ROWS": "5"}
    # The connection's timeout is the hang signal: only the Cypher timeout ends HEAVY.
    with (
        sf.in_process_service(env=limits) as s,
        sf.RawConnection(s.socket_path, timeout=60) as conn,
    ):
        error = conn.error("knowledge_query_cypher", {"query": "UNWIND range(1, 6) AS x RETURN x"})
        assert "6 rows" in error["message"] and "LCG_CYPHER_MAX_ROWS" in error["message"]
        rows = conn.result("knowledge_query_cypher", {"query": "UNWIND range(1, 5) AS x RETURN x"})
        assert rows["rows"] == [["1"], ["2"], ["3"], ["4"], ["5"]]
        error = conn.error("knowledge_query_cypher", {"query": HEAVY})
        assert error["code"] == -32000, error
        assert "300 ms" in error["message"] and "LCG_CYPHER_TIMEOUT_MS" in error["message"]
        # The connection kept for clients' Cypher is usable again.
        assert conn.result("knowledge_query_cypher", {"query": "RETURN 1"})["rows"] == [["1"]]


def test_issue_reproductions_are_refused_over_standalone_mcp() -> None:
    # `lcg mcp --scope cypher` opening the workspace itself (no service in front of it).
    outside = Path(tempfile.mkdtemp(prefix="lcg-outside-", dir="/tmp"))
    try:
        with sf.temp_workspace("lcg-mcp-") as ws:
            with sf.in_process_service(ws) as s, sf.RawConnection(s.socket_path) as conn:
                conn.result("knowledge_assert_entity", {"name": "Kepler"})
                conn.result("knowledge_assert_entity", {"name": "Tycho"})
            shadow, victim = outside / "shadow", outside / "victim.csv"
            shadow.write_text(SECRET + "\n")
            victim.write_text("id,value\n1,original\n")
            queries = issue_repros(shadow, victim)
            answers = asyncio.run(_mcp_calls(ws, [], [*queries, COUNT]))
            for q, (is_error, text) in zip(queries, answers[:-1], strict=True):
                assert is_error and "read-only" in text, (q, text)
                assert "root:" not in text
            assert answers[-1][0] is False and '"2"' in answers[-1][1], answers[-1]
            assert victim.read_text() == "id,value\n1,original\n"
            assert sorted(p.name for p in outside.iterdir()) == ["shadow", "victim.csv"]
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_a_query_waits_for_the_client_connection_at_most_one_timeout(env: Env) -> None:
    graph = env.svc.app.ws.graph
    errors: list[str] = []

    def long_one() -> None:
        with pytest.raises(ProjectionError) as info:
            graph.query_read_only(HEAVY, timeout_ms=3000)
        errors.append(str(info.value))

    first = threading.Thread(target=long_one)
    first.start()
    time.sleep(0.5)  # the long query holds the client connection now
    with pytest.raises(ProjectionError, match="held the client connection for 200 ms"):
        graph.query_read_only("RETURN 1", timeout_ms=200)
    first.join(60)
    assert errors and "ran past 3000 ms" in errors[0]
    assert graph.query_read_only("RETURN 1") == [[1]]
