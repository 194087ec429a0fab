"""Replay benchmarks (``make bench``), each a ratio or a rate measured in this run:

1. A full replay of a synthetic stream (``LCG_BENCH_REPLAY_EVENTS``, default 1,000,000) with the
   hashing embedder: events/s and resident memory after ¼ of the stream is read, after all of
   it is read, after the bulk graph write, after the hnswlib build and after the save, next to
   the size of the projections, to show memory follows the projections, not the stream.
2. One event per batch (graph, text and vector writes and one embedder call per event)
   against batches of 256, and against the full replay's bulk path, on the same prefix.
3. The embedded MiniLM model: replay with a cold embedding cache (recompute) against a warm one.
"""

from __future__ import annotations

import os
import resource
import shutil
import time
from pathlib import Path

import pytest
from synth_stream import write_stream

from lcg.config import Config
from lcg.extract.embedders import HashEmbedder, LocalEmbedder
from lcg.projections.projector import ReplayProgress
from lcg.workspace import Workspace

GROUP = "synthetic"


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _config(root: Path, wal: Path, batch: int) -> Config:
    return Config.from_env(
        root,
        env={
            "LCG_EMBEDDER": "hash",
            "LCG_WAL_DIR": str(wal),
            "LCG_REPLAY_BATCH_SIZE": str(batch),
        },
    )


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    total = int(os.environ.get("LCG_BENCH_REPLAY_EVENTS", "1000000"))
    wal = tmp_path_factory.mktemp("synthetic-wal")
    n = write_stream(wal, GROUP, total)
    return wal, n


def test_full_replay_rate_and_memory(stream: tuple[Path, int], tmp_path: Path) -> None:
    wal, n = stream
    cfg = _config(tmp_path / "ws", wal, 256)
    quarter = n // 4
    # (label, seconds since start, RSS MB, events read) at each point of the replay.
    samples: list[tuple[str, float, float, int]] = []
    started = time.perf_counter()
    rss_start = _rss_mb()
    ws = Workspace(cfg, HashEmbedder())

    def sample(label: str, count: int) -> None:
        samples.append((label, time.perf_counter() - started, _rss_mb(), count))

    def progress(p: ReplayProgress) -> None:
        read = (p.last_seq or 0) + 1
        if p.phase == "apply":
            if read >= quarter and not samples:
                sample("1/4 read", read)
        else:
            sample({"graph": "all read", "vectors": "graph written"}[p.phase], read)

    try:
        with ws.rw.write():
            result = ws.projector.catch_up(GROUP, progress)
            sample("vectors indexed", n)
            ws.projector.save()
            sample("saved", n)
        index_mb = (
            sum(f.stat().st_size for f in (tmp_path / "ws" / ".lcg" / "vectors").rglob("*"))
            + sum(f.stat().st_size for f in (tmp_path / "ws" / ".lcg" / "text").rglob("*"))
        ) / 2**20
        counts = ws.graph.counts(GROUP)
    finally:
        ws.close()
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nfull replay of {n:,} synthetic events (hash embedder, batch 256)")
    print(
        f"state: {counts.entities:,} entities, {counts.edges:,} edges, {counts.episodes:,} episodes"
    )
    print(f"{'point':<16} {'events':>10} {'seconds':>9} {'events/s':>10} {'RSS MB':>8}")
    for label, secs, rss, count in samples:
        print(f"{label:<16} {count:>10,} {secs:>9.1f} {count / secs:>10,.0f} {rss:>8.0f}")
    print(
        f"total {elapsed:.1f} s, {result.mutations_replayed / elapsed:,.0f} events/s end to end; "
        f"RSS at start {rss_start:.0f} MB, peak {peak:.0f} MB; vector+text snapshots "
        f"{index_mb:.0f} MB"
    )
    assert result.mutations_replayed == n


def test_batched_replay_speedup(tmp_path: Path) -> None:
    """One event at a time against batches of 256, and against the full-replay bulk path.

    On a stream of its own (``LCG_BENCH_BATCH_EVENTS``, default 20,000) with the synthetic
    stream's whole shape scaled down, so every path replays creations and revisions alike.
    """
    prefix = int(os.environ.get("LCG_BENCH_BATCH_EVENTS", "20000"))
    wal = tmp_path / "wal"
    prefix = write_stream(wal, GROUP, prefix)
    rates = {}
    for label, batch, bulk in (
        ("one event per batch", 1, False),
        ("batches of 256", 256, False),
        ("full replay (bulk path)", 256, True),
    ):
        cfg = _config(tmp_path / label.replace(" ", "-"), wal, batch)
        ws = Workspace(cfg, HashEmbedder())
        ws.projector.bulk_load = bulk
        try:
            t0 = time.perf_counter()
            with ws.rw.write():
                ws.projector.rebuild(GROUP, to_seq=prefix - 1)
            rates[label] = prefix / (time.perf_counter() - t0)
        finally:
            ws.close()
    print(f"\nreplay of a {prefix:,}-event synthetic stream into an empty workspace")
    base = rates["one event per batch"]
    for label, rate in rates.items():
        print(f"{label:<26} {rate:>9,.0f} events/s  {rate / base:>6.1f}x")


def test_warm_cache_versus_recompute(tmp_path: Path) -> None:
    n = int(os.environ.get("LCG_BENCH_EMBED_EVENTS", "1200"))
    wal = tmp_path / "wal"
    write_stream(wal, GROUP, n)
    embedder = LocalEmbedder()
    timings = {}
    for label in ("recompute (cold cache)", "warm cache"):
        root = tmp_path / "ws"
        for sub in ("db", "text", "vectors"):
            shutil.rmtree(root / ".lcg" / sub, ignore_errors=True)
        cfg = Config.from_env(root, env={"LCG_WAL_DIR": str(wal)})
        ws = Workspace(cfg, embedder)
        try:
            t0 = time.perf_counter()
            result = ws.catch_up()[GROUP]
            timings[label] = (time.perf_counter() - t0, result)
        finally:
            ws.close()
    cold, warm = timings["recompute (cold cache)"], timings["warm cache"]
    print(f"\nreplay of {n:,} events with the embedded MiniLM model")
    for label, (secs, result) in timings.items():
        print(
            f"{label:<24} {secs:>7.1f} s  recomputed {result.embeddings_recomputed:>6}  "
            f"cached {result.embeddings_cached:>6}"
        )
    print(f"warm cache is {cold[0] / warm[0]:.1f}x faster")
    assert warm[1].embeddings_recomputed == 0
