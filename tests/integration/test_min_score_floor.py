"""``min_score`` means what it says (issue 19 item 9), written from lcg-api.md §3.4 and §4.

The reference's ``knowledge_search_passages``: ``min_score=0.5`` (clamped 0-1); ``score`` =
1 − cosine distance between the query's embedding and the passage's content embedding; keep
``score ≥ min_score``; truncate to ``num_results``, best first. lcg fuses BM25 legs in as well
(docs/compatibility.md): what the floor means must not change for that, and the passages come
in the descending order of a field they show (``fused_score``, ADR 0173).

Against a real ``lcg serve`` (Kuzu, hnswlib, the socket); the hash embedder is the TEST
DOUBLE, recomputed here to know each passage's cosine independently of the service.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import _service_fixtures as sf
from lcg.extract.embedders import HashEmbedder
from lcg.rpc.client import Client

#: Passages that all match "river" by BM25 ("rivers" too, by stemming), at cosines from
#: near 1 down to near 0 under the hash embedder, and one that shares no word.
TEXTS = {
    "p-exact": "river",
    "p-close": "the river",
    "p-cold": "the river was cold in May",
    "p-long": "we walked along the river with the dog every single morning in the spring",
    "p-plural": "we paddled two rivers in Maine",
    "p-other": "a recipe for lemon cake",
}
QUERY = "river"


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[Client, HashEmbedder]]:
    with sf.temp_workspace() as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            with Client(sock, timeout=60) as c:
                for name, text in TEXTS.items():
                    c.call(
                        "knowledge_process_chunk",
                        {"chunk_text": text, "chunk_id": name, "source_file": f"{name}.txt"},
                    )
                dim = int(c.call("knowledge_status").get("embedding_dim") or 384)
                yield c, HashEmbedder(dim)
        finally:
            sf.stop_serve(proc, sock)


def cosine(embedder: HashEmbedder, a: str, b: str) -> float:
    """1 − cosine distance of two texts' embeddings (the rows are unit length)."""
    va, vb = embedder.embed([a, b])
    return float(np.dot(va, vb))


def search(c: Client, **params: Any) -> list[dict[str, Any]]:
    passages: list[dict[str, Any]] = c.call(
        "knowledge_search_passages", {"query": QUERY, **params}
    )["passages"]
    return passages


def test_the_corpus_spans_the_floor(service: tuple[Client, HashEmbedder]) -> None:
    _c, emb = service
    cos = {n: cosine(emb, QUERY, t) for n, t in TEXTS.items()}
    assert cos["p-exact"] > 0.9 and cos["p-close"] >= 0.5
    assert cos["p-cold"] < 0.5 and cos["p-plural"] < 0.3 and cos["p-long"] < 0.3


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
@pytest.mark.parametrize("min_score", [None, 0.0, 0.2, 0.5, 0.6])
def test_every_passage_reaches_min_score_and_every_passage_over_it_is_found(
    service: tuple[Client, HashEmbedder], fusion: str, min_score: float | None
) -> None:
    c, emb = service
    # Omitted, the floor is the embedder's own (ADR 0198): none for the hash double.
    floor = emb.default_min_score if min_score is None else min_score
    params: dict[str, Any] = {"fusion": fusion, "num_results": 100}
    if min_score is not None:
        params["min_score"] = min_score
    found = search(c, **params)
    for p in found:
        assert p["score"] >= floor, (p["name"], p["score"], floor)
    names = {p["name"] for p in found}
    expected = {n for n, t in TEXTS.items() if cosine(emb, QUERY, t) >= floor}
    # The matches of the query's words reach the floor or are left out, whatever the fusion.
    assert names == expected


def test_score_is_one_minus_the_cosine_distance(service: tuple[Client, HashEmbedder]) -> None:
    c, emb = service
    found = search(c, min_score=0.0, num_results=100)
    assert {p["name"] for p in found} == set(TEXTS)
    for p in found:
        assert p["score"] == pytest.approx(cosine(emb, QUERY, TEXTS[p["name"]]), abs=1e-5)


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
def test_the_order_is_that_of_a_field_shown(
    service: tuple[Client, HashEmbedder], fusion: str
) -> None:
    c, _emb = service
    found = search(c, min_score=0.0, num_results=100, fusion=fusion)
    fused = [p["fused_score"] for p in found]
    assert all(isinstance(v, float) for v in fused)
    assert fused == sorted(fused, reverse=True)
    # Truncation keeps the best of that order.
    top = search(c, min_score=0.0, num_results=2, fusion=fusion)
    assert [p["uuid"] for p in top] == [p["uuid"] for p in found[:2]]


def test_clamped_min_score(service: tuple[Client, HashEmbedder]) -> None:
    c, emb = service
    # Clamped 0-1: above 1 nothing reaches it except a cosine of 1; below 0 is 0.
    assert {p["name"] for p in search(c, min_score=-3.0, num_results=100)} == set(TEXTS)
    over = search(c, min_score=7.0, num_results=100)
    assert all(p["score"] >= 1.0 for p in over)
    assert cosine(emb, QUERY, TEXTS["p-close"]) < 1.0
    assert "p-close" not in {p["name"] for p in over}


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
@pytest.mark.parametrize("num_results", [4, 100])
@pytest.mark.parametrize("min_score", [0.5, 0.6])
def test_the_answer_says_how_many_of_its_best_passages_the_floor_left_out(
    service: tuple[Client, HashEmbedder], fusion: str, num_results: int, min_score: float
) -> None:
    c, _emb = service
    # The best num_results with no floor: those under min_score are what the floor takes out.
    unfloored = c.call(
        "knowledge_search_passages",
        {"query": QUERY, "min_score": 0.0, "num_results": num_results, "fusion": fusion},
    )
    assert "filtered_by_min_score" not in unfloored  # nothing left out: the reference's shape
    under = sum(1 for p in unfloored["passages"] if p["score"] < min_score)
    assert under > 0
    floored = c.call(
        "knowledge_search_passages",
        {"query": QUERY, "min_score": min_score, "num_results": num_results, "fusion": fusion},
    )
    assert floored["filtered_by_min_score"] == under
    assert all(p["score"] >= min_score for p in floored["passages"])
