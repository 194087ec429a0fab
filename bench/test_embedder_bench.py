"""Embedders and the embedding cache: texts/s, and what a warm cache saves.

Run by ``make bench``. Texts: Apollo-corpus article titles (short names) and ~150-word
(~190-token) windows of its prose (passages), from ``examples/apollo/``; synthetic
entity names for the hash embedder and the cache at scale. Baselines measured in the same
run: the local model one text per call (the reference's one-text-per-request path) for the
batching speed-up, and recomputing with each embedder for the cache's lookup speed-up.
Wall and CPU seconds are both shown: on a shared machine wall time swings with load.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from lcg.extract.embedders import HashEmbedder, LocalEmbedder
from lcg.projections.cache import EmbeddingCache, embed_with_cache

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "apollo" / "corpus_prose.jsonl"
N_NAMES = 200
N_PASSAGES = 24
N_SINGLE = 40
N_HASH = 100_000
N_CACHE = 100_000
N_INDEX = 1_000_000
PASSAGE_WORDS = 150


def _corpus() -> tuple[list[str], list[str]]:
    path = Path(os.environ.get("LCG_BENCH_APOLLO", CORPUS))
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "prose" in r]
    names = [r["title"] for r in rows]
    words = [w for r in rows for w in r["prose"].split()]
    passages = [
        " ".join(words[i : i + PASSAGE_WORDS])
        for i in range(0, len(words) - PASSAGE_WORDS, PASSAGE_WORDS)
    ]
    return names, passages


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def _rate(n: int, wall: float, cpu: float) -> str:
    return (
        f"{n / wall:>10,.0f} texts/s wall  {n / max(cpu, 1e-9):>10,.0f} texts/CPU-s"
        f"  ({wall:6.2f} s wall, {cpu:6.2f} s CPU)"
    )


@pytest.mark.bench
def test_embedder_and_cache_bench(tmp_path: Path) -> None:
    names, passages = _corpus()
    names = (names * (N_NAMES // len(names) + 1))[:N_NAMES]
    passages = passages[:N_PASSAGES]
    rows: list[tuple[str, str]] = []

    # -- the embedded model -------------------------------------------------------------
    local = LocalEmbedder()
    load_wall, _ = _timed(local.load)
    rows.append(("local model cold load (sha256 check + session)", f"{load_wall:.2f} s"))
    local.embed(names[:8])  # first-run allocations out of the timings
    wall, cpu = _timed(lambda: local.embed(names))
    local_names_rate = N_NAMES / wall
    rows.append((f"local, {N_NAMES} short names, one call", _rate(N_NAMES, wall, cpu)))
    single_wall, single_cpu = _timed(lambda: [local.embed([n]) for n in names[:N_SINGLE]])
    rows.append(
        (
            f"local, {N_SINGLE} names one per call (baseline)",
            _rate(N_SINGLE, single_wall, single_cpu),
        )
    )
    rows.append(
        ("  speed-up batched / one per call", f"{local_names_rate / (N_SINGLE / single_wall):.1f}x")
    )
    wall, cpu = _timed(lambda: local.embed(passages))
    local_passage_rate = len(passages) / wall
    rows.append(
        (
            f"local, {len(passages)} passages (~190 tokens), one call",
            _rate(len(passages), wall, cpu),
        )
    )
    local.close()

    # -- the hashing test double --------------------------------------------------------
    entity_names = [f"Entity {i} of cluster {i % 997}" for i in range(N_HASH)]
    hasher = HashEmbedder()
    wall, cpu = _timed(lambda: hasher.embed(entity_names))
    rows.append((f"hash, {N_HASH:,} unseen names (cold feature table)", _rate(N_HASH, wall, cpu)))
    wall, cpu = _timed(lambda: hasher.embed(entity_names))
    hash_rate = N_HASH / wall
    rows.append((f"hash, {N_HASH:,} names again (warm)", _rate(N_HASH, wall, cpu)))
    wall, cpu = _timed(lambda: hasher.embed(passages * 25))
    rows.append((f"hash, {len(passages) * 25:,} passages", _rate(len(passages) * 25, wall, cpu)))

    # -- the cache at 384-d: fill, lookup, reopen ---------------------------------------
    vectors = hasher.embed(entity_names)
    cache = EmbeddingCache(tmp_path / "cache", hasher.model_id, hasher.dim)
    wall, cpu = _timed(lambda: cache.put_many(entity_names, vectors))
    cache.flush()
    rows.append((f"cache put_many {N_CACHE:,} x 384-d", _rate(N_CACHE, wall, cpu)))
    cache.close()
    open_wall, _ = _timed(lambda: EmbeddingCache(tmp_path / "cache", hasher.model_id, 384).close())
    rows.append((f"cache open (index of {N_CACHE:,})", f"{open_wall * 1e3:.0f} ms"))
    cache = EmbeddingCache(tmp_path / "cache", hasher.model_id, hasher.dim)
    calls: list[int] = []

    class _Never:
        model_id, dim = hasher.model_id, hasher.dim

        def embed(self, texts: list[str]) -> np.ndarray:
            calls.append(len(texts))
            return hasher.embed(texts)

        def close(self) -> None:
            pass

    out: list[np.ndarray] = []
    wall, cpu = _timed(
        lambda: out.extend(
            embed_with_cache(_Never(), cache, entity_names[i : i + 256])
            for i in range(0, N_CACHE, 256)
        )
    )
    assert not calls, "a warm cache must make no embedder call"
    assert np.array_equal(np.concatenate(out), vectors)
    lookup_rate = N_CACHE / wall
    rows.append(("cache warm embed_with_cache, batches of 256", _rate(N_CACHE, wall, cpu)))
    rows.append(
        (
            "  lookup / recompute with local model (short names)",
            f"{lookup_rate / local_names_rate:,.0f}x",
        )
    )
    rows.append(
        (
            "  lookup / recompute with local model (passages)",
            f"{lookup_rate / local_passage_rate:,.0f}x",
        )
    )
    rows.append(("  lookup / recompute with hash test double", f"{lookup_rate / hash_rate:.2f}x"))
    cache.close()

    # -- the index at a million texts (16-d records keep the disk use at ~52 MB) ---------
    million = [f"text number {i}" for i in range(N_INDEX)]
    small = np.zeros((N_INDEX, 16), dtype=np.float32)
    small[:, 0] = 1.0
    big = EmbeddingCache(tmp_path / "million", "index-bench", 16)
    wall, cpu = _timed(
        lambda: [
            big.put_many(million[i : i + 10_000], small[i : i + 10_000])
            for i in range(0, N_INDEX, 10_000)
        ]
    )
    rows.append((f"cache put_many {N_INDEX:,} (batches of 10k)", _rate(N_INDEX, wall, cpu)))
    big.close()
    holder: list[EmbeddingCache] = []
    open_wall, _ = _timed(
        lambda: holder.append(EmbeddingCache(tmp_path / "million", "index-bench", 16))
    )
    big = holder[0]
    rows.append((f"cache open (index of {N_INDEX:,})", f"{open_wall * 1e3:.0f} ms"))
    probe = million[::100]
    wall, cpu = _timed(lambda: big.get_many(probe))
    assert big.misses == 0
    rows.append((f"cache get_many {len(probe):,} of {N_INDEX:,}", _rate(len(probe), wall, cpu)))
    big.close()

    width = max(len(name) for name, _ in rows)
    print("\n\nEmbedders and embedding cache (lcg.extract.embedders, lcg.projections.cache)")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
