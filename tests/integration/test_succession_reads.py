"""Current truth after a supersession on a real workspace (Kuzu, the text and vector
projections; ADR 0211): an asserted ``SUPERSEDES`` between two documents puts the successor
first and marks the old one with the successor's name; a later write extends the chain on
the next read (the remembered supersessions follow the committed positions); the same
relation between entities that are not documents reorders nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.query import Searcher
from lcg.workspace import Workspace

G = "plans"


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    cfg = Config.from_env(tmp_path / "ws", env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(cfg, HashEmbedder()) as opened:
        yield opened


def _searcher(ws: Workspace) -> Searcher:
    return Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)


def _supersede(ws: Workspace, new: str, old: str) -> None:
    assertion.assert_relationship(
        ws,
        source_name=new,
        target_name=old,
        predicate="SUPERSEDES",
        relation_type="SUPERSEDES",
        group_id=G,
    )


def _found(s: Searcher, query: str) -> list[tuple[str, object]]:
    return [
        (r.name, json.loads(r.attributes or "{}").get("superseded_by"))
        for r in s.find_entities(query, [G], 10)
        if "plan" in r.name.lower()
    ]


def test_asserted_supersessions_put_the_successor_first_and_follow_writes(
    ws: Workspace,
) -> None:
    for name in ("Old plan of the launch", "New plan", "Newest plan"):
        assertion.assert_entity(ws, name=name, group_id=G, labels=["Document"])
    s = _searcher(ws)
    assert _found(s, "Old plan of the launch")[0] == ("Old plan of the launch", None)

    _supersede(ws, "New plan", "Old plan of the launch")
    got = _found(s, "Old plan of the launch")
    assert got[:2] == [("New plan", None), ("Old plan of the launch", "New plan")], got

    # A later write is seen by the next read: the chain now ends at the newest plan.
    _supersede(ws, "Newest plan", "New plan")
    got = _found(s, "Old plan of the launch")
    assert [name for name, _ in got[:3]] == ["Newest plan", "New plan", "Old plan of the launch"]
    facts = s.find_relationships("Old plan of the launch", [G], 10)
    assert [f.relation_type for f in facts][:2] == ["SUPERSEDES", "SUPERSEDES"], facts


def test_supersedes_between_entities_that_are_not_documents_reorders_nothing(
    ws: Workspace,
) -> None:
    for name in ("Old plan of the launch", "New plan"):
        assertion.assert_entity(ws, name=name, group_id=G, labels=["Plan"])
    _supersede(ws, "New plan", "Old plan of the launch")
    assert _found(_searcher(ws), "Old plan of the launch")[0] == ("Old plan of the launch", None)
