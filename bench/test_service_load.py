"""Load: 32 concurrent clients mixing reads and writes against a real ``lcg serve``.

Run by ``make bench``. A ``lcg serve`` subprocess (hash test embedder, no extractor) in a temp
workspace; first one client calls every method of the mix alone (the baseline, same run);
then 32 clients on loopback call a weighted mix for ``LCG_BENCH_LOAD_SECONDS`` (default 60).
Printed: per method the calls, p50 and p99 latency, and the p50 as a ratio to the unloaded
baseline; overall throughput. Must hold: zero errors, the streams' seqs contiguous
(``lcg wal verify``) and the projections equal to a replay (``lcg verify``).
"""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _service_fixtures as sf
from lcg.rpc.client import Client

CLIENTS = 32
GROUPS = ["liminis", "bench-a", "bench-b", "bench-c"]
WORDS = (
    "apollo lunar module saturn rocket orbit crater moon earth mission launch command "
    "service capsule eagle tranquility armstrong aldrin collins houston gemini mercury"
).split()

Call = tuple[str, dict[str, Any]]


def _seconds() -> float:
    return float(os.environ.get("LCG_BENCH_LOAD_SECONDS", "60"))


class Mix:
    """The weighted operation mix of one client (75% reads, 25% writes)."""

    def __init__(self, cid: int, seed: int) -> None:
        self.cid = cid
        self.rnd = random.Random(seed)
        self.group = GROUPS[cid % len(GROUPS)]
        self.n = 0
        self.names: list[str] = []

    def _text(self, k: int) -> str:
        return " ".join(self.rnd.choice(WORDS) for _ in range(k))

    def next(self) -> Call:
        self.n += 1
        roll = self.rnd.random()
        g = self.group
        if roll < 0.10:
            name = f"c{self.cid} {self._text(2)} {self.n}"
            self.names.append(name)
            return "knowledge_assert_entity", {
                "name": name,
                "summary": self._text(8),
                "group_id": g,
            }
        if roll < 0.17:
            return "knowledge_process_chunk", {
                "chunk_text": self._text(40),
                "chunk_id": f"c{self.cid}-{self.n}",
                "source_file": f"client{self.cid}.txt",
                "group_id": g,
            }
        if roll < 0.25 and len(self.names) >= 2:
            a, b = self.rnd.sample(self.names, 2)
            return "knowledge_assert_relationship", {
                "source_name": a,
                "target_name": b,
                "predicate": self.rnd.choice(["NEAR", "PART_OF", "BEFORE"]),
                "group_id": g,
            }
        if roll < 0.40:
            return "knowledge_find_entities", {"query": self._text(2), "num_results": 10}
        if roll < 0.50:
            return "knowledge_find_relationships", {"query": self._text(2)}
        if roll < 0.62:
            return "knowledge_search_passages", {"query": self._text(3), "min_score": 0.1}
        if roll < 0.72:
            return "knowledge_get_episodes", {"group_id": g, "last_n": 20}
        if roll < 0.82:
            return "knowledge_list_entities", {"num_results": 50, "group_ids": [g]}
        if roll < 0.90:
            return "knowledge_get_edges_by_group", {"group_ids": [g]}
        if roll < 0.95:
            return "knowledge_status", {}
        return "health_check", {}


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def _client_loop(
    sock: Path,
    mix: Mix,
    until: float,
    lat: dict[str, list[float]],
    errors: list[str],
    guard: threading.Lock,
) -> None:
    local: dict[str, list[float]] = defaultdict(list)
    local_err: list[str] = []
    with Client(sock, timeout=300) as c:
        while time.monotonic() < until:
            method, params = mix.next()
            t0 = time.perf_counter()
            try:
                c.call(method, params)
            except Exception as exc:  # noqa: BLE001 - every error is counted and reported
                local_err.append(f"{method}: {exc}")
                continue
            local[method].append(time.perf_counter() - t0)
    with guard:
        for k, v in local.items():
            lat[k].extend(v)
        errors.extend(local_err)


