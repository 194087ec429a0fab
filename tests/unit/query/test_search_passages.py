"""Passage search: weighted fusion over chunk and source legs, RRF kept, time bounds and priors.

Real workspace (Kuzu, hnswlib, BM25 files); the hash embedder is a TEST DOUBLE.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import episodes
from lcg.query._when import recency_prior, resolve_windows, time_prior
from lcg.query.search import PassageWeights, Searcher, rrf_fuse
from lcg.workspace import Workspace

NOW = datetime(2023, 5, 30, 10, 0, tzinfo=UTC)


def _cfg(root: Path) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash"})


def _chunk(ws: Workspace, source: str, i: int, text: str, when: str) -> None:
    episodes.process_chunk(
        ws,
        chunk_text=text,
        chunk_id=f"{source}#{i}",
        source_file=source,
        group_id="g",
        reference_time=when,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace.open(_cfg(tmp_path), HashEmbedder())
    # s-walk: the answer, spread over two turns (neither holds both words).
    _chunk(
        ws=workspace,
        source="s-walk",
        i=0,
        text="I adopted a puppy named Rex",
        when="2023-04-10T09:00:00Z",
    )
    _chunk(workspace, "s-walk", 1, "we walk along the river every morning", "2023-04-10T09:00:00Z")
    _chunk(workspace, "s-walk", 2, "the weather was grey", "2023-04-10T09:00:00Z")
    # Distractors: each has one of the words, once, in a short turn, among other turns.
    _chunk(workspace, "s-river", 0, "river cruise tickets", "2023-05-20T09:00:00Z")
    _chunk(workspace, "s-shoes", 0, "the puppy chewed my shoes", "2023-05-21T09:00:00Z")
    for source, when in (("s-river", "2023-05-20T09:00:00Z"), ("s-shoes", "2023-05-21T09:00:00Z")):
        _chunk(workspace, source, 1, "we booked a table for dinner", when)
        _chunk(workspace, source, 2, "the weather was sunny and warm", when)
    for i in range(12):
        _chunk(
            workspace,
            f"s-noise{i}",
            0,
            f"notes about topic {i} and gardening",
            "2023-05-01T09:00:00Z",
        )
    # Said after the asking time used below.
    _chunk(workspace, "s-late", 0, "puppy river walk puppy river walk", "2023-06-15T09:00:00Z")
    return workspace


def _search(ws: Workspace, query: str, **kw: object) -> list[str]:
    searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
    rows = searcher.search_passages(query, ["g"], 10, 0.0, **kw)  # type: ignore[arg-type]
    return [r.name for r in rows]


def test_a_source_that_holds_the_whole_question_ranks_first(ws: Workspace) -> None:
    with ws:
        # The distractors' chunks are shorter, so they win the chunk legs; the source that
        # holds both words wins the source legs, enough to lift its turns above them.
        with_sources = PassageWeights(source_bm25=1.0)
        names = _search(ws, "puppy river", as_of="2023-05-30T00:00:00Z", weights=with_sources)
        assert names[0].startswith("s-walk#")
        assert {"s-walk#0", "s-walk#1"} <= set(names[:3])
        # Without the source legs the answer's turns are no better than the distractors'.
        chunk_only = PassageWeights(
            chunk_bm25=1.0, chunk_vector=1.0, source_bm25=0, source_vector=0
        )
        plain = _search(ws, "puppy river", as_of="2023-05-30T00:00:00Z", weights=chunk_only)
        assert plain[0] in {"s-river#0", "s-shoes#0"}


def test_a_top_source_brings_its_chunks_even_outside_the_chunk_pools(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        # 120 one-word notes fill both chunk pools (50 each) with better chunk scores than
        # either chunk of "both", the one source that holds the whole question.
        for i in range(60):
            _chunk(ws, f"a{i}", 0, "alpha alpha alpha alpha", "2023-05-01T09:00:00Z")
            _chunk(ws, f"b{i}", 0, "beta beta beta beta", "2023-05-01T09:00:00Z")
        _chunk(ws, "both", 0, "alpha gamma", "2023-05-01T09:00:00Z")
        _chunk(ws, "both", 1, "beta delta", "2023-05-01T09:00:00Z")
        searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
        chunk_hits = [u for u, _s, _g in ws.text.search_groups(["g"], "episode", "alpha beta", 50)]
        assert not {ws.text.sources_of("g", [u]).get(u) for u in chunk_hits} & {"both"}
        assert ws.text.search_sources(["g"], "alpha beta", 1)[0][0] == "both"
        sources_first = PassageWeights(chunk_bm25=0.0, source_bm25=1.0)
        rows = searcher.search_passages(
            "alpha beta", ["g"], 10, 0.0, mode="bm25", weights=sources_first
        )
        assert {r.name for r in rows[:2]} == {"both#0", "both#1"}


def test_as_of_and_bounds_leave_out_passages_outside_them(ws: Workspace) -> None:
    with ws:
        assert "s-late#0" in _search(ws, "puppy river walk")
        assert "s-late#0" not in _search(ws, "puppy river walk", as_of="2023-05-30T00:00:00Z")
        names = _search(
            ws,
            "puppy river walk",
            valid_after="2023-05-01T00:00:00Z",
            valid_before="2023-05-31T00:00:00Z",
        )
        assert names[:2] == ["s-river#0", "s-shoes#0"]
        assert not {n.split("#")[0] for n in names} & {"s-walk", "s-late"}
        rrf = _search(ws, "puppy river walk", fusion="rrf", as_of="2023-05-30T00:00:00Z")
        assert rrf and "s-late#0" not in rrf
        with pytest.raises(ValueError):
            _search(ws, "puppy", as_of="last tuesday")


def test_rrf_mode_is_the_reference_fusion(ws: Workspace) -> None:
    with ws:
        searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
        query = "puppy river"
        got = [r.uuid for r in searcher.search_passages(query, ["g"], 5, 0.0, fusion="rrf")]
        # The reference: RRF (k=60) over the BM25 and vector passage legs of 3n each.
        lex = [u for u, _s, _g in ws.text.search_groups(["g"], "episode", query, 15)]
        qvec = ws.text_embedder.vectors([query])[query]
        vec = [u for u, _s, _g in ws.vectors.search_groups(["g"], "episode.content", qvec, 15)]
        assert got == [u for u, _ in rrf_fuse([lex, vec])][:5]


def test_a_relative_time_in_the_query_favours_passages_near_it(ws: Workspace) -> None:
    with ws:
        timed = PassageWeights(time=1.0)
        query = "puppy last month"
        names = _search(ws, query, as_of="2023-05-30T00:00:00Z", weights=timed)
        # s-walk (10 April) is in "last month" (April); s-shoes (21 May) is not.
        assert names.index("s-walk#0") < names.index("s-shoes#0")
        untimed = _search(ws, query, as_of="2023-05-30T00:00:00Z", weights=PassageWeights(time=0))
        assert untimed.index("s-shoes#0") < untimed.index("s-walk#0")


def test_the_recency_prior_halves_with_every_half_life() -> None:
    assert recency_prior(NOW, NOW, 5.0) == 1.0
    assert recency_prior(datetime(2023, 5, 25, 10, 0, tzinfo=UTC), NOW, 5.0) == 0.5
    assert recency_prior(datetime(2023, 5, 20, 10, 0, tzinfo=UTC), NOW, 5.0) == 0.25
    assert recency_prior(datetime(2023, 6, 9, tzinfo=UTC), NOW, 5.0) == 1.0  # after: new
    assert recency_prior(datetime(2023, 5, 25, tzinfo=UTC), NOW, 0.0) == 0.0  # off


def test_recency_decides_between_near_equal_passages(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        # The older passage matches a little better (it is shorter); the newer one is recent.
        _chunk(ws, "old", 0, "kayak trip on the lake", "2023-01-05T09:00:00Z")
        _chunk(ws, "new", 0, "kayak trip on the lake with friends", "2023-05-29T09:00:00Z")
        for i in range(6):
            _chunk(ws, f"noise{i}", 0, f"garden notes {i}", "2023-03-01T09:00:00Z")
        asked = "2023-05-30T00:00:00Z"
        assert _search(ws, "kayak trip", as_of=asked)[:2] == ["new#0", "old#0"]
        off = _search(ws, "kayak trip", as_of=asked, recency_half_life_days=0.0)
        assert off[:2] == ["old#0", "new#0"]
        # Asked long after both, the prior is near zero for both: the better match wins.
        late = _search(ws, "kayak trip", as_of="2026-01-01T00:00:00Z")
        assert late[:2] == ["old#0", "new#0"]
        # The reference's fusion has no prior.
        rrf = _search(ws, "kayak trip", as_of=asked, fusion="rrf", mode="bm25")
        assert rrf[:2] == ["old#0", "new#0"]


def test_relative_expressions_resolve_to_windows() -> None:
    def days(query: str) -> list[tuple[str, str]]:
        return [
            (a.date().isoformat(), b.date().isoformat()) for a, b in resolve_windows(query, NOW)
        ]

    assert days("which shoes did I clean last month?") == [("2023-04-01", "2023-05-01")]
    assert days("what did I do last Saturday") == [("2023-05-27", "2023-05-28")]
    assert days("two months ago I bought a smoker") == [("2023-03-16", "2023-04-16")]
    assert days("the past 3 days") == [("2023-05-27", "2023-05-31")]
    assert days("yesterday") == [("2023-05-29", "2023-05-30")]
    assert days("what did I plant in May?") == [("2023-05-01", "2023-06-01")]
    assert days("I may plant tomatoes") == []  # the verb
    assert days("in December") == [("2022-12-01", "2023-01-01")]  # the last one that passed
    window = resolve_windows("last month", NOW)
    assert time_prior(datetime(2023, 4, 15, tzinfo=UTC), window) == 1.0
    near = time_prior(datetime(2023, 5, 3, tzinfo=UTC), window)
    far = time_prior(datetime(2022, 5, 3, tzinfo=UTC), window)
    assert 1.0 > near > far > 0.0


def test_an_old_text_snapshot_is_replayed_through_the_new_analyzer(tmp_path: Path) -> None:
    import msgspec

    from lcg.events.groups import encode_group
    from lcg.projections import text as text_module
    from lcg.projections._checksum import unseal

    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        _chunk(ws, "trip", 0, "we paddled two rivers in Maine", "2023-04-10T09:00:00Z")
        _chunk(ws, "trip", 1, "then we slept in a tent", "2023-04-10T09:00:00Z")
    path = tmp_path / ".lcg" / "text" / (encode_group("g") + text_module.SNAPSHOT_SUFFIX)
    snap = msgspec.msgpack.decode(unseal(path.read_bytes())[0], type=text_module._GroupSnapshot)
    # As lcg wrote it before the stemmer: format 1, unstemmed terms, no source index.
    path.write_bytes(
        msgspec.msgpack.encode(
            {
                "format": 1,
                "group_id": "g",
                "generation": snap.generation,
                "seq": snap.seq,
                "kinds": snap.kinds,
            }
        )
    )
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        assert ws.text.discarded_groups == ["g"]
        assert ws.text.position("g").seq == snap.seq  # replayed on open
        assert [
            r.name
            for r in Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder).search_passages(
                "river tent", ["g"], 2, 0.0, mode="bm25"
            )
        ] == ["trip#1", "trip#0"]  # "tent" is rarer; "river" matches "rivers"
        assert ws.text.search_sources(["g"], "river", 1)[0][0] == "trip"


def test_extracted_names_and_facts_are_keys_of_their_passage(tmp_path: Path) -> None:
    from lcg.events.model import EdgeRecord, EntityRecord, EpisodeExtracted

    ts = "2023-04-10T09:00:00.000000Z"
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        _chunk(ws, "log", 0, "He climbed down the ladder and stepped onto the surface", ts)
        _chunk(ws, "log", 1, "The crew slept for a few hours", ts)
        searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)

        def lexical(query: str) -> list[str]:
            rows = searcher.search_passages(query, ["g"], 5, 0.0, mode="bm25")
            return [r.name for r in rows]

        # Before extraction the pronoun hides who it was.
        assert lexical("Armstrong") == []
        rows = searcher.search_passages("ladder", ["g"], 1, 0.0, mode="bm25")
        target = rows[0].uuid
        neil = EntityRecord(uuid="n1", name="Neil Armstrong", labels=["Person"], created_at=ts)
        moon = EntityRecord(uuid="m1", name="Moon", labels=["Place"], created_at=ts)
        fact = EdgeRecord(
            uuid="f1",
            name="WALKED_ON",
            source_uuid="n1",
            target_uuid="m1",
            fact="Neil Armstrong walked on the Moon",
            created_at=ts,
        )
        ws.commit(
            "g",
            [
                EpisodeExtracted(
                    group_id="g",
                    episode_uuid=target,
                    entities_created=[neil, moon],
                    edges_created=[fact],
                    mentions=["n1", "m1"],
                )
            ],
        )
        assert lexical("Armstrong") == ["log#0"]
        assert lexical("walking on the moon") == ["log#0"]
        # The passage itself is unchanged; only its keys grew.
        assert searcher.search_passages("Armstrong", ["g"], 1, 0.0)[0].content.startswith("He ")
    # A replay rebuilds the same keys.
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        digest = ws.text.digest("g")
    import shutil

    shutil.rmtree(tmp_path / ".lcg" / "text")
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        assert ws.text.digest("g") == digest
        rows = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder).search_passages(
            "Armstrong", ["g"], 5, 0.0, mode="bm25"
        )
        assert [r.name for r in rows] == ["log#0"]
