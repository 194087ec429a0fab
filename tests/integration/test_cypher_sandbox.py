"""``knowledge_query_cypher`` cannot crash, exhaust or freeze the service (issue 23 item 3,
ADR 0152), against a real ``lcg serve`` and real Kuzu.

Each of the issue's reproductions ran inside the service before: the two out-of-range date
and timestamp values killed it (SIGSEGV), the unbounded ``range`` grew it past 14 GB, and
``levenshtein`` over two 100k-character strings ran far past its timeout while every other
client waited. Now each costs at most the worker process: the service answers throughout,
the query answers (or fails saying why: its worker crashed, ran out of memory or ran past its
timeout), and the read model still shows every write acknowledged before a query.

No answer is timed here (a bound on a loaded machine flakes; ``make bench`` times, ADR 0222):
a connection that waits longer than ``HANG_S`` for one calls the query hung.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import _cypher_support as cs
import _service_fixtures as sf
from lcg.events.layout import LCG_DIR, SOCKET_FILE

#: Long enough for the four calls made while a query runs to be answered first on a loaded
#: machine; the levenshtein of two 100k-character strings runs far longer.
TIMEOUT_MS = 3000
#: How long a connection waits for an answer before the test calls the query hung (not a
#: measurement: past their timeout these queries would run for minutes or take the service).
HANG_S = 60.0
ENV = {"LCG_CYPHER_TIMEOUT_MS": str(TIMEOUT_MS), "LCG_CYPHER_MEMORY_MB": "1024"}
COUNT = "MATCH (e:Entity) RETURN count(e)"


@pytest.fixture(scope="module")
def svc() -> Iterator[cs.Served]:
    with cs.served(ENV) as s:
        yield s


def _answer(svc: cs.Served, query: str) -> dict[str, object]:
    """The answer to ``query`` on a connection of its own; fails if none comes in ``HANG_S``."""
    with sf.RawConnection(svc.socket, timeout=HANG_S) as conn:
        try:
            return conn.request("knowledge_query_cypher", {"query": query})
        except TimeoutError:
            raise AssertionError(f"no answer in {HANG_S} s: {query}") from None


@pytest.mark.parametrize(
    "query",
    [
        "RETURN to_timestamp(9223372036854)",
        "RETURN date('2020-01-01') + interval('999999999 days')",
    ],
)
def test_a_query_that_crashes_kuzu_costs_the_worker_not_the_service(
    svc: cs.Served, query: str
) -> None:
    answer = _answer(svc, query)
    error = answer["error"]
    assert isinstance(error, dict) and error["code"] == -32000, answer
    assert "crashed the Cypher worker (SIGSEGV)" in error["message"], error
    assert svc.healthy()
    assert svc.conn.result("knowledge_query_cypher", {"query": COUNT})["rows"] == [["6"]]


def test_an_unbounded_range_fails_at_the_worker_memory_limit(svc: cs.Served) -> None:
    before = cs.rss_kb(svc.proc.pid)
    peak = [before]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], cs.rss_kb(svc.proc.pid))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        answer = _answer(svc, "UNWIND range(1, 2000000000) AS x RETURN count(x)")
    finally:
        done.set()
        watcher.join()
    error = answer["error"]
    assert isinstance(error, dict), answer
    assert "LCG_CYPHER_MEMORY_MB" in error["message"] or "crashed" in error["message"], error
    # The service itself took none of it (it grew 14 GB before).
    assert peak[0] < before + 100 * 1024, (before, peak[0])
    assert svc.healthy()


def test_a_query_past_its_timeout_is_killed_and_no_other_client_waits(svc: cs.Served) -> None:
    long_query = "WITH repeat('a', 100000) AS a, repeat('b', 100000) AS b RETURN levenshtein(a, b)"
    result: dict[str, object] = {}
    finished = threading.Event()

    def run() -> None:
        result["answer"] = _answer(svc, long_query)
        finished.set()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        time.sleep(0.3)  # the long query runs in the worker now
        # Every other method answers while it runs: status, a search, a health check, a write.
        answered = []
        for method, params in [
            ("health_check", {}),
            ("knowledge_status", {}),
            ("knowledge_search_passages", {"query": "Ada"}),
            ("knowledge_assert_entity", {"name": "Galileo"}),
        ]:
            svc.conn.result(method, params)
            answered.append(finished.is_set())
        assert answered == [False, False, False, False], "the calls waited for the query"
    finally:
        thread.join(HANG_S + 10)
    # Stopped by its timeout, not run to its end (the answer would be rows).
    error = result["answer"]["error"]  # type: ignore[index]
    assert f"ran past {TIMEOUT_MS} ms" in error["message"], error
    assert svc.healthy()
    # The write made meanwhile is seen by the next query (the new worker caught up).
    rows = svc.conn.result("knowledge_query_cypher", {"query": COUNT})["rows"]
    assert rows == [["7"]]


def test_a_write_acknowledged_before_a_query_is_seen_by_it(svc: cs.Served) -> None:
    base = int(svc.conn.result("knowledge_query_cypher", {"query": COUNT})["rows"][0][0])
    for k in range(1, 21):
        svc.conn.result("knowledge_assert_entity", {"name": f"Writer {k}", "group_id": "wr"})
        rows = svc.conn.result("knowledge_query_cypher", {"query": COUNT})["rows"]
        assert rows == [[str(base + k)]], k
    # From another connection too, the moment the write is acknowledged.
    with sf.RawConnection(svc.socket) as writer:
        writer.result("knowledge_assert_entity", {"name": "Late", "group_id": "wr"})
    names = svc.conn.result(
        "knowledge_query_cypher",
        {"query": "MATCH (e:Entity) WHERE e.group_id = 'wr' AND e.name = 'Late' RETURN e.name"},
    )["rows"]
    assert names == [["Late"]]


def test_a_purged_group_is_rebuilt_in_the_read_model(svc: cs.Served) -> None:
    by_group = "MATCH (e:Entity) WHERE e.group_id = 'gone' RETURN e.name ORDER BY e.name"
    svc.conn.result("knowledge_assert_entity", {"name": "Old", "group_id": "gone"})
    assert svc.conn.result("knowledge_query_cypher", {"query": by_group})["rows"] == [["Old"]]
    svc.conn.result("knowledge_delete_by_group", {"group_ids": ["gone"], "confirm": True})
    assert svc.conn.result("knowledge_query_cypher", {"query": by_group})["rows"] == []
    svc.conn.result("knowledge_assert_entity", {"name": "New", "group_id": "gone"})
    assert svc.conn.result("knowledge_query_cypher", {"query": by_group})["rows"] == [["New"]]


def test_rows_are_stringified_as_before(svc: cs.Served) -> None:
    query = (
        "MATCH (e:Entity) WHERE e.name = 'Ada' RETURN e.name, e.labels, e.created_at IS NULL, "
        "1.5, 2, NULL, {a: 1}, date('2024-01-02'), timestamp('2024-01-02 03:04:05')"
    )
    rows = svc.conn.result("knowledge_query_cypher", {"query": query})["rows"]
    assert rows == [
        ["Ada", '["Entity"]', "false", "1.5", "2", "", '{"a":1}', "2024-01-02",
         "2024-01-02 03:04:05"]
    ]  # fmt: skip


def test_the_read_model_reopens_after_a_restart() -> None:
    with sf.temp_workspace("lcg-cy-") as ws:
        sock = ws / LCG_DIR / SOCKET_FILE
        for expected in ("7", "8"):
            proc = sf.spawn_serve(ws, env=ENV)
            try:
                sf.wait_healthy(sock, proc)
                with sf.RawConnection(sock) as conn:
                    if expected == "7":
                        cs.seed(conn)
                    conn.result("knowledge_assert_entity", {"name": f"Run {expected}"})
                    rows = conn.result("knowledge_query_cypher", {"query": COUNT})["rows"]
                    assert rows == [[expected]]
            finally:
                assert sf.stop_serve(proc, sock) == 0
            assert (ws / LCG_DIR / "cypher" / "graph.kuzu").exists()
