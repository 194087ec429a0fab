"""The record reads ingest decides on under the group's lock (``graph_records``, ADR 0226), on
a real Kuzu database: what each named read returns, and what it leaves out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from event_samples import T0, G, H, added, edge, scene, stamp
from lcg.events import lookup_key
from lcg.events.model import Event, RelationshipAsserted
from lcg.projections import GraphProjection
from lcg.projections import graph_records as grec


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[GraphProjection]:
    g = GraphProjection(tmp_path / "db")
    yield g
    g.close()


def apply(graph: GraphProjection, events: list[Event], start: int = 0, group: str = G) -> None:
    graph.apply(group, "gen1", stamp(events, start))


def test_episode_record_and_unextracted_count(graph: GraphProjection) -> None:
    apply(graph, [*scene(), added("ep2", content="later", content_hash="h2")])
    apply(graph, [added("ep9", group=H)], group=H)
    rec = grec.episode_record(graph, "ep1")
    assert rec is not None
    assert (rec.group_id, rec.name, rec.content, rec.extracted) == (G, "ep1", "text", True)
    assert rec.valid_at == rec.created_at == T0
    assert sorted(rec.mentions) == ["e1", "e2"]
    # The same record the group's listing gives.
    assert rec == next(r for r in grec.all_episodes(graph, G) if r.uuid == "ep1")
    assert grec.episode_record(graph, "nope") is None
    # ep1 is extracted, ep2 is not; the other group's episode is not counted.
    assert grec.unextracted_count(graph, G) == 1
    assert grec.unextracted_count(graph, "empty") == 0


def test_other_texts_of_chunk(graph: GraphProjection) -> None:
    apply(
        graph,
        [
            added("a", name="c1", source_description="f.md:c1", content_hash="old"),
            added("b", name="c1", source_description="f.md:c1", content_hash="new"),
            added("c", name="c1", source_description="g.md:c1", content_hash="old"),
        ],
    )
    assert grec.other_texts_of_chunk(graph, G, "c1", "f.md:c1", "new") == ["a"]
    assert grec.other_texts_of_chunk(graph, G, "c1", "f.md:c1", "none") == ["a", "b"]
    assert grec.other_texts_of_chunk(graph, H, "c1", "f.md:c1", "new") == []


def test_entity_uuids_by_keys(graph: GraphProjection) -> None:
    apply(graph, scene())
    keys = [lookup_key("ALICE"), lookup_key("carol")]
    assert sorted(grec.entity_uuids_by_keys(graph, G, keys)) == ["e1", "e3"]
    assert grec.entity_uuids_by_keys(graph, H, keys) == []


def test_active_edges_among(graph: GraphProjection) -> None:
    apply(graph, scene())
    later = edge("r2", "e1", "e3", relation_type="KNOWS", created_at="2024-05-02T00:00:00Z")
    ended = edge("r0", "e1", "e2", invalid_at="2024-05-02T00:00:00Z")
    apply(
        graph,
        [
            RelationshipAsserted(group_id=G, edge=later, created=True),
            RelationshipAsserted(group_id=G, edge=ended, created=True),
        ],
        start=3,
    )
    found = grec.active_edges_among(graph, G, ["e1"], ["e2", "e3"])
    # Oldest first; the ended edge is not current.
    assert [(e.source_uuid, e.target_uuid, e.uuid) for e in found] == [
        ("e1", "e2", "r1"),
        ("e1", "e3", "r2"),
    ]
    assert found[1].relation_type == "KNOWS"
    assert found[0].fact == "e1 Alice → Bob e2"
    assert grec.active_edges_among(graph, H, ["e1"], ["e2"]) == []
