"""A passage search's defaults (ADR 0198): the embedder's own floor, what the floor left out,
and the recency prior for what was said but not for chunks of files.

Real workspace (Kuzu, hnswlib, BM25 files); the hash embedder is a TEST DOUBLE.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import episodes
from lcg.ingest.sources import scan_tree
from lcg.projections import Delete
from lcg.query import FloorReport, Searcher, is_file_chunk
from lcg.workspace import Workspace

AS_OF = "2024-06-01T12:00:00Z"
RECENT = "2024-05-31T12:00:00Z"
OLD = "2022-06-01T12:00:00Z"
TEXT = "the river cruise left at noon"


def _ws(root: Path, embedder: HashEmbedder | None = None) -> Workspace:
    cfg = Config.from_env(root, env={"LCG_EMBEDDER": "hash"})
    return Workspace.open(cfg, embedder or HashEmbedder())


def _chunk(ws: Workspace, chunk_id: str, source_file: str, text: str, when: str) -> None:
    episodes.process_chunk(
        ws,
        chunk_text=text,
        chunk_id=chunk_id,
        source_file=source_file,
        group_id="g",
        reference_time=when,
    )


def test_every_chunk_a_tree_sync_cuts_is_a_file_chunk(tmp_path: Path) -> None:
    tree = tmp_path / "notes"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.md").write_text("# One\n\nalpha text\n\n# Two\n\nbeta text\n", encoding="utf-8")
    # Two sections with the same text: the second chunk id carries a ``~2``.
    (tree / "sub" / "b.txt").write_text("same\n\n" * 3000, encoding="utf-8")
    (tree / "c.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    chunks = [c for f in scan_tree(tree).files for c in f.chunks]
    assert len(chunks) >= 4 and any("~" in c.chunk_id for c in chunks)
    for c in chunks:
        assert is_file_chunk(c.chunk_id, f"{c.source_file}:{c.chunk_id}"), c.chunk_id


@pytest.mark.parametrize(
    ("name", "description"),
    [
        ("answer_4be1b6b4_2#0", "answer_4be1b6b4_2:answer_4be1b6b4_2#0"),  # a conversation turn
        ("apollo.md#3", "apollo.md:apollo.md#3"),  # a client's own chunk ids
        ("Moon landing#0", "Moon landing:Moon landing#0"),
        ("episode 1", ""),  # knowledge_add_episode
        ("notes/a.md#0123456789ab", "notes/b.md:notes/a.md#0123456789ab"),  # another file's
        ("notes/a.md#0123456789ab", "notes/a.md#0123456789ab"),  # no source file
        ("notes/a.md#0123456789AB", "notes/a.md:notes/a.md#0123456789AB"),
        ("notes/a.md#0123456789abc", "notes/a.md:notes/a.md#0123456789abc"),
    ],
)
def test_other_episodes_are_not_file_chunks(name: str, description: str) -> None:
    assert not is_file_chunk(name, description)


def _fused(ws: Workspace, **kw: object) -> dict[str, float]:
    searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
    rows = searcher.search_passages(TEXT, ["g"], 10, 0.0, as_of=AS_OF, **kw)  # type: ignore[arg-type]
    return {r.name: r.fused_score for r in rows}


def test_the_recency_prior_weighs_what_was_said_and_not_files(tmp_path: Path) -> None:
    with _ws(tmp_path) as ws:
        # The same text four times, each its own source: every leg scores them alike, and
        # only the time priors can tell them apart.
        for name, when in (("talk-old#0", OLD), ("talk-new#0", RECENT)):
            _chunk(ws, name, name.split("#")[0], TEXT, when)
        for path, when in (("notes/old.md", OLD), ("notes/new.md", RECENT)):
            _chunk(ws, f"{path}#0123456789ab", path, TEXT, when)
        fused = _fused(ws)
        assert fused["talk-new#0"] > fused["talk-old#0"]  # a day old against two years
        # A file's age says nothing of its relevance: no bonus either way.
        assert fused["notes/new.md#0123456789ab"] == fused["notes/old.md#0123456789ab"]
        assert fused["notes/old.md#0123456789ab"] == pytest.approx(fused["talk-old#0"], abs=1e-4)
        # Without the prior, all four are alike.
        flat = _fused(ws, recency_half_life_days=0.0)
        assert len(set(flat.values())) == 1
        assert flat["notes/new.md#0123456789ab"] == fused["notes/new.md#0123456789ab"]


def _river(ws: Workspace) -> None:
    texts = {
        "exact": "river",
        "close": "the river",
        "cold": "the river was cold in May",
        "long": "we walked along the river with the dog every single morning in the spring",
        "other": "a recipe for lemon cake",
    }
    for name, text in texts.items():
        _chunk(ws, f"{name}#0", name, text, RECENT)


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
@pytest.mark.parametrize("floor", [0.0, 0.45, 0.9])
def test_min_score_omitted_is_the_embedders_floor(
    tmp_path: Path, fusion: str, floor: float
) -> None:
    embedder = HashEmbedder()
    embedder.default_min_score = floor
    with _ws(tmp_path, embedder) as ws:
        _river(ws)
        searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
        implicit, explicit = FloorReport(), FloorReport()
        by_default = searcher.search_passages("river", ["g"], 3, fusion=fusion, report=implicit)  # type: ignore[arg-type]
        named = searcher.search_passages("river", ["g"], 3, floor, fusion=fusion, report=explicit)  # type: ignore[arg-type]
        assert [r.uuid for r in by_default] == [r.uuid for r in named]
        assert all(r.score >= floor for r in by_default)
        assert implicit.min_score == explicit.min_score == floor
        assert implicit.filtered_by_min_score == explicit.filtered_by_min_score
        assert implicit.by_default and not explicit.by_default
        # The report counts the passages of the unfloored best three that the floor took out.
        best = searcher.search_passages("river", ["g"], 3, 0.0, fusion=fusion)  # type: ignore[arg-type]
        assert implicit.filtered_by_min_score == sum(1 for r in best if r.score < floor)
        assert (implicit.filtered_by_min_score == 0) == (floor == 0.0)


def test_a_floor_that_empties_the_answer_counts_what_it_took(tmp_path: Path) -> None:
    with _ws(tmp_path) as ws:
        _river(ws)
        searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
        report = FloorReport()
        # No passage reaches a cosine of 1 but "river" itself, and the query is not it.
        rows = searcher.search_passages("cold river spring", ["g"], 2, 1.0, report=report)
        assert rows == []
        assert report.filtered_by_min_score == 2 and report.min_score == 1.0
        # The bm25 mode has no cosine to judge: its word matches are kept, nothing filtered.
        report = FloorReport()
        rows = searcher.search_passages(
            "cold river spring", ["g"], 2, 1.0, mode="bm25", report=report
        )
        assert rows and report.filtered_by_min_score == 0


def test_a_passage_whose_vector_is_not_stored_yet_is_judged_by_its_words(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    embedder.default_min_score = 0.9
    with _ws(tmp_path, embedder) as ws:
        _river(ws)
        searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
        cold = next(
            r for r in searcher.search_passages("river", ["g"], 10, 0.0) if r.name == "cold#0"
        )
        # Its vector is gone from the vector projection (as while it is being computed, or
        # while the embedder is away); its text is searchable.
        at = ws.vectors.position("g")
        assert at.generation is not None and at.seq is not None
        ws.vectors.apply(
            "g", at.generation, at.seq, [Delete(kind="episode", group_id="g", uuid=cold.uuid)], {}
        )
        assert ws.vectors.get_vector("g", "episode.content", cold.uuid) is None
        # The embedder's default floor cannot judge it: a BM25 hit, it is kept (score 0.0)...
        found = {r.name: r.score for r in searcher.search_passages("river", ["g"], 10)}
        assert found["cold#0"] == 0.0 and found["exact#0"] > 0.9
        assert "long#0" not in found  # ...while a passage with a vector is judged by it
        # ...and one that matches no query word is not brought in by it.
        assert {r.name for r in searcher.search_passages("cold", ["g"], 10)} == {"cold#0"}
        # An explicit min_score is the reference's floor: a missing vector scores 0.0.
        named = {r.name for r in searcher.search_passages("river", ["g"], 10, 0.9)}
        assert "cold#0" not in named and "exact#0" in named
