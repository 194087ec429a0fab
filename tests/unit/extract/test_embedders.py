"""The hashing test double's properties, and embedder selection (``make_embedder``)."""

from __future__ import annotations

import os
import random
import socket
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcg.errors import ConfigError, EmbedderError
from lcg.extract._openai_embed import embeddings_endpoint
from lcg.extract.embedders import (
    HASH_MODEL_ID,
    HashEmbedder,
    HttpEmbedder,
    LocalEmbedder,
    UdsEmbedder,
    make_embedder,
)

_VOCAB = [f"w{i}" for i in range(2000)]


def _random_texts(rng: random.Random, n: int, words: int) -> list[str]:
    return [" ".join(rng.choice(_VOCAB) for _ in range(words)) for _ in range(n)]


def test_hash_vectors_are_stable_across_instances_and_call_order() -> None:
    texts = ["Alice met Bob", "Bob met Carol in Paris", "", "Alice"]
    a = HashEmbedder().embed(texts)
    b = HashEmbedder().embed(texts[::-1])[::-1]
    assert np.array_equal(a, b)  # bit-identical: features hash, not arrival order
    # A golden value pins the hashing scheme: changing it must change ``HASH_MODEL_ID``.
    assert HASH_MODEL_ID == "hash-embedder-v1"
    vec = HashEmbedder().embed(["alice bob"])[0]
    assert np.flatnonzero(vec).tolist() == [12, 43, 195, 205, 242, 244]
    # Two unigrams (weight 1) and one bigram (weight 0.5), each on two dimensions.
    np.testing.assert_allclose(sorted(vec[vec > 0] ** 2 * 4.5), [0.25, 0.25, 1, 1, 1, 1], atol=1e-5)


def test_hash_texts_sharing_a_word_have_positive_cosine() -> None:
    rng = random.Random(7)
    emb = HashEmbedder()
    left, right = [], []
    for _ in range(2000):
        shared = rng.choice(_VOCAB)
        left.append(" ".join([*_random_texts(rng, 1, 4), shared]))
        right.append(" ".join([shared, *_random_texts(rng, 1, 4)]))
    cos = np.sum(emb.embed(left) * emb.embed(right), axis=1)
    assert np.all(cos > 0), f"{int(np.sum(cos <= 0))} pairs sharing a word had cosine <= 0"
    assert float(cos.mean()) > 0.15


_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzäß0123456789", min_size=1, max_size=8)
_words = st.lists(_word, max_size=30)


@settings(max_examples=200, deadline=None)
@given(left=_words, right=_words, shared=_word)
def test_hash_sharing_any_word_gives_positive_cosine(
    left: list[str], right: list[str], shared: str
) -> None:
    emb = HashEmbedder(64)  # few dimensions: many collisions, the hardest case
    a, b = emb.embed([" ".join([*left, shared]), " ".join([shared, *right])])
    assert float(a @ b) > 0


def test_hash_unrelated_texts_are_near_orthogonal() -> None:
    rng = random.Random(11)
    emb = HashEmbedder()
    a = emb.embed(_random_texts(rng, 500, 5))
    b = emb.embed(_random_texts(rng, 500, 5))
    cos = np.sum(a * b, axis=1)
    assert np.all(cos >= 0)  # unsigned features: never negative
    assert float(cos.mean()) < 0.06
    assert float(np.quantile(cos, 0.99)) < 0.25


def test_hash_word_order_matters_through_bigrams() -> None:
    emb = HashEmbedder()
    ab, ba, ab2 = emb.embed(["alice likes bob", "bob likes alice", "ALICE likes   bob!"])
    assert np.array_equal(ab, ab2)  # case and punctuation are not features
    assert 0.3 < float(ab @ ba) < 0.99


def test_hash_texts_without_words_get_one_fixed_unit_vector() -> None:
    out = HashEmbedder().embed(["", "   ", "!!!", "—"])
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    assert all(np.array_equal(out[0], row) for row in out)


def test_hash_dim_is_configurable_and_validated() -> None:
    assert HashEmbedder(32).embed(["x y"]).shape == (1, 32)
    with pytest.raises(ConfigError, match="too small"):
        HashEmbedder(4)


def test_hash_feature_table_reset_keeps_vectors_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    import lcg.extract.embedders as mod

    texts = [f"reset check {i}" for i in range(300)]
    expected = HashEmbedder().embed(texts)
    monkeypatch.setattr(mod, "_MEMO_LIMIT", 50)
    emb = HashEmbedder()
    got = np.concatenate([emb.embed(texts[i : i + 30]) for i in range(0, 300, 30)])
    assert np.array_equal(got, expected)
    assert len(emb._cols) < 200  # the table was dropped along the way


def test_hash_closed_raises() -> None:
    emb = HashEmbedder()
    emb.close()
    with pytest.raises(EmbedderError, match="closed"):
        emb.embed(["x"])


# -- selection ---------------------------------------------------------------------------


def test_make_embedder_builds_each_kind_without_contacting_anything() -> None:
    with tempfile.TemporaryDirectory(prefix="lcg-") as d:
        path = os.path.join(d, "e.sock")
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(path)
        kinds = {
            "local": make_embedder("local"),
            "hash": make_embedder("hash", dim=64),
            "http": make_embedder("http", url="http://127.0.0.1:9/v1", model="m"),
            "uds": make_embedder("uds", uds=path, model="m"),
        }
        try:
            assert isinstance(kinds["local"], LocalEmbedder)
            assert isinstance(kinds["hash"], HashEmbedder) and kinds["hash"].dim == 64
            assert type(kinds["http"]) is HttpEmbedder
            assert isinstance(kinds["uds"], UdsEmbedder)
        finally:
            for e in kinds.values():
                e.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "gpu"}, "use local, hash, http or uds"),
        ({"kind": "http"}, "needs a URL"),
        ({"kind": "http", "url": "127.0.0.1:8080"}, "scheme and a host"),
        ({"kind": "http", "url": "ftp://host/x"}, "scheme and a host"),
        ({"kind": "uds"}, "needs a socket path"),
        ({"kind": "uds", "uds": "/nonexistent/e.sock"}, "does not exist"),
        ({"kind": "http", "url": "http://h", "uds": "/x"}, "exclusive"),
        ({"kind": "local", "url": "http://h"}, "takes no URL"),
        ({"kind": "hash", "uds": "/x"}, "takes no URL"),
        ({"kind": "local", "model": "bge-base-en-v1.5"}, "not the embedded model"),
        ({"kind": "local", "dim": 768}, "384 dimensions, not 768"),
        ({"kind": "hash", "dim": 0}, "must be positive"),
    ],
)
def test_make_embedder_rejects_bad_combinations(kwargs: dict[str, object], message: str) -> None:
    kind = str(kwargs.pop("kind"))
    with pytest.raises(ConfigError, match=message):
        make_embedder(kind, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        ("http://h:1", "http://h:1/v1/embeddings"),
        ("http://h:1/", "http://h:1/v1/embeddings"),
        ("http://h:1/v1", "http://h:1/v1/embeddings"),
        ("http://h:1/v1/embeddings", "http://h:1/v1/embeddings"),
        ("https://h/api/openai/v1/", "https://h/api/openai/v1/embeddings"),
    ],
)
def test_embeddings_endpoint(url: str, endpoint: str) -> None:
    assert embeddings_endpoint(url) == endpoint
