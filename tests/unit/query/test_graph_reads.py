"""Graph reads on a real Kuzu database: row shapes, orders, group filters, enrichment."""

from __future__ import annotations

from collections.abc import Iterator
from types import FunctionType, ModuleType

import msgspec
import pytest

from lcg.events.model import (
    EdgeInvalidation,
    EdgeRecord,
    EntitiesMerged,
    EntityAsserted,
    EntityRecord,
    EpisodeAdded,
    EpisodeExtracted,
    Event,
    MergedAlias,
    MergeOutcome,
    RelationshipAsserted,
)
from lcg.projections.graph import GraphProjection
from lcg.projections.graph import records as grec
from lcg.projections.graph.rows import EdgeRow, EntityRow, EpisodeRow, GroupCounts
from lcg.query import graph_reads as gr

G = "g1"
H = "g2"


def ts(day: int) -> str:
    return f"2024-05-{day + 10:02d}T10:00:00.000000Z"


def ent(uuid: str, name: str, day: int = 1) -> EntityRecord:
    return EntityRecord(uuid=uuid, name=name, labels=["Entity"], created_at=ts(day))


def edge(uuid: str, src: str, dst: str, name: str = "KNOWS", day: int = 1) -> EdgeRecord:
    return EdgeRecord(
        uuid=uuid,
        name=name,
        source_uuid=src,
        target_uuid=dst,
        fact=f"{src} {name} {dst}",
        relation_type="" if uuid == "r-b" else "KNOWS",
        valid_at=ts(day),
        created_at=ts(day),
    )


def episode(uuid: str, day: int, source: str, group: str = G, name: str = "") -> EpisodeAdded:
    return EpisodeAdded(
        group_id=group,
        uuid=uuid,
        name=name or uuid,
        source_description=source,
        content=f"content of {uuid}",
        created_at=ts(day),
        valid_at=ts(day),
        content_hash=f"hash-{uuid}",
    )


def events_g() -> list[Event]:
    return [
        episode("p-a", 1, "notes/a.md:1", name="chunk-1"),
        EpisodeExtracted(
            group_id=G,
            episode_uuid="p-a",
            entities_created=[ent("n-a", "Alice"), ent("n-b", "Bob"), ent("n-c", "Carol", 2)],
            edges_created=[edge("r-a", "n-a", "n-b"), edge("r-b", "n-a", "n-c")],
            mentions=["n-a", "n-b"],
        ),
        episode("p-b", 3, "notes/a.md"),
        EpisodeExtracted(
            group_id=G,
            episode_uuid="p-b",
            edges_created=[edge("r-c", "n-c", "n-a", day=3)],
            mentions=["n-a", "n-c"],
        ),
        episode("p-c", 2, "notes/ab.md"),  # not a chunk of notes/a.md; stays pending
        EntityAsserted(group_id=G, entity=ent("n-d", " alice ", 0), created=True),
        EntitiesMerged(
            group_id=G,
            merge=MergeOutcome(
                canonical_uuid="n-a",
                canonical_created_at=ts(1),
                aliases=[
                    MergedAlias(
                        uuid="n-d", labels=["Entity", "Merged"], attributes='{"merged_into":"n-a"}'
                    )
                ],
            ),
        ),
    ]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphProjection]:
    g = GraphProjection(tmp_path_factory.mktemp("reads"))
    evs = [msgspec.structs.replace(e, seq=i) for i, e in enumerate(events_g())]
    g.apply(G, "gen", evs)
    other: list[Event] = [
        episode("q-a", 5, "notes/a.md", group=H),
        EntityAsserted(group_id=H, entity=ent("m-a", "Alice"), created=True),
        RelationshipAsserted(group_id=H, edge=edge("s-a", "m-a", "n-a", day=4), created=True),
        RelationshipAsserted(group_id=H, edge=edge("s-b", "m-a", "n-b", day=4), created=True),
    ]
    g.apply(H, "gen", [msgspec.structs.replace(e, seq=i) for i, e in enumerate(other)])
    g.apply(
        H,
        "gen",
        [
            EpisodeExtracted(
                group_id=H,
                seq=4,
                episode_uuid="q-a",
                edges_invalidated=[EdgeInvalidation(uuid="s-b", invalid_at=ts(6))],
                mentions=["m-a"],
            )
        ],
    )
    yield g
    g.close()


