"""The shaping of a page by current supersessions (ADR 0211): successors first, chains
followed, cycles cut, the answer kept to its size, the old rows marked. The graph lookup
itself is exercised through ``lcg ingest`` in ``tests/e2e/test_supersedes_current_truth.py``."""

from __future__ import annotations

import json
from collections.abc import Callable

from lcg.projections.graph.rows import EdgeRow, EntityRow
from lcg.query._passage_rules import PassageRow
from lcg.query._succession import (
    Succession,
    _Edge,
    entities_first,
    facts_first,
    passages_after,
)


def _entity(uuid: str, attributes: str = "{}") -> EntityRow:
    return EntityRow(
        uuid=uuid,
        name=uuid.upper(),
        group_id="g",
        labels=["Entity", "Document"],
        created_at="",
        summary="",
        attributes=attributes,
    )


def _fact(uuid: str, src: str, dst: str, rel: str = "LINKS_TO") -> EdgeRow:
    return EdgeRow(
        uuid=uuid,
        name=rel,
        source_node_uuid=src,
        target_node_uuid=dst,
        group_id="g",
        fact=f"{src} {rel} {dst}",
        created_at="",
        valid_at=None,
        invalid_at=None,
        attributes="{}",
        relation_type=rel,
    )


def _passage(uuid: str, file: str) -> PassageRow:
    name = f"{file}#{uuid}"
    return PassageRow(
        uuid=uuid,
        name=name,
        content="",
        source_description=f"{file}:{name}",
        group_id="g",
        created_at="",
        valid_at=None,
        score=0.0,
        fused_score=1.0,
    )


def _sup(new: str, old: str) -> _Edge:
    return _Edge(
        uuid=f"s-{new}-{old}",
        new=new,
        new_name=new.upper(),
        new_file=f"v/{new}.md",
        old=old,
        old_file=f"v/{old}.md",
    )


def _reader(
    rows: list[EntityRow],
) -> tuple[list[list[str]], Callable[[list[str]], list[EntityRow]]]:
    asked: list[list[str]] = []
    by_uuid = {r.uuid: r for r in rows}

    def read(uuids: list[str]) -> list[EntityRow]:
        asked.append(list(uuids))
        return [by_uuid[u] for u in uuids if u in by_uuid]

    return asked, read


def test_a_page_without_a_supersession_is_unchanged_and_reads_nothing() -> None:
    rows = [_entity("a"), _entity("x")]
    asked, read = _reader([])
    assert entities_first(rows, Succession([_sup("c", "d")]), read, 10) is rows
    assert entities_first(rows, Succession(), read, 10) is rows
    assert asked == []


def test_the_successor_comes_first_added_when_absent_and_the_old_one_is_marked() -> None:
    asked, read = _reader([_entity("b")])
    got = entities_first([_entity("a"), _entity("x")], Succession([_sup("b", "a")]), read, 10)
    assert [r.uuid for r in got] == ["b", "a", "x"]
    assert asked == [["b"]]
    assert json.loads(got[1].attributes)["superseded_by"] == "B"
    assert "superseded_by" not in json.loads(got[0].attributes)
    # A stored mark (the declared pass's path) is kept; the answer keeps its size.
    stored = _entity("a", '{"superseded_by": "b.md"}')
    got = entities_first([_entity("x"), stored], Succession([_sup("b", "a")]), read, 2)
    assert [r.uuid for r in got] == ["x", "b"]
    got = entities_first([stored, _entity("b")], Succession([_sup("b", "a")]), read, 1)
    assert [r.uuid for r in got] == ["b"]


def test_chains_are_followed_and_cycles_cut() -> None:
    _asked, read = _reader([_entity("b"), _entity("c")])
    chain = Succession([_sup("b", "a"), _sup("c", "b")])
    got = entities_first([_entity("a")], chain, read, 10)
    assert [r.uuid for r in got] == ["c", "b", "a"]
    cycle = Succession([_sup("b", "a"), _sup("a", "b")])
    got = entities_first([_entity("a")], cycle, read, 10)
    assert sorted(r.uuid for r in got) == ["a", "b"]


def test_a_fact_about_the_old_document_comes_after_its_supersession() -> None:
    sup = _fact("s-b-a", "b", "a", "SUPERSEDES")

    def read(uuids: list[str]) -> list[EdgeRow]:
        return [sup] if "s-b-a" in uuids else []

    rows = [_fact("f1", "a", "x"), _fact("f2", "y", "z")]
    got = facts_first(rows, Succession([_sup("b", "a")]), read, 10)
    assert [r.uuid for r in got] == ["s-b-a", "f1", "f2"]
    got = facts_first([_fact("f2", "y", "z"), sup], Succession([_sup("b", "a")]), read, 10)
    assert [r.uuid for r in got] == ["f2", "s-b-a"]


def test_the_old_files_chunks_follow_the_successors_and_are_marked() -> None:
    rows = [_passage("1", "v/a.md"), _passage("2", "v/x.md"), _passage("3", "v/b.md")]
    got = passages_after(rows, Succession([_sup("b", "a")]))
    assert [(r.uuid, r.superseded_by) for r in got] == [
        ("2", None),
        ("3", None),
        ("1", "v/b.md"),
    ]
    # Without its successor's chunk on the page, the old chunk keeps its place, marked.
    got = passages_after(rows[:2], Succession([_sup("b", "a")]))
    assert [(r.uuid, r.superseded_by) for r in got] == [("1", "v/b.md"), ("2", None)]
    cycle = Succession([_sup("b", "a"), _sup("a", "b")])
    assert sorted(r.uuid for r in passages_after(rows, cycle)) == ["1", "2", "3"]
