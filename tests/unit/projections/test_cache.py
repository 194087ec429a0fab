"""The embedding cache: hits after put, reopen, torn and damaged shards, deletion, threads."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcg.errors import EmbedderError, ProjectionError
from lcg.extract.embedders import HashEmbedder
from lcg.projections.cache import EmbeddingCache, cache_dir_name, embed_with_cache

DIM = 16


class CountingEmbedder:
    """A TEST DOUBLE: the hashing embedder, recording every call it gets."""

    def __init__(self, dim: int = DIM) -> None:
        self._inner = HashEmbedder(dim)
        self.model_id = self._inner.model_id
        self.dim = dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        return self._inner.embed(texts)

    def close(self) -> None:
        self._inner.close()


def _vectors(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    return HashEmbedder(DIM).embed(texts)


def _open(root: Path, **kw: int) -> EmbeddingCache:
    return EmbeddingCache(root, "hash-embedder-v1", DIM, **kw)


def test_miss_then_hit_after_put(tmp_path: Path) -> None:
    with _open(tmp_path) as cache:
        texts = ["alpha", "beta", "alpha", "gamma"]
        hits, misses = cache.get_many(texts)
        assert hits == {} and misses == ["alpha", "beta", "gamma"]  # distinct, first order
        assert cache.put_many(["alpha", "beta", "gamma"], _vectors(["alpha", "beta", "gamma"])) == 3
        hits, misses = cache.get_many(texts + ["delta"])
        assert misses == ["delta"]
        assert set(hits) == {"alpha", "beta", "gamma"}
        for text, vec in hits.items():
            assert vec.dtype == np.float32
            assert np.array_equal(vec, _vectors([text])[0])
        assert (cache.hits, cache.misses) == (3, 4)
        assert len(cache) == 3
        # Already stored texts and repeats within a call are not written twice.
        assert (
            cache.put_many(["alpha", "delta", "delta"], _vectors(["alpha", "delta", "delta"])) == 1
        )
        assert len(cache) == 4


def test_layout_is_model_and_dim_named(tmp_path: Path) -> None:
    with _open(tmp_path) as cache:
        cache.put_many(["x"], _vectors(["x"]))
    assert cache.path == tmp_path / "hash-embedder-v1-16"
    names = sorted(p.name for p in cache.path.iterdir())
    assert names == [".lock", "000000.keys", "000000.vecs", "meta.json"]
    assert (cache.path / "000000.keys").stat().st_size == 36
    assert (cache.path / "000000.vecs").stat().st_size == DIM * 4


def test_dir_names_are_filesystem_safe_and_distinct() -> None:
    assert cache_dir_name("all-MiniLM-L6-v2-int8", 384) == "all-MiniLM-L6-v2-int8-384"
    a = cache_dir_name("BAAI/bge-base-en-v1.5", 768)
    b = cache_dir_name("BAAI_bge-base-en-v1.5", 768)
    assert "/" not in a and a != b and a.endswith("-768")
    assert not cache_dir_name("..", 8).startswith(".")


def test_reopen_finds_everything_across_shards(tmp_path: Path) -> None:
    texts = [f"text {i}" for i in range(35)]
    with _open(tmp_path, shard_records=10) as cache:
        cache.put_many(texts, _vectors(texts))
        hits, misses = cache.get_many(texts)  # reads unflushed records of the last shard
        assert not misses
    shards = sorted(p.name for p in cache.path.glob("*.keys"))
    assert shards == ["000000.keys", "000001.keys", "000002.keys", "000003.keys"]
    # The shard size is a property of the directory (meta.json), not of the caller.
    with _open(tmp_path, shard_records=1000) as cache:
        hits, misses = cache.get_many(texts[::-1])
        assert not misses and len(cache) == 35
        assert all(np.array_equal(hits[t], v) for t, v in zip(texts, _vectors(texts), strict=True))
        cache.put_many(["text 35"], _vectors(["text 35"]))
    assert (cache.path / "000003.keys").stat().st_size == 6 * 36


def test_torn_tail_is_cut_back_to_whole_records(tmp_path: Path) -> None:
    texts = [f"t{i}" for i in range(5)]
    with _open(tmp_path) as cache:
        cache.put_many(texts, _vectors(texts))
    keys, vecs = cache.path / "000000.keys", cache.path / "000000.vecs"
    # A crash mid-append: half a key record, and a vector with no key at all.
    with keys.open("ab") as f:
        f.write(b"\x01" * 20)
    with vecs.open("ab") as f:
        f.write(b"\x02" * (DIM * 4 + 7))
    with _open(tmp_path) as cache:
        assert keys.stat().st_size == 5 * 36
        assert vecs.stat().st_size == 5 * DIM * 4
        hits, misses = cache.get_many(texts)
        assert not misses
        cache.put_many(["t5"], _vectors(["t5"]))
    with _open(tmp_path) as cache:
        assert not cache.get_many([*texts, "t5"])[1]


def test_key_without_its_vector_reads_as_a_miss(tmp_path: Path) -> None:
    texts = ["one", "two", "three"]
    with _open(tmp_path) as cache:
        cache.put_many(texts, _vectors(texts))
    vecs = cache.path / "000000.vecs"
    with vecs.open("r+b") as f:
        f.truncate(2 * DIM * 4 + 5)  # the last vector only partly reached the disk
    with _open(tmp_path) as cache:
        hits, misses = cache.get_many(texts)
        assert misses == ["three"] and set(hits) == {"one", "two"}


def test_damaged_vector_is_a_miss_never_a_wrong_vector(tmp_path: Path) -> None:
    texts = ["red", "green", "blue"]
    with _open(tmp_path) as cache:
        cache.put_many(texts, _vectors(texts))
    vecs = cache.path / "000000.vecs"
    data = bytearray(vecs.read_bytes())
    data[DIM * 4 + 3] ^= 0xFF  # a flipped bit in "green"
    vecs.write_bytes(bytes(data))
    with _open(tmp_path) as cache:
        hits, misses = cache.get_many(texts)
        assert misses == ["green"] and cache.corrupt == 1
        assert cache.put_many(["green"], _vectors(["green"])) == 1  # stored again
        assert cache.get_many(["green"])[1] == []
    with _open(tmp_path) as cache:  # the later record wins on reopen
        hits, misses = cache.get_many(texts)
        assert not misses and np.array_equal(hits["green"], _vectors(["green"])[0])


def test_unreadable_or_foreign_meta_is_an_error_with_a_remedy(tmp_path: Path) -> None:
    with _open(tmp_path) as cache:
        cache.put_many(["x"], _vectors(["x"]))
    meta = cache.path / "meta.json"
    meta.write_bytes(meta.read_bytes().replace(b'"dim":16', b'"dim":32'))
    with pytest.raises(ProjectionError, match=r"dim 32, not .*dim 16; delete .*nothing is lost"):
        _open(tmp_path)
    meta.write_bytes(b"{not json")
    with pytest.raises(ProjectionError, match="meta.json is unreadable"):
        _open(tmp_path)
    meta.unlink()
    with pytest.raises(ProjectionError, match="has shards but no meta.json"):
        _open(tmp_path)
    shutil.rmtree(cache.path)  # the remedy
    with _open(tmp_path) as fresh:
        assert len(fresh) == 0


def test_second_writer_is_read_only(tmp_path: Path) -> None:
    with _open(tmp_path) as first:
        first.put_many(["a"], _vectors(["a"]))
        first.flush()
        with _open(tmp_path) as second:
            assert second.read_only and not first.read_only
            assert second.get_many(["a"])[1] == []
            assert second.put_many(["b"], _vectors(["b"])) == 0
    with _open(tmp_path) as again:  # the lock went with the first cache
        assert not again.read_only and len(again) == 1


def test_shape_is_checked_and_closed_cache_refuses(tmp_path: Path) -> None:
    cache = _open(tmp_path)
    with pytest.raises(ProjectionError, match=r"shape \(2, 16\), got \(2, 8\)"):
        cache.put_many(["a", "b"], np.zeros((2, 8), dtype=np.float32))
    cache.close()
    cache.close()
    with pytest.raises(ProjectionError, match="closed"):
        cache.get_many(["a"])


def test_odd_texts_are_keys_like_any_other(tmp_path: Path) -> None:
    texts = ["", " ", "\ud800 lone surrogate", "ünïcödé", "x" * 100_000]
    with _open(tmp_path) as cache:
        cache.put_many(texts, _vectors(texts))
        assert cache.get_many(texts)[1] == []


# -- embed_with_cache ----------------------------------------------------------------------


def test_embed_with_cache_calls_the_embedder_once_for_the_misses(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    with _open(tmp_path) as cache:
        out = embed_with_cache(emb, cache, ["a b", "c", "a b"])
        assert emb.calls == [["a b", "c"]]
        assert np.array_equal(out, _vectors(["a b", "c", "a b"]))
        out = embed_with_cache(emb, cache, ["c", "d", "a b", "e", "d"])
        assert emb.calls[1:] == [["d", "e"]]
        assert np.array_equal(out, _vectors(["c", "d", "a b", "e", "d"]))
        embed_with_cache(emb, cache, ["e", "a b"])
        assert len(emb.calls) == 2  # all cached: no call at all
        assert embed_with_cache(emb, cache, []).shape == (0, DIM)
        assert len(emb.calls) == 2


def test_deleting_the_cache_changes_no_result(tmp_path: Path) -> None:
    texts = [f"episode {i} mentions entity {i % 7}" for i in range(200)]
    emb = CountingEmbedder()
    with _open(tmp_path) as cache:
        first = embed_with_cache(emb, cache, texts)
    with _open(tmp_path) as cache:
        warm = embed_with_cache(emb, cache, texts)
    assert len(emb.calls) == 1  # the warm pass was served from disk
    shutil.rmtree(tmp_path)
    with _open(tmp_path) as cache:
        cold = embed_with_cache(emb, cache, texts)
    assert len(emb.calls) == 2
    assert np.array_equal(first, warm) and np.array_equal(first, cold)


def test_embed_with_cache_refuses_another_models_cache(tmp_path: Path) -> None:
    with _open(tmp_path) as cache, pytest.raises(EmbedderError, match="does not match"):
        embed_with_cache(CountingEmbedder(dim=32), cache, ["x"])


def test_embed_with_cache_checks_the_embedders_shape(tmp_path: Path) -> None:
    class ShortEmbedder(CountingEmbedder):
        """A TEST DOUBLE that drops the last vector."""

        def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            return super().embed(texts)[:-1]

    with _open(tmp_path) as cache, pytest.raises(EmbedderError, match="shape mismatch"):
        embed_with_cache(ShortEmbedder(), cache, ["x", "y"])


def test_threads_share_one_cache(tmp_path: Path) -> None:
    emb = HashEmbedder(DIM)
    texts = [f"shared text {i}" for i in range(400)]
    errors: list[BaseException] = []
    with _open(tmp_path, shard_records=64) as cache:

        def work(k: int) -> None:
            try:
                for start in range(0, 400, 25):
                    chunk = texts[(start + k * 50) % 400 :][:25]
                    assert np.array_equal(embed_with_cache(emb, cache, chunk), emb.embed(chunk))
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert len(cache) == 400
    with _open(tmp_path) as cache:
        assert len(cache) == 400 and cache.get_many(texts)[1] == []


# -- model-based: the cache behaves like a dict that survives reopening ---------------------

_ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.lists(st.sampled_from([f"k{i}" for i in range(30)]))),
        st.tuples(st.just("get"), st.lists(st.sampled_from([f"k{i}" for i in range(30)]))),
        st.tuples(st.just("reopen"), st.just([])),
    ),
    max_size=25,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_ops)
def test_cache_matches_a_dict_model(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, list[str]]]
) -> None:
    root = tmp_path_factory.mktemp("model")
    model: set[str] = set()
    cache = _open(root, shard_records=7)
    try:
        for op, keys in ops:
            if op == "put":
                cache.put_many(keys, _vectors(keys))
                model.update(keys)
            elif op == "get":
                hits, misses = cache.get_many(keys)
                assert set(hits) == {k for k in keys if k in model}
                assert misses == list(dict.fromkeys(k for k in keys if k not in model))
                for k, v in hits.items():
                    assert np.array_equal(v, _vectors([k])[0])
            else:
                cache.close()
                cache = _open(root, shard_records=7)
            assert len(cache) == len(model)
    finally:
        cache.close()


def test_half_a_shard_pair_and_shards_past_a_gap_are_dropped(tmp_path: Path) -> None:
    texts = [f"s{i}" for i in range(25)]
    with _open(tmp_path, shard_records=10) as cache:
        cache.put_many(texts, _vectors(texts))
    # Shard 1 is deleted by hand: shard 2 is unreachable; and shard 0 loses its vectors.
    (cache.path / "000001.keys").unlink()
    (cache.path / "000001.vecs").unlink()
    (cache.path / "000000.vecs").unlink()
    with _open(tmp_path, shard_records=10) as cache:
        assert len(cache) == 0
        assert sorted(p.name for p in cache.path.glob("0*")) == ["000000.keys", "000000.vecs"]
        cache.put_many(texts, _vectors(texts))
    with _open(tmp_path, shard_records=10) as cache:
        hits, misses = cache.get_many(texts)
        assert not misses
        assert all(np.array_equal(hits[t], v) for t, v in zip(texts, _vectors(texts), strict=True))


def test_for_embedder_names_the_workspace_layout(tmp_path: Path) -> None:
    with EmbeddingCache.for_embedder(tmp_path / ".lcg" / "cache", HashEmbedder(DIM)) as cache:
        assert cache.path == tmp_path / ".lcg" / "cache" / "embeddings" / "hash-embedder-v1-16"
        assert (cache.model_id, cache.dim) == ("hash-embedder-v1", DIM)


def test_a_full_disk_skips_the_store_and_the_cache_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    import lcg.projections.cache as cache_module

    cache = EmbeddingCache(tmp_path, "m", DIM)
    cache.put_many(["a"], _vectors(["a"]))
    real_write = os.write
    calls = [0]

    def full_on_keys(fd: int, data: bytes | memoryview) -> int:
        # The vectors reach the file, then the keys hit a full disk: both are taken back.
        calls[0] += 1
        if calls[0] == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(cache_module.os, "write", full_on_keys)
    assert cache.put_many(["b", "c"], _vectors(["b", "c"])) == 0
    monkeypatch.undo()
    assert cache.fault is not None and cache.fault.startswith("disk full writing ")
    assert cache.write_errors == 1
    # Reads go on while stores fail, and the files hold whole records only.
    hits, misses = cache.get_many(["a", "b"])
    assert list(hits) == ["a"] and misses == ["b"]
    shard = tmp_path / cache_dir_name("m", DIM)
    assert (shard / "000000.vecs").stat().st_size == DIM * 4
    assert (shard / "000000.keys").stat().st_size == 36
    # Space is back: the next store succeeds and clears the fault.
    assert cache.put_many(["b", "c"], _vectors(["b", "c"])) == 2
    assert cache.fault is None
    cache.close()
    with EmbeddingCache(tmp_path, "m", DIM) as again:
        hits, misses = again.get_many(["a", "b", "c"])
        assert misses == []
        np.testing.assert_array_equal(hits["c"], _vectors(["c"])[0])
