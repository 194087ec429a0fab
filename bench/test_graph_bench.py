"""Graph projection apply throughput: batched and bulk vs one event per transaction; edges.

Run with ``make bench`` (``pytest bench --benchmark-enable -s``). Prints a table; asserts
nothing about time. The corpus is synthetic and seeded: 5,000 episodes, each added then
extracted into 2 new entities and 6 new edges (10,000 entities, 30,000 edges, 10,000
events), with every fifth extraction restating and invalidating an older edge so the path
that addresses existing relationships is exercised too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kuzu
import msgspec
import pytest

from lcg.events.model import (
    EdgeInvalidation,
    EdgeRecord,
    EdgeRestated,
    EntityRecord,
    EpisodeAdded,
    EpisodeExtracted,
    Event,
)
from lcg.projections._graph_schema import create_schema
from lcg.projections.graph import GraphProjection

pytestmark = pytest.mark.bench

GROUP = "bench"
EPISODES = 5_000
#: Events applied one per transaction for each baseline (the full stream would take minutes).
BASELINE_EVENTS = 200
EDGE_ROWS = 400
#: Entities in the edge-statement comparison: the struct-key form costs O(entities²).
EDGE_ENTITIES = 2_000


def synthetic_stream(episodes: int = EPISODES, seed: int = 7) -> list[Event]:
    """A seeded stream of ``2 * episodes`` events of realistic shape."""
    rng = random.Random(seed)
    events: list[Event] = []
    entities: list[str] = []
    edges: list[str] = []
    for i in range(episodes):
        ts = f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00.000000Z"
        ep = f"ep-{i:06d}"
        events.append(
            EpisodeAdded(
                group_id=GROUP,
                uuid=ep,
                name=f"chunk-{i}",
                source_description=f"docs/file-{i // 10}.md:{i % 10}",
                content=f"episode {i} " + "lorem ipsum dolor sit amet " * 8,
                created_at=ts,
                valid_at=ts,
                content_hash=f"{i:064x}",
            )
        )
        new = [f"ent-{2 * i:06d}", f"ent-{2 * i + 1:06d}"]
        created = [
            EntityRecord(
                uuid=u, name=f"Name {u}", labels=["Entity"], summary=f"about {u}", created_at=ts
            )
            for u in new
        ]
        entities.extend(new)
        pool = entities[-200:]
        new_edges = []
        for j in range(6):
            src = new[j % 2]
            dst = rng.choice(pool)
            uuid = f"edge-{6 * i + j:07d}"
            new_edges.append(
                EdgeRecord(
                    uuid=uuid,
                    name=f"{src} → {dst}",
                    source_uuid=src,
                    target_uuid=dst,
                    fact=f"fact {uuid} relating {src} and {dst}",
                    relation_type="RELATES",
                    valid_at=ts,
                    created_at=ts,
                )
            )
            edges.append(uuid)
        restated: list[EdgeRestated] = []
        invalidated: list[EdgeInvalidation] = []
        if i % 5 == 4 and len(edges) > 12:
            restated = [EdgeRestated(uuid=rng.choice(edges[:-6]), episode_uuid=ep)]
            invalidated = [EdgeInvalidation(uuid=rng.choice(edges[:-6]), invalid_at=ts)]
        events.append(
            EpisodeExtracted(
                group_id=GROUP,
                episode_uuid=ep,
                entities_created=created,
                edges_created=new_edges,
                edges_restated=restated,
                edges_invalidated=invalidated,
                mentions=list(dict.fromkeys([*new, *(e.target_uuid for e in new_edges)])),
            )
        )
    return [msgspec.structs.replace(e, seq=n) for n, e in enumerate(events)]


def _apply_all(db: Path, events: list[Event], batch: int) -> tuple[float, str]:
    graph = GraphProjection(db)
    start = time.perf_counter()
    for i in range(0, len(events), batch):
        graph.apply(GROUP, "gen", events[i : i + batch])
    elapsed = time.perf_counter() - start
    digest = graph.digest(GROUP) if len(events) <= 2 * EPISODES else ""
    graph.close()
    return elapsed, digest


def _edge_load(db: Path, statement: str, rows: list[dict[str, Any]], entities: int) -> float:
    database = kuzu.Database(str(db))
    conn = kuzu.Connection(database)
    create_schema(conn)
    conn.execute(
        "COPY Entity FROM (UNWIND $rows AS r RETURN r, 'n', 'g', ['Entity'], "
        "CAST('2024-01-01T00:00:00Z' AS TIMESTAMP), '', '{}')",
        {"rows": [f"ent-{i:06d}" for i in range(entities)]},
    )
    start = time.perf_counter()
    conn.execute("BEGIN TRANSACTION")
    conn.execute(statement, {"rows": rows})
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    result = conn.execute("MATCH ()-[e:RELATES_TO]->() RETURN count(e)")
    assert isinstance(result, kuzu.QueryResult)
    assert result.get_all() == [[len(rows)]]
    conn.close()
    database.close()
    return elapsed


_EDGE_STATEMENTS: dict[str, str] = {
    "UNWIND…MATCH (struct keys)…CREATE": (
        "UNWIND $rows AS r MATCH (a:Entity {uuid: r.s}), (b:Entity {uuid: r.t}) "
        "CREATE (a)-[:RELATES_TO {uuid: r.u, fact: r.f, group_id: 'g'}]->(b)"
    ),
    "UNWIND…staged MATCH a, then b…CREATE (used)": (
        "UNWIND $rows AS r WITH r.s AS s, r MATCH (a:Entity {uuid: s}) "
        "WITH a, r, r.t AS t MATCH (b:Entity {uuid: t}) "
        "CREATE (a)-[:RELATES_TO {uuid: r.u, fact: r.f, group_id: 'g'}]->(b)"
    ),
    "COPY RELATES_TO FROM (UNWIND…)": (
        "COPY RELATES_TO FROM (UNWIND $rows AS r RETURN r.s, r.t, r.u, '' AS name, "
        "'' AS rt, r.f, NULL AS v, NULL AS i, NULL AS x, ['x'] AS eps, '{}' AS attrs, "
        "'g' AS g, NULL AS c)"
    ),
}


def test_graph_apply_throughput(tmp_path: Path) -> None:
    """Batched apply (64, 256) vs one event per transaction, and edge-load statements."""
    events = synthetic_stream()
    rows: list[tuple[str, str, str]] = []

    baseline, _ = _apply_all(tmp_path / "one", events[:BASELINE_EVENTS], 1)
    base_rate = BASELINE_EVENTS / baseline
    rows.append(
        (
            "apply, 1 event/transaction, empty graph",
            f"first {BASELINE_EVENTS:,} events",
            f"{base_rate:,.0f} ev/s",
            "1.0×",
        )
    )
    # The same baseline where the stream ends (the graph full): each transaction costs more.
    late = GraphProjection(tmp_path / "late")
    head = events[:-BASELINE_EVENTS]
    late.load_group(GROUP, "gen", (head[i : i + 256] for i in range(0, len(head), 256)))
    start = time.perf_counter()
    for event in events[-BASELINE_EVENTS:]:
        late.apply(GROUP, "gen", [event])
    late_rate = BASELINE_EVENTS / (time.perf_counter() - start)
    late.close()
    rows.append(
        (
            "apply, 1 event/transaction, full graph",
            f"last {BASELINE_EVENTS:,} events",
            f"{late_rate:,.0f} ev/s",
            f"{late_rate / base_rate:.1f}×",
        )
    )
    digests = []
    for batch in (64, 256):
        elapsed, digest = _apply_all(tmp_path / f"b{batch}", events, batch)
        digests.append(digest)
        rate = len(events) / elapsed
        rows.append(
            (
                f"apply, batches of {batch}",
                f"{len(events):,} events",
                f"{rate:,.0f} ev/s ({elapsed:.1f} s)",
                f"{rate / base_rate:.1f}×",
            )
        )
    graph = GraphProjection(tmp_path / "bulk")
    start = time.perf_counter()
    graph.load_group(GROUP, "gen", (events[i : i + 256] for i in range(0, len(events), 256)))
    elapsed = time.perf_counter() - start
    digests.append(graph.digest(GROUP))
    graph.close()
    rate = len(events) / elapsed
    rows.append(
        (
            "load_group (fold, one COPY per table)",
            f"{len(events):,} events",
            f"{rate:,.0f} ev/s ({elapsed:.1f} s)",
            f"{rate / base_rate:.1f}×",
        )
    )
    # Same stream, different batch sizes or the bulk path: the same graph.
    assert digests[0] == digests[1] == digests[2]

    rng = random.Random(3)
    edge_rows = [
        {
            "s": f"ent-{rng.randrange(EDGE_ENTITIES):06d}",
            "t": f"ent-{rng.randrange(EDGE_ENTITIES):06d}",
            "u": f"e-{i}",
            "f": f"fact {i}",
        }
        for i in range(EDGE_ROWS)
    ]
    times: dict[str, float] = {}
    for n, (label, statement) in enumerate(_EDGE_STATEMENTS.items()):
        times[label] = _edge_load(tmp_path / f"edges{n}", statement, edge_rows, EDGE_ENTITIES)
    slowest = max(times.values())
    for label, elapsed in times.items():
        rows.append(
            (
                f"edges: {label}",
                f"{EDGE_ROWS} rels, {EDGE_ENTITIES:,} entities",
                f"{EDGE_ROWS / elapsed:,.0f} rels/s",
                f"{slowest / elapsed:.1f}×",
            )
        )
    _print_table(rows)


def _print_table(rows: list[tuple[str, str, str, str]]) -> None:
    header = ("what", "size", "rate", "ratio")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    line: Callable[[tuple[str, ...]], str] = lambda r: "  ".join(  # noqa: E731
        c.ljust(w) for c, w in zip(r, widths, strict=True)
    )
    print(
        "\n\ngraph projection bench (ratio: vs 1 event/transaction on an empty graph, "
        "the cheapest case for the baseline; edges: vs slowest)"
    )
    print(line(header))
    print(line(tuple("-" * w for w in widths)))
    for r in rows:
        print(line(r))