def test_row_shapes_have_the_reference_fields() -> None:
    assert EntityRow.__struct_fields__ == (
        "uuid", "name", "group_id", "labels", "created_at", "summary", "attributes",
        "episode_uuids", "source_descriptions",
    )  # fmt: skip
    assert EdgeRow.__struct_fields__ == (
        "uuid", "name", "source_node_uuid", "target_node_uuid", "group_id", "fact", "created_at",
        "valid_at", "invalid_at", "attributes", "relation_type", "episode_uuids",
        "source_descriptions",
    )  # fmt: skip
    assert EpisodeRow.__struct_fields__ == (
        "uuid", "name", "group_id", "created_at", "source", "source_description", "content",
        "valid_at", "entity_edges",
    )  # fmt: skip


def test_by_uuids_keep_the_given_order(graph: GraphProjection) -> None:
    assert [r.uuid for r in gr.entities_by_uuids(graph, ["n-c", "zz", "n-a", "n-c"])] == [
        "n-c",
        "n-a",
    ]
    [rb, ra] = gr.edges_by_uuids(graph, ["r-b", "r-a"])
    assert (rb.uuid, ra.uuid) == ("r-b", "r-a")
    assert rb.relation_type is None and ra.relation_type == "KNOWS"
    assert ra.valid_at == "2024-05-11 10:00:00" and ra.invalid_at is None
    [p] = gr.episodes_by_uuids(graph, ["p-a"])
    assert p == EpisodeRow(
        uuid="p-a",
        name="chunk-1",
        group_id=G,
        created_at="2024-05-11 10:00:00",
        source="text",
        source_description="notes/a.md:1",
        content="content of p-a",
        valid_at="2024-05-11 10:00:00",
        entity_edges=["n-a", "n-b"],
    )
    assert gr.entities_by_uuids(graph, []) == []


def test_get_episodes_newest_first(graph: GraphProjection) -> None:
    assert [e.uuid for e in gr.get_episodes(graph, G, 50)] == ["p-b", "p-c", "p-a"]
    assert [e.uuid for e in gr.get_episodes(graph, G, 1)] == ["p-b"]


def test_group_filters_none_is_all_and_empty_is_none(graph: GraphProjection) -> None:
    assert len(gr.nodes_by_group(graph, None)) == 5
    assert [r.uuid for r in gr.nodes_by_group(graph, [H])] == ["m-a"]
    assert gr.nodes_by_group(graph, []) == []
    assert [r.uuid for r in gr.edges_by_group(graph, [H])] == ["s-a", "s-b"]
    assert len(gr.edges_by_group(graph, None)) == 5
    assert gr.edges_by_group(graph, []) == []
    assert gr.list_entities(graph, 10, []) == []


def test_list_entities_uuid_desc_enriched(graph: GraphProjection) -> None:
    rows = gr.list_entities(graph, 3, [G])
    assert [r.uuid for r in rows] == ["n-d", "n-c", "n-b"]
    by = {r.uuid: r for r in gr.list_entities(graph, 100, None)}
    assert by["n-a"].episode_uuids == ["p-a", "p-b"]
    assert by["n-a"].source_descriptions == ["notes/a.md:1", "notes/a.md"]
    assert by["n-d"].episode_uuids == []
    # A non-empty group filter also filters the enrichment's episodes.
    assert gr.list_entities(graph, 100, [H])[0].episode_uuids == ["q-a"]


def test_list_relationships_uuid_desc_enriched(graph: GraphProjection) -> None:
    rows = gr.list_relationships(graph, 100, [G])
    assert [r.uuid for r in rows] == ["r-c", "r-b", "r-a"]
    rc = rows[0]
    # Source endpoint (n-c: p-b) then target endpoint (n-a: p-a, p-b), de-duplicated.
    assert rc.episode_uuids == ["p-b", "p-a"]
    assert rc.source_descriptions == ["notes/a.md", "notes/a.md:1"]
    assert rc.created_at == "2024-05-13 10:00:00"


