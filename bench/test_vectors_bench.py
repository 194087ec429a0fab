"""Vector projection at 100k×384: inserts, queries, recall against brute force, save/load.

Run by ``make bench``. Data: seeded clustered unit vectors (1,000 random centres, noise as
large as a centre), a stand-in for sentence embeddings. Baselines measured in the same run:
raw ``hnswlib`` ``add_items`` (same M / ef_construction) for the insert path, exact numpy
brute force for queries and for recall.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import hnswlib
import numpy as np
import numpy.typing as npt
import pytest

from lcg.projections._hnsw import EF_CONSTRUCTION, HNSW_M
from lcg.projections.ops import Op, Upsert
from lcg.projections.vectors import VectorProjection

N = 100_000
DIM = 384
BATCH = 256  # the projector's largest replay batch
BASELINE_N = 5_000
N_QUERIES = 500
K = 10
G = "bench"
FIELD = "entity.name"

F32 = npt.NDArray[np.float32]


def clustered(rng: np.random.Generator, n: int, centers: F32) -> F32:
    x = centers[rng.integers(0, len(centers), n)]
    x = x + rng.standard_normal((n, centers.shape[1]), dtype=np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def brute_top_k(data: F32, q: F32, k: int) -> npt.NDArray[np.intp]:
    sims = data @ q
    top = np.argpartition(-sims, k - 1)[:k]
    return top[np.argsort(-sims[top])]


def ops_for(start: int, stop: int) -> list[Op]:
    return [
        Upsert(kind="entity", group_id=G, uuid=f"u{i:06d}", parts={"name": f"t{i}"})
        for i in range(start, stop)
    ]


def apply_range(vp: VectorProjection, data: F32, start: int, stop: int) -> None:
    for lo in range(start, stop, BATCH):
        hi = min(lo + BATCH, stop)
        vp.apply(G, "gen", hi, ops_for(lo, hi), {f"t{i}": data[i] for i in range(lo, hi)})


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@pytest.mark.bench
def test_vector_projection_bench(tmp_path: Path) -> None:
    rng = np.random.default_rng(384_100_000)
    centers = rng.standard_normal((1000, DIM), dtype=np.float32)
    data = clustered(rng, N, centers)
    queries = clustered(rng, N_QUERIES, centers)
    rows: list[tuple[str, str]] = []

    # Baseline: raw hnswlib on the first BASELINE_N vectors, one add_items call.
    raw = hnswlib.Index(space="cosine", dim=DIM)
    raw.init_index(max_elements=BASELINE_N, ef_construction=EF_CONSTRUCTION, M=HNSW_M)
    t0 = time.perf_counter()
    raw.add_items(data[:BASELINE_N], np.arange(BASELINE_N))
    raw_rate = BASELINE_N / (time.perf_counter() - t0)
    del raw

    root = tmp_path / "vectors"
    vp = VectorProjection(root, DIM, "bench-clustered-384")
    t0, c0 = time.perf_counter(), time.process_time()
    apply_range(vp, data, 0, BASELINE_N)
    t_prefix = time.perf_counter() - t0
    apply_range(vp, data, BASELINE_N, N)
    t_all, cpu_all = time.perf_counter() - t0, time.process_time() - c0
    assert vp.count(G, FIELD) == N
    prefix_rate = BASELINE_N / t_prefix
    rows += [
        (f"raw hnswlib add_items, first {BASELINE_N:,} (baseline)", f"{raw_rate:,.0f} vec/s"),
        (
            f"projection apply, batches of {BATCH}, first {BASELINE_N:,}",
            f"{prefix_rate:,.0f} vec/s",
        ),
        ("  ratio projection / raw hnswlib", f"{prefix_rate / raw_rate:.2f}×"),
        (
            f"projection apply, all {N:,}",
            f"{N / t_all:,.0f} vec/s ({t_all:.1f} s), {N / cpu_all:,.0f} vec per CPU-second",
        ),
    ]

    # Queries: exact brute force (baseline) versus the hnswlib path at several ef.
    sims = queries @ data.T
    truth = [set(np.argpartition(-row, K - 1)[:K].tolist()) for row in sims]
    del sims
    brute_ms = []
    for q in queries[:50]:
        t0 = time.perf_counter()
        brute_top_k(data, q, K)
        brute_ms.append((time.perf_counter() - t0) * 1e3)
    brute_p50 = statistics.median(brute_ms)
    rows.append(("brute-force numpy query p50 (baseline)", f"{brute_p50:.3f} ms"))
    recalls: dict[int, float] = {}
    for ef in (32, 64, 128, 256):
        times, found = [], 0
        for q, want in zip(queries, truth, strict=True):
            t0 = time.perf_counter()
            hits = vp.search(G, FIELD, q, K, ef=ef)
            times.append((time.perf_counter() - t0) * 1e3)
            found += len({int(u[1:]) for u, _ in hits} & want)
        recalls[ef] = found / (K * len(queries))
        p50 = statistics.median(times)
        p99 = float(np.percentile(times, 99))
        rows.append(
            (
                f"projection search ef={ef} (k={K})",
                f"p50 {p50:.3f} ms, p99 {p99:.3f} ms, recall@10 {recalls[ef]:.4f}, "
                f"{brute_p50 / p50:.0f}× brute",
            )
        )

    before = [vp.search(G, FIELD, q, K) for q in queries[:20]]
    t0 = time.perf_counter()
    vp.save()
    t_save = time.perf_counter() - t0
    t0 = time.perf_counter()
    digest = vp.digest(G)
    t_digest = time.perf_counter() - t0
    vp.close()
    t0 = time.perf_counter()
    again = VectorProjection(root, DIM, "bench-clustered-384")
    t_load = time.perf_counter() - t0
    assert again.digest(G) == digest
    assert [again.search(G, FIELD, q, K) for q in queries[:20]] == before
    rows += [
        (
            "save (npy + hnswlib index + meta, fsynced)",
            f"{t_save:.2f} s, {dir_bytes(root) / 2**20:.0f} MiB",
        ),
        ("load", f"{t_load:.2f} s"),
        ("digest (sha256 over sorted live vectors)", f"{t_digest:.2f} s"),
    ]
    again.close()

    width = max(len(r[0]) for r in rows)
    print(
        f"\nvector projection, {N:,}×{DIM}, M={HNSW_M}, ef_construction={EF_CONSTRUCTION}, "
        f"{os.cpu_count()} CPUs"
    )
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    # Quality, not timing: the default beam (ef=64) must keep recall@10 ≥ 0.98.
    assert recalls[64] >= 0.98


@pytest.mark.bench
def test_replace_cost(tmp_path: Path) -> None:
    """Changing vectors: hnswlib's in-place update against our retire-and-insert path.

    20k clustered vectors, then 20k replacements (each uuid changed once, batches of 256, so
    the amortised graph rebuilds are included). Baseline in the same run: raw hnswlib
    ``add_items`` on the existing labels (its in-place update), and raw inserts.
    """
    n = int(os.environ.get("LCG_BENCH_REPLACE_N", "20000"))
    rng = np.random.default_rng(11)
    centers = clustered(rng, 1000, rng.standard_normal((1, DIM), dtype=np.float32))
    data, new = clustered(rng, n, centers), clustered(rng, n, centers)

    raw = hnswlib.Index(space="cosine", dim=DIM)
    raw.init_index(max_elements=n, ef_construction=EF_CONSTRUCTION, M=HNSW_M, random_seed=100)
    t0 = time.perf_counter()
    raw.add_items(data, np.arange(n), num_threads=-1)
    insert_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for lo in range(0, n, BATCH):
        hi = min(lo + BATCH, n)
        raw.add_items(new[lo:hi], np.arange(lo, hi), num_threads=-1)
    update_s = time.perf_counter() - t0

    vp = VectorProjection(tmp_path / "v", DIM, "bench")
    apply_range(vp, data, 0, n)
    t0 = time.perf_counter()
    for lo in range(0, n, BATCH):
        hi = min(lo + BATCH, n)
        vp.apply(G, "gen", n + hi, ops_for(lo, hi), {f"t{i}": new[i] for i in range(lo, hi)})
    ours_s = time.perf_counter() - t0
    misses = sum(
        vp.search(G, FIELD, new[i], 1)[0][0] != f"u{i:06d}" for i in range(0, n, max(1, n // 500))
    )
    print(f"\nreplacing {n:,} of {n:,} vectors ({DIM} dims), batches of {BATCH}")
    print(f"raw hnswlib insert        {n / insert_s:>8,.0f} vectors/s")
    print(f"raw hnswlib update        {n / update_s:>8,.0f} vectors/s (in place)")
    print(f"lcg replace               {n / ours_s:>8,.0f} vectors/s (retire + insert, rebuilds)")
    print(f"lcg replace / raw update: {update_s / ours_s:.1f}x; self-hits missed {misses}")
    assert misses <= 5
