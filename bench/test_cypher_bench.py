"""The cost of ``knowledge_query_cypher``'s sandbox (ADR 0152): p50 of 1,000 simple read
queries through the old in-process path (the service's own Kuzu, under the workspace's read
lock) and through the new one (the worker process and its read model, caught up with the
service's applied positions first), in the same run, on the same graph. Both are timed at
the handler (guard included), without the socket, which both share; the socket round trip
of the new path is printed beside them. Prints a table; asserts nothing about time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import pytest

import _cypher_support as cs
import _service_fixtures as sf
from lcg.projections.graph import records as gr
from lcg.query.cypher import check_read_only

pytestmark = pytest.mark.bench

QUERIES = 1_000
SIMPLE = [
    "MATCH (e:Entity) WHERE e.name = 'Ada' RETURN e.name, e.summary",
    "MATCH (e:Entity) RETURN count(e)",
    "MATCH (a:Entity)-[:RELATES_TO]->(r:RelatesToNode_)-[:RELATES_TO]->(b:Entity) "
    "WHERE a.name = 'Ada' RETURN r.name, b.name ORDER BY b.name",
]


def _p50_ms(run: Callable[[str], object]) -> float:
    times: list[float] = []
    for k in range(QUERIES):
        query = SIMPLE[k % len(SIMPLE)]
        started = time.perf_counter()
        run(query)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def test_cypher_path_cost_before_and_after() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as conn:
        cs.seed(conn)
        ws = svc.app.ws
        sandbox = svc.app.cypher
        assert sandbox is not None
        timeout, max_rows = ws.config.cypher_timeout_ms, ws.config.cypher_max_rows

        def old(query: str) -> object:
            check_read_only(query)
            with ws.reading():
                return gr.query_cypher(ws.graph, query, timeout, max_rows)

        def new(query: str) -> object:
            check_read_only(query)
            return sandbox.query(query, timeout, max_rows)

        def socket(query: str) -> object:
            return conn.result("knowledge_query_cypher", {"query": query})

        for query in SIMPLE:
            assert old(query) == new(query), query  # the same rows, the same strings
        # Interleaved rounds, so that a busy machine weighs on both paths alike.
        rounds = [(_p50_ms(old), _p50_ms(new)) for _ in range(2)]
        before = min(r[0] for r in rounds)
        after = min(r[1] for r in rounds)
        over_socket = _p50_ms(socket)
    print(
        f"\nknowledge_query_cypher, p50 of {QUERIES:,} simple reads (ADR 0152)\n"
        f"  in-process (before)      {before:7.3f} ms\n"
        f"  sandbox worker (after)   {after:7.3f} ms   {after / before:4.2f}x\n"
        f"  after, over the socket   {over_socket:7.3f} ms"
    )