def test_entity_neighbors(graph: GraphProjection) -> None:
    nodes, edges = gr.entity_neighbors(graph, "n-a", 50, None)
    # Outgoing r-b, r-a (uuid desc), then incoming s-a, r-c (uuid desc).
    assert [e.uuid for e in edges] == ["r-b", "r-a", "s-a", "r-c"]
    assert [n.uuid for n in nodes] == ["n-c", "n-b", "m-a"]
    assert nodes[0].episode_uuids == ["p-b"]
    nodes, edges = gr.entity_neighbors(graph, "n-a", 3, [G])
    assert [e.uuid for e in edges] == ["r-b", "r-a", "r-c"]
    assert [n.uuid for n in nodes] == ["n-c", "n-b"]
    assert gr.entity_neighbors(graph, "n-a", 3, []) == ([], [])


def test_entities_by_source(graph: GraphProjection) -> None:
    assert [r.uuid for r in gr.entities_by_source(graph, "a.md", 10, None)] == [
        "m-a",
        "n-a",
        "n-b",
        "n-c",
    ]
    assert [r.uuid for r in gr.entities_by_source(graph, "a.md:1", 10, [G])] == ["n-a", "n-b"]
    assert [r.uuid for r in gr.entities_by_source(graph, "a.md", 1, [G])] == ["n-a"]


def test_find_entity_by_name_prefers_live_then_earliest(graph: GraphProjection) -> None:
    # Both spellings match; n-d (" alice ", created earlier) is Merged, so n-a wins.
    assert [r.uuid for r in grec.entities_by_name(graph, G, "ALICE ")] == ["n-d", "n-a"]
    found = gr.find_entity_by_name(graph, G, "alice")
    assert found is not None and found.uuid == "n-a"
    assert gr.find_entity_by_name(graph, G, "nobody") is None
    h = gr.find_entity_by_name(graph, H, "Alice")
    assert h is not None and h.uuid == "m-a"


def test_active_edges_between(graph: GraphProjection) -> None:
    assert [e.uuid for e in grec.active_edges_between(graph, G, "n-a", "KNOWS", "n-b")] == ["r-a"]
    assert grec.active_edges_between(graph, H, "m-a", "KNOWS", "n-b") == []  # invalidated
    assert grec.active_edges_between(graph, G, "n-a", "LIKES", "n-b") == []


def test_episode_lookups(graph: GraphProjection) -> None:
    assert grec.episodes_by_source(graph, "notes/a.md", None) == {G: ["p-a", "p-b"], H: ["q-a"]}
    assert grec.episodes_by_source(graph, "notes/a.md", [G]) == {G: ["p-a", "p-b"]}
    assert grec.episodes_by_source(graph, "notes/a.md", []) == {}
    assert grec.episodes_by_chunk(graph, "chunk-1", [G]) == {G: ["p-a"]}
    assert grec.episodes_by_chunk(graph, "chunk-1", [H]) == {}
    found = gr.episode_by_content_hash(graph, G, "hash-p-b")
    assert found is not None and found.uuid == "p-b"
    assert gr.episode_by_content_hash(graph, H, "hash-p-b") is None
    assert [e.uuid for e in gr.pending_episodes(graph, G, 10)] == ["p-c"]


def test_counts(graph: GraphProjection) -> None:
    assert [grec.group_counts(graph, g) for g in (G, H, "none")] == [
        GroupCounts(group_id=G, entities=4, episodes=3, edges=3),
        GroupCounts(group_id=H, entities=1, episodes=1, edges=2),
        GroupCounts(group_id="none"),
    ]
    total = graph.counts()
    assert (total.entities, total.edges, total.episodes, total.pending_episodes) == (5, 5, 4, 1)


def test_reads_and_records_share_no_function_name() -> None:
    # Issue 13: each lookup has one implementation; client reads render rows, the commands'
    # lookups live in ``records`` only (the tests then test the code production calls).
    def public(module: ModuleType) -> set[str]:
        return {
            n
            for n, v in vars(module).items()
            if isinstance(v, FunctionType) and v.__module__ == module.__name__ and n[0] != "_"
        }

    assert public(gr) and public(grec)
    assert public(gr) & public(grec) == set()
