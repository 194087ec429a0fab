"""The cost of checking projection files (ADR 0155), measured against the same code without.

* vectors: one group whose ``entity.name`` field holds ``N`` 384-d vectors with its hnswlib
  graph; ``VectorProjection`` save (the ``.npy``, the ``.hnsw``, the sealed meta) and open,
  against the same with the checksum calls replaced by no-ops (what lcg did before);
* text: one group of ``N`` episodes; ``TextProjection`` save and open, against the same with
  the sealing and unsealing replaced by the bare encoding.

Run by ``make bench``; each number is the median of ``REPEATS`` interleaved runs, wall and
CPU time, the saves fsynced as always (the disk's own cost is in both columns).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import numpy as np
import pytest

from lcg.projections import _hnsw, _text_snapshot, vectors
from lcg.projections.ops import Op, Upsert
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection

N = 50_000
DIM = 384
REPEATS = 5
G = "bench"


@contextmanager
def _unchecked() -> Iterator[None]:
    """The checksum steps as no-ops: the save and load of the previous version."""
    saved = (
        _hnsw.file_crc,
        vectors.encode_sealed,
        vectors.unseal,
        _text_snapshot.encode_sealed,
        _text_snapshot.unseal,
    )

    def no_crc(path: Path) -> tuple[int, int]:
        return 0, path.stat().st_size

    def plain(encoder: msgspec.msgpack.Encoder, obj: object) -> bytes:
        return encoder.encode(obj)

    def bare(data: bytes) -> tuple[memoryview, bool]:
        return memoryview(data), True

    _hnsw.file_crc = no_crc
    vectors.encode_sealed = _text_snapshot.encode_sealed = plain  # type: ignore[assignment]
    vectors.unseal = _text_snapshot.unseal = bare
    try:
        yield
    finally:
        (
            _hnsw.file_crc,
            vectors.encode_sealed,
            vectors.unseal,
            _text_snapshot.encode_sealed,
            _text_snapshot.unseal,
        ) = saved


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """``(wall, CPU)`` seconds of ``fn()``: CPU time is what a busy machine does not inflate."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _interleaved(
    save: Callable[[], object], load: Callable[[], object]
) -> list[tuple[float, float]]:
    """Median ``(wall, CPU)`` of save without, load without, save with, load with."""
    runs: list[list[tuple[float, float]]] = [[], [], [], []]
    for _ in range(REPEATS):
        with _unchecked():
            runs[0].append(_timed(save))
            runs[1].append(_timed(load))
        runs[2].append(_timed(save))
        runs[3].append(_timed(load))
    return [(statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for r in runs]


def _vector_costs(root: Path) -> list[tuple[float, float]]:
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((N, DIM), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ops: list[Op] = [
        Upsert(kind="entity", group_id=G, uuid=f"e{i}", parts={"name": f"n{i}"}) for i in range(N)
    ]
    vp = VectorProjection(root, DIM, "bench-model")
    vp.begin_bulk(G)
    vp.apply(G, "gen", N - 1, ops, {f"n{i}": vecs[i] for i in range(N)})
    vp.end_bulk(G)  # the graph, built once

    def save() -> None:
        # The field changed: its .npy and .hnsw are written again, as after any change.
        vp._dirty.add(G)
        vp._groups[G].dirty_fields.add("entity.name")
        vp.save()

    return _interleaved(save, lambda: VectorProjection(root, DIM, "bench-model", read_only=True))


def _text_costs(root: Path) -> list[tuple[float, float]]:
    proj = TextProjection(root)
    words = [f"w{i}" for i in range(5000)]
    ops: list[Op] = [
        Upsert(
            kind="episode",
            group_id=G,
            uuid=f"ep{i}",
            parts={"content": " ".join(words[(i * 7 + j * 13) % 5000] for j in range(40))},
        )
        for i in range(N)
    ]
    proj.apply(G, "gen", N - 1, ops)

    def save() -> None:
        proj._groups[G].dirty = True
        proj.save()

    return _interleaved(save, lambda: TextProjection(root, read_only=True))


@pytest.mark.bench
def test_checksum_cost_of_projection_files(tmp_path: Path) -> None:
    rows = []
    for name, costs, root in (
        ("vectors", _vector_costs, tmp_path / "vectors"),
        ("text", _text_costs, tmp_path / "text"),
    ):
        plain_save, plain_load, checked_save, checked_load = costs(root)
        rows.append((name, "save", plain_save, checked_save))
        rows.append((name, "load", plain_load, checked_load))
    sizes = {p.suffix or p.name: p.stat().st_size for p in (tmp_path / "vectors" / G).iterdir()}
    sizes[".bm25"] = (tmp_path / "text" / f"{G}.bm25").stat().st_size
    print(f"\nprojection checksums, one group of {N:,} (vectors {DIM}-d with an hnswlib graph)")
    print("  files: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(sizes.items())))
    for name, what, plain, checked in rows:
        print(
            f"  {name:<8} {what}: wall {plain[0] * 1000:7.1f} → {checked[0] * 1000:7.1f} ms "
            f"({checked[0] / plain[0]:.2f}x), CPU {plain[1] * 1000:7.1f} → "
            f"{checked[1] * 1000:7.1f} ms ({checked[1] / plain[1]:.2f}x)"
        )
    for _, _, plain, checked in rows:
        # Generous: a CRC-32 of what was just written costs a fraction of writing it.
        assert checked[1] < 3 * plain[1] + 0.5
