"""Graph reads keep memory flat: Kuzu 0.11.3 leaks every statement it prepares (ADR 0085).

``Connection.execute(text, params)`` prepares a statement per call and Kuzu never frees it
(≈ 8.8 KB each), so ``knowledge_status`` on 30 groups grew the service by megabytes per
call. The projection runs every parameterised statement through a per-connection cache of
prepared statements; these tests drive the real reads on a real Kuzu database and measure
the process's resident memory.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from lcg.events.model import EntityAsserted, EntityRecord, EpisodeAdded, Event
from lcg.projections.graph import GraphProjection
from lcg.projections.graph import records as grec
from lcg.projections.graph._conn import PREPARED_PER_CONNECTION, execute, prepared_count
from lcg.query import graph_reads as gr

GROUPS = [f"g{i:02d}" for i in range(30)]
T0 = "2024-05-01T12:00:00.000000Z"
#: Rounds of the status-like reads (counts and digest of every group): ≈ 12 parameterised
#: statements per group, so 30 rounds are ≈ 10,800 executes, ≈ 95 MB when each leaks.
ROUNDS = 30
#: Growth allowed for the whole run: allocator noise and Python objects, far below a leak.
ALLOWED_MB = 12.0


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[GraphProjection]:
    g = GraphProjection(tmp_path / "db")
    for n, group in enumerate(GROUPS):
        events: list[Event] = [
            EntityAsserted(
                group_id=group,
                entity=EntityRecord(
                    uuid=f"{group}-e{k}", name=f"E{k}", labels=["Entity"], created_at=T0
                ),
                created=True,
            )
            for k in range(3)
        ]
        events.append(
            EpisodeAdded(group_id=group, uuid=f"{group}-p", name="p", content="c", created_at=T0)
        )
        stamped = [msgspec.structs.replace(e, seq=i) for i, e in enumerate(events)]
        g.apply(group, f"gen{n}", stamped)
    yield g
    g.close()


def _status_round(graph: GraphProjection) -> None:
    for group in GROUPS:
        graph.counts(group)
        graph.digest(group)
        graph.position(group)
        gr.get_episodes(graph, group, 5)
        grec.entities_by_name(graph, group, "E1")


def test_parameterised_reads_keep_rss_flat(graph: GraphProjection) -> None:
    for _ in range(3):  # warm: caches, Kuzu's buffer pool, Python's allocator
        _status_round(graph)
    gc.collect()
    before = _rss_mb()
    for _ in range(ROUNDS):
        _status_round(graph)
    gc.collect()
    grown = _rss_mb() - before
    assert grown < ALLOWED_MB, f"RSS grew {grown:.1f} MB over {ROUNDS} rounds of reads"


def test_reads_reuse_one_statement_per_query_text(graph: GraphProjection) -> None:
    with graph.reader() as conn:
        before = prepared_count(conn)
        for group in GROUPS:
            execute(conn, "MATCH (e:Entity) WHERE e.group_id = $g RETURN count(*)", {"g": group})
        assert prepared_count(conn) == before + 1


def test_statement_cache_is_bounded(graph: GraphProjection) -> None:
    with graph.reader() as conn:
        for k in range(PREPARED_PER_CONNECTION + 20):
            rows = execute(conn, f"RETURN $x + {k}", {"x": 1}).get_all()
            assert rows == [[1 + k]]
        assert prepared_count(conn) == PREPARED_PER_CONNECTION
