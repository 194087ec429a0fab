"""The record reads a source sync and the declared pass decide on (``graph_records``, ADR
0226), on a real Kuzu database: what each named read returns, and what it leaves out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from event_samples import T0, T1, G, H, added, edge, scene, stamp
from lcg.events import EntityRecord, SourceRegistered, StructureDeclared
from lcg.events.model import Event, MentionRecord
from lcg.projections import GraphProjection
from lcg.projections import graph_records as grec

DECLARED = '{"origin": "declared", "source": "notes"}'


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[GraphProjection]:
    g = GraphProjection(tmp_path / "db")
    yield g
    g.close()


def apply(graph: GraphProjection, events: list[Event], start: int = 0, group: str = G) -> None:
    graph.apply(group, "gen1", stamp(events, start))


def _source(root: str, label: str, *, group: str = G, kind: str = "folder") -> SourceRegistered:
    return SourceRegistered(group_id=group, root=root, label=label, kind=kind, synced_at=T1)  # type: ignore[arg-type]


def test_source_records(graph: GraphProjection) -> None:
    apply(graph, [_source("/b/notes", "notes"), _source("/a/README.md", "README.md", kind="file")])
    apply(graph, [_source("/c/other", "other", group=H)], group=H)
    rows = grec.source_records(graph, G)
    assert [(r.root, r.label, r.kind) for r in rows] == [
        ("/a/README.md", "README.md", "file"),
        ("/b/notes", "notes", "folder"),
    ]
    assert {r.synced_at for r in rows} == {T1}
    assert grec.source_records(graph, "empty") == []


def _chunks(graph: GraphProjection) -> None:
    apply(
        graph,
        [
            added("a", name="x.md#1", source_description="notes/x.md:x.md#1", content_hash="h1"),
            added("b", name="y.md#1", source_description="notes/y.md:y.md#1"),
            added("c", name="z#1", source_description="other/z:z#1", content_hash="h3"),
        ],
    )
    apply(graph, [added("d", group=H, name="x.md#1", source_description="notes/x.md")], group=H)


def test_chunk_episodes_all_under_a_prefix_and_by_name(graph: GraphProjection) -> None:
    _chunks(graph)
    every = sorted(grec.chunk_episodes(graph, G), key=lambda e: e.uuid)
    assert [(e.uuid, e.name, e.content_hash) for e in every] == [
        ("a", "x.md#1", "h1"),
        ("b", "y.md#1", ""),
        ("c", "z#1", "h3"),
    ]
    assert every[0].source_description == "notes/x.md:x.md#1"
    under = grec.chunk_episodes_under(graph, G, "notes/")
    assert sorted(e.uuid for e in under) == ["a", "b"]
    assert grec.chunk_episodes_under(graph, G, "none/") == []
    named = grec.chunk_episodes_named(graph, G, ["x.md#1", "z#1", "missing"])
    assert sorted(e.uuid for e in named) == ["a", "c"]  # not the other group's x.md#1
    assert grec.chunk_episodes_named(graph, G, []) == []


def test_episodes_present(graph: GraphProjection) -> None:
    _chunks(graph)
    assert grec.episodes_present(graph, G, ["a", "c", "d", "zz"]) == {"a", "c"}
    assert grec.episodes_present(graph, H, ["a", "d"]) == {"d"}
    assert grec.episodes_present(graph, G, []) == set()


def _declared(uuid: str, name: str, label: str, attributes: str = DECLARED) -> EntityRecord:
    return EntityRecord(
        uuid=uuid, name=name, labels=["Entity", label], attributes=attributes, created_at=T0
    )


def _structure(graph: GraphProjection) -> None:
    apply(graph, [*scene(), added("ep2", name="x.md#1")])
    declared = StructureDeclared(
        group_id=G,
        root="/b/notes",
        label="notes",
        entities_upserted=[
            _declared("d1", "x", "Document"),
            _declared("t1", "draft", "Tag"),
            _declared("d9", "someone's", "Document", attributes='{"origin": "extracted"}'),
        ],
        edges_upserted=[
            edge("l1", "d1", "t1", name="TAGGED", relation_type="TAGGED", attributes=DECLARED),
            edge("l2", "d1", "d9", name="LINKS_TO", relation_type="LINKS_TO"),
        ],
        mentions_added=[
            MentionRecord(episode_uuid="ep2", entity_uuid="d1"),
            MentionRecord(episode_uuid="ep1", entity_uuid="d1"),
        ],
    )
    apply(graph, [declared], start=10)


def test_declared_kind_entities(graph: GraphProjection) -> None:
    _structure(graph)
    found = {e.uuid: e for e in grec.declared_kind_entities(graph, G)}
    # Documents and tags whoever wrote them; not the plain entities of the scene.
    assert sorted(found) == ["d1", "d9", "t1"]
    assert found["t1"].labels == ["Entity", "Tag"]
    assert found["d1"].attributes == DECLARED and found["d1"].created_at == T0
    assert grec.declared_kind_entities(graph, H) == []


def test_edges_of_types(graph: GraphProjection) -> None:
    _structure(graph)
    tagged = grec.edges_of_types(graph, G, ["TAGGED"])
    assert [(e.uuid, e.source_uuid, e.target_uuid, e.relation_type) for e in tagged] == [
        ("l1", "d1", "t1", "TAGGED")
    ]
    assert tagged[0].attributes == DECLARED and tagged[0].created_at == T0
    both = grec.edges_of_types(graph, G, ["TAGGED", "LINKS_TO", "PARENT"])
    assert sorted(e.uuid for e in both) == ["l1", "l2"]
    assert grec.edges_of_types(graph, G, []) == []


def test_mentions_of_entities_and_every_mention(graph: GraphProjection) -> None:
    _structure(graph)
    of_doc = sorted(
        (m.episode_uuid, m.entity_uuid, m.extracted)
        for m in grec.mentions_of_entities(graph, G, ["d1"])
    )
    assert of_doc == [("ep1", "d1", False), ("ep2", "d1", False)]
    assert grec.mentions_of_entities(graph, G, []) == []
    every = grec.episode_mentions(graph, G)
    # By episode, then entity; ep1's extracted mentions say so, and carry their entity's
    # attributes.
    assert [(m.episode_uuid, m.entity_uuid, m.extracted) for m in every] == [
        ("ep1", "d1", False),
        ("ep1", "e1", True),
        ("ep1", "e2", True),
        ("ep2", "d1", False),
    ]
    assert every[0].attributes == DECLARED
    assert grec.episode_mentions(graph, H) == []