def _baseline(sock: Path) -> dict[str, float]:
    """p50 latency of each method of the mix, one client alone."""
    mix = Mix(999, 1)
    seen: dict[str, list[float]] = defaultdict(list)
    with Client(sock, timeout=300) as c:
        # warm up and make sure every method of the mix is measured
        for _ in range(400):
            method, params = mix.next()
            t0 = time.perf_counter()
            c.call(method, params)
            seen[method].append(time.perf_counter() - t0)
            if all(len(seen[m]) >= 5 for m in _MIX_METHODS):
                break
    return {m: statistics.median(v[1:] or v) for m, v in seen.items()}


_MIX_METHODS = [
    "knowledge_assert_entity", "knowledge_process_chunk", "knowledge_assert_relationship",
    "knowledge_find_entities", "knowledge_find_relationships", "knowledge_search_passages",
    "knowledge_get_episodes", "knowledge_list_entities", "knowledge_get_edges_by_group",
    "knowledge_status", "health_check",
]  # fmt: skip
_WRITES = {"knowledge_assert_entity", "knowledge_process_chunk", "knowledge_assert_relationship"}


def test_service_load_32_clients() -> None:
    seconds = _seconds()
    with sf.temp_workspace("lcg-load-") as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            base = _baseline(sock)
            lat: dict[str, list[float]] = defaultdict(list)
            errors: list[str] = []
            guard = threading.Lock()
            start = time.monotonic()
            until = start + seconds
            threads = [
                threading.Thread(
                    target=_client_loop, args=(sock, Mix(i, 1000 + i), until, lat, errors, guard)
                )
                for i in range(CLIENTS)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - start
            with Client(sock, timeout=300) as c:
                status = c.call("knowledge_status", {})
        finally:
            rc = sf.stop_serve(proc, sock)
        _report(seconds, elapsed, base, lat, errors, status)
        assert rc == 0
        assert not errors, errors[:10]
        wal = sf.run_lcg(ws, "wal", "verify")
        assert wal.returncode == 0, wal.stdout + wal.stderr
        verify = sf.run_lcg(ws, "verify")
        assert verify.returncode == 0, verify.stdout + verify.stderr
        print("lcg wal verify: ok (seqs contiguous); lcg verify: ok (projections = replay)")


def _report(
    seconds: float,
    elapsed: float,
    base: dict[str, float],
    lat: dict[str, list[float]],
    errors: list[str],
    status: dict[str, Any],
) -> None:
    out: Callable[[str], None] = print
    total = sum(len(v) for v in lat.values())
    writes = sum(len(v) for m, v in lat.items() if m in _WRITES)
    out(f"\nservice load: {CLIENTS} clients, {seconds:.0f} s requested, {elapsed:.1f} s measured")
    out(f"{'method':<34}{'calls':>7}{'p50 ms':>10}{'p99 ms':>10}{'alone p50':>11}{'p50 ratio':>11}")
    for m in _MIX_METHODS:
        v = lat.get(m, [])
        p50, p99 = _pct(v, 0.5) * 1000, _pct(v, 0.99) * 1000
        b = base.get(m, float("nan")) * 1000
        out(f"{m:<34}{len(v):>7}{p50:>10.1f}{p99:>10.1f}{b:>11.1f}{p50 / b:>10.1f}x")
    out(
        f"throughput: {total / elapsed:.1f} calls/s ({writes / elapsed:.1f} writes/s, "
        f"{(total - writes) / elapsed:.1f} reads/s); errors: {len(errors)}"
    )
    out(
        f"final: {status['entity_count']} entities, {status['relationship_count']} edges, "
        f"{status['episode_count']} episodes; "
        + ", ".join(f"{g}: max_seq {s['max_seq']}" for g, s in sorted(status["wal_groups"].items()))
    )
