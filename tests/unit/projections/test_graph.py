"""The graph projection on a real Kuzu database: every event type, atomicity, digests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from event_samples import T0, T1, T2, G, H, added, edge, ent, history, merge_outcome, scene, stamp
from lcg.errors import ProjectionError
from lcg.events.model import (
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    EdgeInvalidation,
    EdgeRestated,
    EntitiesMerged,
    EntityAsserted,
    EntityRecord,
    EntityRetyped,
    EntitySummaryUpdate,
    EntityTypesChanged,
    EpisodeExtracted,
    EpisodesDeleted,
    Event,
    GroupPurged,
    PointerRebind,
    PointersRebound,
    RelationRetyped,
    RelationshipAsserted,
    RelationTypesChanged,
)
from lcg.events.position import Position
from lcg.projections.graph import GraphProjection
from lcg.projections.graph import records as grec
from lcg.projections.graph._states import mention_uuid
from lcg.query import graph_reads as gr


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[GraphProjection]:
    g = GraphProjection(tmp_path / "db")
    yield g
    g.close()


def apply(
    graph: GraphProjection, events: list[Event], start: int = 0, gen: str = "gen1", group: str = G
) -> list[Event]:
    stamped = stamp(events, start)
    graph.apply(group, gen, stamped)
    return stamped


# ---- every event type -----------------------------------------------------------------


def test_episode_added_is_pending_and_a_repeat_is_a_no_op(graph: GraphProjection) -> None:
    apply(graph, [added("ep1", content="first")])
    apply(graph, [added("ep1", content="second")], start=1)
    [row] = gr.episodes_by_uuids(graph, ["ep1"])
    assert row.content == "first"
    assert row.created_at == "2024-05-01 12:00:00"
    assert row.entity_edges == []
    assert graph.counts(G).pending_episodes == 1
    assert graph.position(G) == Position(group_id=G, generation="gen1", seq=1)


def test_episode_extracted_creates_links_and_marks_the_episode(graph: GraphProjection) -> None:
    apply(graph, scene())
    assert graph.counts(G).pending_episodes == 0
    [ep] = gr.episodes_by_uuids(graph, ["ep1"])
    assert ep.entity_edges == ["e1", "e2"]
    [r1] = gr.edges_by_uuids(graph, ["r1"])
    assert (r1.source_node_uuid, r1.target_node_uuid, r1.name) == ("e1", "e2", "Alice → Bob")
    rows = graph.query("MATCH (r:RelatesToNode_) RETURN r.episodes")
    assert rows == [[["ep1"]]]
    mentions = graph.query(
        "MATCH (p:Episodic)-[m:MENTIONS]->(e:Entity) "
        "RETURN e.uuid, m.uuid, m.group_id ORDER BY e.uuid"
    )
    assert mentions == [["e1", mention_uuid("ep1", "e1"), G], ["e2", mention_uuid("ep1", "e2"), G]]
    # A second episode matches e1, restates r1, updates a summary and invalidates nothing.
    apply(
        graph,
        [
            added("ep2", created_at=T1),
            EpisodeExtracted(
                group_id=G,
                episode_uuid="ep2",
                entities_updated=[EntitySummaryUpdate(uuid="e1", summary="likes tea")],
                edges_restated=[EdgeRestated(uuid="r1", episode_uuid="ep2")],
                edges_invalidated=[EdgeInvalidation(uuid="r1", invalid_at=T2)],
                mentions=["e1"],
            ),
        ],
        start=3,
    )
    assert graph.query("MATCH (r:RelatesToNode_) RETURN r.episodes") == [[["ep1", "ep2"]]]
    [r1] = gr.edges_by_uuids(graph, ["r1"])
    assert r1.invalid_at == "2024-05-03 07:00:00"
    [e1] = gr.entities_by_uuids(graph, ["e1"])
    assert e1.summary == "likes tea"
    assert graph.counts(G).entities == 3


def test_re_extraction_does_not_duplicate_mentions(graph: GraphProjection) -> None:
    apply(graph, scene())
    apply(graph, [EpisodeExtracted(group_id=G, episode_uuid="ep1", mentions=["e2", "e3"])], 3)
    rows = graph.query("MATCH (:Episodic)-[m:MENTIONS]->(e:Entity) RETURN e.uuid ORDER BY e.uuid")
    assert rows == [["e1"], ["e2"], ["e3"]]
    assert gr.episodes_by_uuids(graph, ["ep1"])[0].entity_edges == ["e2", "e3"]


def test_entity_asserted_replaces_the_full_record(graph: GraphProjection) -> None:
    apply(graph, scene())
    record = EntityRecord(
        uuid="e1",
        name="Alicia",
        labels=["Entity", "Person"],
        summary="renamed",
        attributes='{"k":1}',
        created_at=T0,
    )
    apply(graph, [EntityAsserted(group_id=G, entity=record, created=False)], start=3)
    [e1] = gr.entities_by_uuids(graph, ["e1"])
    assert (e1.name, e1.labels, e1.summary, e1.attributes) == (
        "Alicia",
        ["Entity", "Person"],
        "renamed",
        '{"k":1}',
    )
    # The relationship and the mention survived the update.
    assert len(gr.edges_by_uuids(graph, ["r1"])) == 1
    assert graph.counts(G).entities == 3


def test_relationship_asserted_creates_then_updates(graph: GraphProjection) -> None:
    apply(graph, scene())
    apply(graph, [RelationshipAsserted(group_id=G, edge=edge("r2", "e1", "e3"), created=True)], 3)
    updated = edge("r2", "e1", "e3", fact="new fact", relation_type="KNOWS", attributes='{"a":1}')
    apply(graph, [RelationshipAsserted(group_id=G, edge=updated, created=False)], 4)
    [r2] = gr.edges_by_uuids(graph, ["r2"])
    assert (r2.fact, r2.relation_type, r2.attributes) == ("new fact", "KNOWS", '{"a":1}')
    assert graph.counts(G).edges == 2


def test_entities_merged(graph: GraphProjection) -> None:
    apply(graph, scene())
    apply(graph, [RelationshipAsserted(group_id=G, edge=edge("r2", "e3", "e2"), created=True)], 3)
    apply(graph, [EntitiesMerged(group_id=G, merge=merge_outcome())], 4)
    [e1, e3] = gr.entities_by_uuids(graph, ["e1", "e3"])
    assert (e1.created_at, e1.summary) == ("2024-04-01 00:00:00", "merged summary")
    assert e3.labels == ["Entity", "Merged"] and e3.attributes == '{"merged_into":"e1"}'
    [r2, r3] = gr.edges_by_uuids(graph, ["r2", "r3"])
    assert r2.invalid_at == "2024-05-02 08:30:00" and r3.invalid_at is None
    assert graph.query("MATCH (r:RelatesToNode_ {uuid: 'r3'}) RETURN r.episodes") == [[["ep1"]]]


def test_corrections_applied_merges_and_retracts(graph: GraphProjection) -> None:
    apply(graph, scene())
    apply(graph, [RelationshipAsserted(group_id=G, edge=edge("r2", "e3", "e2"), created=True)], 3)
    apply(
        graph,
        [
            CorrectionsApplied(
                group_id=G,
                correction_ids=["c1", "c2"],
                merges=[merge_outcome()],
                retractions=[EdgeInvalidation(uuid="r1", invalid_at=T2)],
            )
        ],
        4,
    )
    [r1, r2] = gr.edges_by_uuids(graph, ["r1", "r2"])
    assert r1.invalid_at == "2024-05-03 07:00:00" and r2.invalid_at is not None
    assert "Merged" in gr.entities_by_uuids(graph, ["e3"])[0].labels


def test_episodes_deleted_keeps_entities(graph: GraphProjection) -> None:
    apply(graph, scene())
    apply(graph, [EpisodesDeleted(group_id=G, by="uuid", key="ep1", episode_uuids=["ep1"])], 3)
    assert gr.episodes_by_uuids(graph, ["ep1"]) == []
    assert graph.counts(G).entities == 3
    assert graph.query("MATCH ()-[m:MENTIONS]->() RETURN count(m)") == [[0]]
    # Deleted and re-added in one batch: the old mentions do not come back.
    apply(graph, [added("ep1")], 4)
    apply(
        graph,
        [
            EpisodesDeleted(group_id=G, by="uuid", key="ep1", episode_uuids=["ep1"]),
            added("ep1", content="again"),
        ],
        5,
    )
    [ep] = gr.episodes_by_uuids(graph, ["ep1"])
    assert ep.content == "again"


def test_types_changed(graph: GraphProjection) -> None:
    apply(graph, scene())
    apply(
        graph,
        [
            RelationTypesChanged(
                group_id=G,
                cause="canonicalize",
                changes=[RelationRetyped(uuid="r1", relation_type="FRIEND_OF")],
            ),
            EntityTypesChanged(
                group_id=G,
                cause="reprocess",
                changes=[EntityRetyped(uuid="e2", labels=["Entity", "Person"])],
            ),
        ],
        3,
    )
    assert gr.edges_by_uuids(graph, ["r1"])[0].relation_type == "FRIEND_OF"
    assert gr.entities_by_uuids(graph, ["e2"])[0].labels == ["Entity", "Person"]


def test_group_purged_keeps_position_and_other_groups(graph: GraphProjection) -> None:
    apply(graph, scene())
    apply(
        graph,
        [
            added("h1", group=H),
            EntityAsserted(group_id=H, entity=ent("x1", "Xavier"), created=True),
            CrossGroupEdgeAdded(group_id=H, edge=edge("xr", "x1", "e1")),
        ],
        group=H,
    )
    before_h = graph.digest(H)
    assert gr.edges_by_uuids(graph, ["xr"]) != []
    apply(graph, [GroupPurged(group_id=G, entities=3, episodes=1, edges=1)], 3)
    assert graph.counts(G) == type(graph.counts(G))()
    assert graph.position(G) == Position(group_id=G, generation="gen1", seq=3)
    # The foreign edge lost its hop but not its data.
    assert gr.edges_by_uuids(graph, ["xr"]) == []
    assert graph.counts(H).unbound_edges == 1
    assert graph.digest(H) == before_h
    # The purged group comes back: the foreign edge is a relationship again.
    apply(graph, scene(), 4)
    assert len(gr.edges_by_uuids(graph, ["xr"])) == 1
    assert graph.counts(H).unbound_edges == 0


def test_cross_group_edge_unbound_then_rebound(graph: GraphProjection) -> None:
    apply(graph, scene())
    pointer = (
        '{"cross_group_pointers":{"dst":{"source_group_id":"g2","endpoint_name":"Yan",'
        '"binding_state":"unbound"}}}'
    )
    apply(
        graph, [CrossGroupEdgeAdded(group_id=G, edge=edge("cx", "e1", "", attributes=pointer))], 3
    )
    assert gr.edges_by_uuids(graph, ["cx"]) == []
    assert graph.counts(G).unbound_edges == 1 and graph.counts(G).edges == 2
    assert grec.unbound_impacts(graph, [H]) == {G: 1}
    apply(graph, [EntityAsserted(group_id=H, entity=ent("y1", "Yan"), created=True)], group=H)
    bound = pointer.replace("unbound", "bound")
    apply(
        graph,
        [
            PointersRebound(
                group_id=G,
                source_group_id=H,
                rebinds=[
                    PointerRebind(uuid="cx", source_uuid="e1", target_uuid="y1", attributes=bound)
                ],
            )
        ],
        4,
    )
    [cx] = gr.edges_by_uuids(graph, ["cx"])
    assert (cx.target_node_uuid, cx.attributes, cx.invalid_at) == ("y1", bound, None)
    assert graph.counts(G).unbound_edges == 0
    # And back to unbound, invalidated.
    apply(
        graph,
        [
            PointersRebound(
                group_id=G,
                source_group_id=H,
                rebinds=[
                    PointerRebind(
                        uuid="cx",
                        source_uuid="e1",
                        target_uuid="",
                        attributes=pointer,
                        invalid_at=T1,
                    )
                ],
            )
        ],
        5,
    )
    assert gr.edges_by_uuids(graph, ["cx"]) == []
    assert graph.counts(G).unbound_edges == 1


# ---- atomicity, positions, digests ----------------------------------------------------


def test_a_failing_batch_changes_nothing(graph: GraphProjection) -> None:
    apply(graph, scene())
    digest = graph.digest(G)
    bad = EntityAsserted(group_id=G, entity=ent("e9", "Bad", created_at="not a time"), created=True)
    with pytest.raises(ProjectionError, match="not a time"):
        # The purge and the first assertion are written before the bad event fails.
        apply(
            graph,
            [
                GroupPurged(group_id=G),
                EntityAsserted(group_id=G, entity=ent("e8", "Ok"), created=True),
                bad,
            ],
            3,
        )
    assert graph.position(G) == Position(group_id=G, generation="gen1", seq=2)
    assert graph.digest(G) == digest
    # The writer is still usable.
    apply(graph, [added("ep9")], 3)
    assert graph.position(G) == Position(group_id=G, generation="gen1", seq=3)


def test_a_kuzu_failure_is_a_projection_error(graph: GraphProjection) -> None:
    apply(graph, scene())
    # A created edge is trusted to be new; an entity uuid created twice in one segment is not
    # a Kuzu error (the overlay upserts), but an event of another group is refused.
    with pytest.raises(ProjectionError, match="belongs to group"):
        graph.apply(G, "gen1", stamp([added("z", group=H)], 3))
    assert graph.position(G) == Position(group_id=G, generation="gen1", seq=2)


def test_positions_and_purge_group(graph: GraphProjection) -> None:
    assert graph.position(G) == Position.none(G)
    apply(graph, scene())
    apply(graph, [added("h1", group=H)], gen="genH", group=H)
    assert graph.positions() == {
        G: Position(group_id=G, generation="gen1", seq=2),
        H: Position(group_id=H, generation="genH", seq=0),
    }
    graph.purge_group(G)
    assert graph.positions() == {H: Position(group_id=H, generation="genH", seq=0)}
    assert graph.counts(G).entities == 0 and graph.counts().episodes == 1
    graph.apply(G, "gen1", [])
    assert graph.position(G) == Position.none(G)


@pytest.mark.parametrize("sizes", [[1], [3, 1, 5], [64]])
def test_digest_is_independent_of_batch_splits_and_reopens(
    tmp_path: Path, sizes: list[int]
) -> None:
    events = stamp(history())
    reference = GraphProjection(tmp_path / "ref")
    reference.apply(G, "gen1", events)
    expected = reference.digest(G)
    expected_counts = reference.counts(G)
    reference.close()

    db = tmp_path / "split"
    i = 0
    k = 0
    while i < len(events):
        size = sizes[k % len(sizes)]
        k += 1
        g = GraphProjection(db)  # closed and reopened between batches
        g.apply(G, "gen1", events[i : i + size])
        g.close()
        i += size
    g = GraphProjection(db)
    assert g.digest(G) == expected
    assert g.counts(G) == expected_counts
    assert g.position(G) == Position(group_id=G, generation="gen1", seq=len(events) - 1)
    g.close()


def test_digest_sees_every_column(graph: GraphProjection) -> None:
    apply(graph, scene())
    before = graph.digest(G)
    apply(
        graph,
        [
            RelationTypesChanged(
                group_id=G,
                cause="canonicalize",
                changes=[RelationRetyped(uuid="r1", relation_type="X")],
            )
        ],
        3,
    )
    assert graph.digest(G) != before
    assert graph.digest("empty") == GraphProjection.digest(graph, "other-empty")


def test_closed_projection_refuses(tmp_path: Path) -> None:
    g = GraphProjection(tmp_path / "db")
    g.close()
    g.close()
    with pytest.raises(ProjectionError, match="closed"):
        g.position(G)


def test_reads_run_concurrently_with_each_other_and_with_writes(graph: GraphProjection) -> None:
    import threading

    apply(graph, scene())
    errors: list[BaseException] = []
    seen: list[int] = []
    done = threading.Event()

    def reader() -> None:
        try:
            while not done.is_set():
                seen.append(len(gr.nodes_by_group(graph, [G])))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for i in range(10):
            apply(
                graph,
                [EntityAsserted(group_id=G, entity=ent(f"c{i}", f"C{i}"), created=True)],
                3 + i,
            )
    finally:
        done.set()
        for t in threads:
            t.join()
    assert errors == []
    assert seen and min(seen) >= 3 and max(seen) <= 13
    assert len(gr.nodes_by_group(graph, [G])) == 13


def test_find_by_name_survives_kuzu_trim_bug(graph: GraphProjection) -> None:
    # Kuzu 0.11.3's trim() corrupts " exactly12byt"-shaped strings; the lookup must not.
    names = [" exactly12byt", "  Ada Lovelace ", "Ada Lovelace"]
    apply(
        graph,
        [
            EntityAsserted(group_id=G, entity=ent(f"n{i}", n, created_at=T1), created=True)
            for i, n in enumerate(names)
        ],
    )
    found = gr.find_entity_by_name(graph, G, "EXACTLY12BYT")
    assert found is not None and found.uuid == "n0"
    assert [e.uuid for e in grec.entities_by_name(graph, G, "ada lovelace")] == ["n1", "n2"]
    assert grec.entities_by_name(graph, G, "  ") == []


@pytest.mark.parametrize("size", [1, 4, 100])
def test_load_group_equals_incremental_apply(tmp_path: Path, size: int) -> None:
    events = stamp([*history(), GroupPurged(group_id=G), *history()])
    # Another group's rows exist (so COPY appends), one of its edges waits for e2 and e4.
    other = stamp(
        [
            EntityAsserted(group_id=H, entity=ent("h1", "Hugo"), created=True),
            CrossGroupEdgeAdded(group_id=H, edge=edge("hx", "e2", "e4")),
            added("hp", group=H),
            EpisodeExtracted(group_id=H, episode_uuid="hp", mentions=["h1"]),
        ]
    )
    incremental = GraphProjection(tmp_path / "inc")
    incremental.apply(H, "genH", other)
    for i in range(0, len(events), size):
        incremental.apply(G, "gen1", events[i : i + size])
    bulk = GraphProjection(tmp_path / "bulk")
    bulk.apply(H, "genH", other)
    assert bulk.counts(H).unbound_edges == 1
    batches = [events[i : i + size] for i in range(0, len(events), size)]
    assert bulk.load_group(G, "gen1", iter(batches)) == len(events)
    for g in (G, H):
        assert bulk.digest(g) == incremental.digest(g)
        assert bulk.counts(g) == incremental.counts(g)
    at_end = Position(group_id=G, generation="gen1", seq=len(events) - 1)
    assert bulk.position(G) == incremental.position(G) == at_end
    # The foreign edge waiting for e2 and e4 became a relationship in both.
    assert bulk.counts(H).unbound_edges == 0
    assert [e.uuid for e in gr.edges_by_uuids(bulk, ["hx"])] == ["hx"]
    # Loaded rows are ordinary rows: incremental applies continue on them.
    more = stamp([added("ep-more")], len(events))
    bulk.apply(G, "gen1", more)
    incremental.apply(G, "gen1", more)
    assert bulk.digest(G) == incremental.digest(G)
    incremental.close()
    bulk.close()


def test_load_group_refuses_a_group_with_rows(graph: GraphProjection) -> None:
    from lcg.errors import RebuildRefusedError

    apply(graph, scene())
    with pytest.raises(RebuildRefusedError):
        graph.load_group(G, "gen1", [stamp(scene())])
    with pytest.raises(ProjectionError, match="belongs to group"):
        graph.load_group(H, "gen1", [stamp(scene())])
    assert graph.counts(H) == type(graph.counts(H))()
    assert graph.load_group(H, "genH", []) == 0
    assert graph.position(H) == Position.none(H)
