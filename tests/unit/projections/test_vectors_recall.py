"""Recall of the hnswlib path against the exact scan on 20k clustered unit vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from lcg.projections.ops import Delete, Op, Upsert
from lcg.projections.vectors import VectorProjection

DIM = 64
N = 20_000
G = "recall"


def clustered_unit_vectors(
    rng: np.random.Generator, n: int, centers: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Unit points around random centres (noise as large as the centres): embedding-like."""
    pick = rng.integers(0, len(centers), n)
    x = centers[pick] + 1.0 * rng.standard_normal((n, centers.shape[1])).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def recall_at_10(vp: VectorProjection, queries: npt.NDArray[np.float32]) -> float:
    found = 0
    for q in queries:
        exact = {u for u, _ in vp.search(G, "episode.content", q, 10, exact=True)}
        approx = {u for u, _ in vp.search(G, "episode.content", q, 10)}
        found += len(exact & approx)
    return found / (10 * len(queries))


def test_hnsw_recall_at_10_vs_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(20261201)
    centers = rng.standard_normal((256, DIM)).astype(np.float32)
    data = clustered_unit_vectors(rng, N, centers)
    queries = clustered_unit_vectors(rng, 100, centers)
    vp = VectorProjection(tmp_path / "vectors", DIM, "fake-clustered-64")
    # Incremental batches: the graph is built when the field crosses the exact threshold,
    # then grown by doubling as later batches arrive.
    step = 2_500
    for seq, start in enumerate(range(0, N, step), start=1):
        ops: list[Op] = [
            Upsert(kind="episode", group_id=G, uuid=f"p{i}", parts={"content": f"t{i}"})
            for i in range(start, start + step)
        ]
        vp.apply(G, "gen", seq, ops, {f"t{i}": data[i] for i in range(start, start + step)})
    assert vp.count(G, "episode.content") == N
    assert vp._groups[G].fields["episode.content"].has_graph
    assert recall_at_10(vp, queries) >= 0.98

    # After deleting a tenth and re-adding half of those with new vectors, still ≥ 0.98.
    gone = rng.choice(N, N // 10, replace=False)
    dels: list[Op] = [Delete(kind="episode", group_id=G, uuid=f"p{i}") for i in gone]
    vp.apply(G, "gen", 100, dels, {})
    back = gone[: len(gone) // 2]
    fresh = clustered_unit_vectors(rng, len(back), centers)
    ups: list[Op] = [
        Upsert(kind="episode", group_id=G, uuid=f"p{i}", parts={"content": f"u{i}"}) for i in back
    ]
    vp.apply(G, "gen", 101, ups, {f"u{i}": fresh[j] for j, i in enumerate(back)})
    assert vp.count(G, "episode.content") == N - len(gone) + len(back)
    assert recall_at_10(vp, queries) >= 0.98


def test_recall_under_churn_with_retired_labels(tmp_path: Path) -> None:
    """Revisions retire labels (dead points stay in the graph): recall holds, size stays bounded."""
    n = 6_000
    rng = np.random.default_rng(7)
    centers = rng.standard_normal((128, DIM)).astype(np.float32)
    queries = clustered_unit_vectors(rng, 100, centers)
    vp = VectorProjection(tmp_path / "vectors", DIM, "fake-clustered-64", exact_below=500)
    data = clustered_unit_vectors(rng, n, centers)
    ops: list[Op] = [
        Upsert(kind="episode", group_id=G, uuid=f"p{i}", parts={"content": f"r0-{i}"})
        for i in range(n)
    ]
    vp.apply(G, "gen", 1, ops, {f"r0-{i}": data[i] for i in range(n)})
    field = vp._groups[G].fields["episode.content"]
    worst = 1.0
    # Ten rounds revising a random 40 % each: dead labels pass the live count several times.
    for r in range(1, 11):
        pick = rng.choice(n, int(n * 0.4), replace=False)
        fresh = clustered_unit_vectors(rng, len(pick), centers)
        ups: list[Op] = [
            Upsert(kind="episode", group_id=G, uuid=f"p{i}", parts={"content": f"r{r}-{i}"})
            for i in pick
        ]
        vp.apply(G, "gen", r + 1, ups, {f"r{r}-{i}": fresh[j] for j, i in enumerate(pick)})
        assert field.has_graph and len(field._dead) <= field.count
        worst = min(worst, recall_at_10(vp, queries))
    assert vp.count(G, "episode.content") == n
    assert field._n_slots <= 2 * n
    assert worst >= 0.98
