"""Service memory under reads: RSS of a real ``lcg serve`` before and after 10,000 read calls.

Run by ``make bench``. A ``lcg serve`` subprocess (hash test embedder, no extractor) holds 30
groups; one client sends ``LCG_BENCH_RSS_CALLS`` (default 10,000) calls of a mix of read
methods over the socket, then 300 ``knowledge_status`` and 20 ``knowledge_verify`` calls (the
two that grew most per call under Kuzu 0.11.3's leak of prepared statements, ADR 0085).
Printed: the service's RSS before and after each phase, the growth per call, and the ratio
after/before (the baseline is the same process, warmed, in the same run). Asserts only that
every call answered.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.rpc.client import Client

pytestmark = pytest.mark.bench

GROUPS = [f"rss-{i:02d}" for i in range(30)]
WORDS = "apollo lunar module saturn rocket orbit crater moon earth mission launch eagle".split()


def _calls() -> int:
    return int(os.environ.get("LCG_BENCH_RSS_CALLS", "10000"))


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def _populate(c: Client, rnd: random.Random) -> None:
    for g in GROUPS:
        names = []
        for k in range(3):
            name = f"{g} {rnd.choice(WORDS)} {k}"
            names.append(name)
            c.call("knowledge_assert_entity", {"name": name, "summary": "s", "group_id": g})
        c.call(
            "knowledge_assert_relationship",
            {"source_name": names[0], "target_name": names[1], "predicate": "NEAR", "group_id": g},
        )
        c.call(
            "knowledge_process_chunk",
            {
                "chunk_text": " ".join(rnd.choice(WORDS) for _ in range(30)),
                "chunk_id": f"{g}-c",
                "source_file": f"{g}.txt",
                "group_id": g,
            },
        )


def _read_mix(rnd: random.Random) -> tuple[str, dict[str, Any]]:
    g = rnd.choice(GROUPS)
    q = " ".join(rnd.choice(WORDS) for _ in range(2))
    choices: list[tuple[str, dict[str, Any]]] = [
        ("knowledge_status", {}),
        ("knowledge_find_entities", {"query": q, "num_results": 10}),
        ("knowledge_find_relationships", {"query": q}),
        ("knowledge_search_passages", {"query": q, "min_score": 0.1}),
        ("knowledge_get_episodes", {"group_id": g, "last_n": 10}),
        ("knowledge_list_entities", {"num_results": 20, "group_ids": [g]}),
        ("knowledge_list_relationships", {"num_results": 20, "group_ids": [g]}),
        ("knowledge_get_nodes_by_group", {"group_ids": [g]}),
        ("knowledge_get_edges_by_group", {"group_ids": [g]}),
        ("health_check", {}),
    ]
    return rnd.choice(choices)


def _phase(
    pid: int, label: str, n: int, call: Callable[[int], None], rows: list[tuple[str, ...]]
) -> None:
    before = _rss_mb(pid)
    for i in range(n):
        call(i)
    after = _rss_mb(pid)
    rows.append(
        (
            label,
            f"{n:,}",
            f"{before:,.1f} MB",
            f"{after:,.1f} MB",
            f"{1024 * (after - before) / n:,.1f} KB",
            f"{after / before:.3f}×",
        )
    )


def test_service_rss_under_reads() -> None:
    rnd = random.Random(11)
    rows: list[tuple[str, ...]] = []
    with sf.temp_workspace("lcg-rss-") as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            with Client(sock, timeout=300) as c:
                _populate(c, rnd)
                # Warm: every statement prepared once, caches and Kuzu's buffer pool filled.
                for _ in range(300):
                    c.call(*_read_mix(rnd))
                for _ in range(3):
                    c.call("knowledge_verify", {})
                _phase(
                    proc.pid,
                    "mixed reads (10 methods)",
                    _calls(),
                    lambda _i: c.call(*_read_mix(rnd)),
                    rows,
                )
                _phase(
                    proc.pid,
                    "knowledge_status, 30 groups",
                    300,
                    lambda _i: c.call("knowledge_status", {}),
                    rows,
                )
                _phase(
                    proc.pid,
                    "knowledge_verify, 30 groups",
                    20,
                    lambda _i: c.call("knowledge_verify", {}),
                    rows,
                )
        finally:
            rc = sf.stop_serve(proc, sock)
    header = ("phase", "calls", "RSS before", "RSS after", "per call", "after/before")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("\n\nservice RSS under reads (lcg serve, 30 groups; before = same process, warmed)")
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))
    assert rc == 0
