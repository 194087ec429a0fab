"""Graph projection apply throughput: batched and bulk vs one event per transaction; edges.

Run with ``make bench`` (``pytest bench --benchmark-enable -s``). Prints a table; asserts
nothing about time. The corpus is synthetic and seeded: 5,000 episodes, each added then
extracted into 2 new entities and 6 new edges (10,000 entities, 30,000 edges, 10,000
events), with every fifth extraction restating and invalidating an older edge so the path
that addresses existing relationships is exercised too.

``test_graph_live_latency_and_replay_rate`` runs the same generator over 50,000 episodes
(100k events): batch replay at the start (empty graph) and at the end (the rest loaded with
``load_group``), single-event ``apply`` latency per event type on the full graph, and the
cost of finding an edge by scanning for its uuid against its ``RelatesToNode_`` primary key.
It prints the numbers recorded with schema version 1 (before ADR 0086) next to them; the
before/after tables and a same-window A/B are in docs/benchmarks.md ("Graph schema").
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import kuzu
import msgspec
import pytest

from lcg.events.model import (
    EdgeInvalidation,
    EdgeRecord,
    EdgeRestated,
    EntityAsserted,
    EntityRecord,
    EpisodeAdded,
    EpisodeExtracted,
    Event,
    RelationshipAsserted,
)
from lcg.projections.graph import GraphProjection
from lcg.projections.graph._schema import create_schema

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


def _edge_load(
    db: Path, statements: tuple[str, ...], rows: list[dict[str, Any]], entities: int
) -> float:
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
    for statement in statements:
        conn.execute(statement, {"rows": rows})
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    result = conn.execute(
        "MATCH (:Entity)-[:RELATES_TO]->(e:RelatesToNode_)-[:RELATES_TO]->(:Entity) RETURN count(e)"
    )
    assert isinstance(result, kuzu.QueryResult)
    assert result.get_all() == [[len(rows)]]
    conn.close()
    database.close()
    return elapsed


_NODE: Final = (
    ":RelatesToNode_ {uuid: r.u, fact: r.f, group_id: 'g', source_node_uuid: r.s, "
    "target_node_uuid: r.t}"
)
_HOP_NULLS: Final = "NULL AS a, NULL AS b, NULL AS c, NULL AS d, NULL AS e, NULL AS f, NULL AS g"
#: Ways to add edges in the reference's schema: a ``RelatesToNode_`` and its two hops each.
_EDGE_STATEMENTS: dict[str, tuple[str, ...]] = {
    "UNWIND…MATCH (struct keys)…CREATE path": (
        "UNWIND $rows AS r MATCH (a:Entity {uuid: r.s}), (b:Entity {uuid: r.t}) "
        f"CREATE (a)-[:RELATES_TO]->({_NODE})-[:RELATES_TO]->(b)",
    ),
    "UNWIND…staged MATCH a, then b…CREATE path (used)": (
        "UNWIND $rows AS r WITH r.s AS s, r MATCH (a:Entity {uuid: s}) "
        "WITH a, r, r.t AS t MATCH (b:Entity {uuid: t}) "
        f"CREATE (a)-[:RELATES_TO]->({_NODE})-[:RELATES_TO]->(b)",
    ),
    "CREATE nodes, then staged MATCH a, e, b…CREATE hops": (
        f"UNWIND $rows AS r CREATE ({_NODE})",
        "UNWIND $rows AS r WITH r.s AS s, r MATCH (a:Entity {uuid: s}) "
        "WITH a, r, r.u AS u MATCH (e:RelatesToNode_ {uuid: u}) "
        "WITH a, e, r.t AS t MATCH (b:Entity {uuid: t}) "
        "CREATE (a)-[:RELATES_TO]->(e), (e)-[:RELATES_TO]->(b)",
    ),
    "COPY RelatesToNode_, COPY RELATES_TO ×2 FROM (UNWIND…)": (
        "COPY RelatesToNode_ FROM (UNWIND $rows AS r RETURN r.u, '' AS name, 'g' AS g, "
        "NULL AS c, r.f, ['x'] AS eps, NULL AS x, NULL AS v, NULL AS i, '{}' AS attrs, "
        "'' AS rt, r.s, r.t)",
        f"COPY RELATES_TO FROM (UNWIND $rows AS r RETURN r.s, r.u, {_HOP_NULLS}) "
        "(from='Entity', to='RelatesToNode_')",
        f"COPY RELATES_TO FROM (UNWIND $rows AS r RETURN r.u, r.t, {_HOP_NULLS}) "
        "(from='RelatesToNode_', to='Entity')",
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
    for n, (label, statements) in enumerate(_EDGE_STATEMENTS.items()):
        times[label] = _edge_load(tmp_path / f"edges{n}", statements, edge_rows, EDGE_ENTITIES)
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


#: The live/replay bench: a 100k-event stream (50,000 episodes).
LIVE_EPISODES = 50_000
#: Batches of 256 timed at the start (empty graph) and at the end (the rest loaded in bulk).
REPLAY_BATCHES = 12
#: Single-event applies timed per event type on the full graph.
LIVE_SAMPLES = 40
#: Recorded with schema version 1 (relationships as Kuzu rels with properties, ADR 0014;
#: commit fadcedb, same stream, loaded 2-core machine, load ≈ 10–17) just before the change
#: to the reference's schema (ADR 0086).
BEFORE: Final = {
    "replay, batches of 256, start": "970 ev/s",
    "replay, batches of 256, end": "423 ev/s",
    "open (locator scan)": "2,389 ms",
    "EntityAsserted": "p50 1.6 ms, p99 15.8 ms",
    "RelationshipAsserted": "p50 1.8 ms, p99 28.9 ms",
    "EpisodeAdded": "p50 1.9 ms, p99 60.2 ms",
    "find 1 relationship by uuid": "endpoints 7.7 ms, scan 278.3 ms",
}


def _live_events(k: int, ts: str) -> list[Event]:
    return [
        EntityAsserted(
            group_id=GROUP,
            entity=EntityRecord(
                uuid=f"live-ent-{k}", name=f"Live {k}", labels=["Entity"], created_at=ts
            ),
            created=True,
        ),
        RelationshipAsserted(
            group_id=GROUP,
            edge=EdgeRecord(
                uuid=f"live-edge-{k}",
                name="LIVE",
                source_uuid=f"live-ent-{k}",
                target_uuid=f"ent-{(37 * k) % 1000:06d}",
                fact=f"live fact {k}",
                relation_type="LIVE",
                valid_at=ts,
                created_at=ts,
            ),
            created=True,
        ),
        EpisodeAdded(
            group_id=GROUP, uuid=f"live-ep-{k}", name=f"live {k}", content="c", created_at=ts
        ),
    ]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def test_graph_live_latency_and_replay_rate(tmp_path: Path) -> None:
    """Single-event latency per type and batch replay at both ends of a 100k-event stream."""
    events = synthetic_stream(LIVE_EPISODES)
    window = REPLAY_BATCHES * 256
    rows: list[tuple[str, str, str, str]] = []

    start_graph = GraphProjection(tmp_path / "start")
    start = time.perf_counter()
    for i in range(0, window, 256):
        start_graph.apply(GROUP, "gen", events[i : i + 256])
    start_rate = window / (time.perf_counter() - start)
    start_graph.close()

    head = events[:-window]
    full = GraphProjection(tmp_path / "full")
    full.load_group(GROUP, "gen", (head[i : i + 256] for i in range(0, len(head), 256)))
    full.close()
    opened = time.perf_counter()
    full = GraphProjection(tmp_path / "full")
    open_ms = 1000 * (time.perf_counter() - opened)
    start = time.perf_counter()
    for i in range(len(head), len(events), 256):
        full.apply(GROUP, "gen", events[i : i + 256])
    end_rate = window / (time.perf_counter() - start)
    counts = full.counts(GROUP)
    rows.append(
        (
            "replay, batches of 256, start",
            f"first {window:,} events, empty graph",
            f"{start_rate:,.0f} ev/s",
            BEFORE["replay, batches of 256, start"],
        )
    )
    rows.append(
        (
            "replay, batches of 256, end",
            f"last {window:,} of {len(events):,} events",
            f"{end_rate:,.0f} ev/s ({end_rate / start_rate:.2f}× start)",
            BEFORE["replay, batches of 256, end"],
        )
    )
    rows.append(
        (
            "open (locator scan)",
            f"{counts.entities:,} entities, {counts.edges:,} edges",
            f"{open_ms:,.0f} ms",
            BEFORE["open (locator scan)"],
        )
    )

    latencies: dict[str, list[float]] = {}
    seq = len(events)
    ts = "2025-01-01T00:00:00.000000Z"
    for k in range(LIVE_SAMPLES):
        for event in _live_events(k, ts):
            stamped = msgspec.structs.replace(event, seq=seq)
            seq += 1
            begin = time.perf_counter()
            full.apply(GROUP, "gen", [stamped])
            latencies.setdefault(type(event).__name__, []).append(time.perf_counter() - begin)
    for name, values in latencies.items():
        rows.append(
            (
                f"live apply, 1 {name}",
                f"{LIVE_SAMPLES} on the full graph",
                f"p50 {1000 * _pct(values, 0.5):.1f} ms, p99 {1000 * _pct(values, 0.99):.1f} ms",
                BEFORE[name],
            )
        )

    # The same-run baseline: finding one bound edge by scanning the two-hop pattern for its
    # uuid against its ``RelatesToNode_`` primary key then its source hop (``edges_by_uuids``;
    # the two-hop pattern with the key in the middle is planned from an end: ≈ 7 ms at 60k).
    probe = events[-1]
    assert isinstance(probe, EpisodeExtracted)
    target = probe.edges_created[0]
    forms = {
        "scan": (
            "UNWIND $keys AS k MATCH (a:Entity)-[:RELATES_TO]->(e:RelatesToNode_)"
            "-[:RELATES_TO]->(b:Entity) WHERE e.uuid = k RETURN e.uuid",
            {"keys": [target.uuid]},
        ),
        "key": (
            "MATCH (e:RelatesToNode_ {uuid: $u}) MATCH (a:Entity)-[:RELATES_TO]->(e) RETURN e.uuid",
            {"u": target.uuid},
        ),
    }
    took: dict[str, float] = {}
    for label, (query, params) in forms.items():
        samples = []
        for _ in range(5):
            begin = time.perf_counter()
            assert full.query(query, params) == [[target.uuid]]
            samples.append(time.perf_counter() - begin)
        took[label] = _pct(samples, 0.5)
    rows.append(
        (
            "find 1 relationship by uuid",
            f"{counts.edges:,} edges",
            f"key {1000 * took['key']:.1f} ms, scan {1000 * took['scan']:.1f} ms "
            f"({took['scan'] / took['key']:.0f}×)",
            BEFORE["find 1 relationship by uuid"],
        )
    )
    full.close()
    _print_live_table(rows)


def _print_live_table(rows: list[tuple[str, str, str, str]]) -> None:
    header = ("what", "size", "now", "schema v1 (before ADR 0086)")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    print("\n\ngraph projection live writes and replay (100k-event stream)")
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
