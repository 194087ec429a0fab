"""What direct assertion decides (§3.3, ``ingest/assertion``): create or update, which entity
a name or uuid denotes, what an update replaces, which renames are refused, and how a
relationship is upserted. Real workspace (one per module, a group per test); the hash
embedder is a TEST DOUBLE."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.errors import InvalidParamsError, NotFoundError, RequestError
from lcg.events.model import EntityAsserted, EntityRecord, RelationshipAsserted
from lcg.ingest import assertion, merge
from lcg.projections.graph import records as gr
from lcg.query import graph_reads as graph_reads
from lcg.workspace import Workspace


class Group:
    """One group of the module's workspace."""

    def __init__(self, ws: Workspace, group_id: str) -> None:
        self.ws, self.id = ws, group_id

    def entity(self, name: str, **kw: Any) -> assertion.AssertEntityResult:
        return assertion.assert_entity(self.ws, name=name, group_id=self.id, **kw)

    def relate(self, src: str, predicate: str, tgt: str, **kw: Any) -> Any:
        return assertion.assert_relationship(
            self.ws, source_name=src, target_name=tgt, predicate=predicate, group_id=self.id, **kw
        )

    def record(self, uuid: str) -> EntityRecord:
        with self.ws.reading():
            found = gr.entity_record(self.ws.graph, uuid)
        assert found is not None
        return found[1]

    def asserted(self) -> list[EntityAsserted]:
        return [e for e in self.ws.store.reader(self.id).events() if isinstance(e, EntityAsserted)]


@pytest.fixture
def g(shared_ws: Workspace, group: str) -> Group:
    return Group(shared_ws, group)


# ---- entities ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   ", None, 7])
def test_a_blank_or_missing_name_is_refused(g: Group, name: Any) -> None:
    with pytest.raises(InvalidParamsError, match="name is required"):
        g.entity(name)


def test_a_name_asserted_again_in_another_case_updates_the_same_entity(g: Group) -> None:
    first = g.entity("Neil Armstrong", summary="An astronaut.")
    created_at = g.record(first.entity_uuid).created_at
    again = g.entity("  NEIL ARMSTRONG ", summary="A test pilot.")
    assert (again.entity_uuid, first.created, again.created) == (first.entity_uuid, True, False)
    record = g.record(first.entity_uuid)
    assert (record.name, record.summary, record.created_at) == (
        "  NEIL ARMSTRONG ",
        "A test pilot.",
        created_at,
    )
    assert [e.created for e in g.asserted()] == [True, False]


def test_an_update_replaces_labels_summary_and_attributes_whole(g: Group) -> None:
    uuid = g.entity(
        "NASA", labels=["Agency"], summary="An agency.", attributes={"a": 1}
    ).entity_uuid
    g.entity("NASA")
    record = g.record(uuid)
    assert (record.labels, record.summary, record.attributes) == (["Entity"], "", "{}")


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (None, ["Entity"]),
        ([], ["Entity"]),
        (["Person"], ["Entity", "Person"]),
        (["Person", "Entity", "Person", "", 3], ["Entity", "Person"]),
        ("Person", ["Entity"]),  # not a list
    ],
)
def test_labels_always_start_with_entity_once(g: Group, labels: Any, expected: list[str]) -> None:
    uuid = g.entity("Neil Armstrong", labels=labels).entity_uuid
    assert g.record(uuid).labels == expected


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [({"b": 1, "a": [2]}, '{"a":[2],"b":1}'), ([1, 2], "{}"), ("x", "{}"), (None, "{}")],
)
def test_attributes_are_an_object_or_nothing(g: Group, attributes: Any, expected: str) -> None:
    uuid = g.entity("Neil Armstrong", attributes=attributes).entity_uuid
    assert g.record(uuid).attributes == expected


def test_a_uuid_is_looked_up_strictly_within_the_group_and_never_created(g: Group) -> None:
    foreign = assertion.assert_entity(g.ws, name="NASA", group_id=g.id + "-x").entity_uuid
    for uuid in (foreign, "00000000-0000-4000-8000-000000000000"):
        with pytest.raises(NotFoundError, match=f"does not exist in group '{g.id}'"):
            g.entity("NASA", entity_uuid=uuid)
    assert g.asserted() == []


def test_a_uuid_renames_its_entity(g: Group) -> None:
    uuid = g.entity("Apollo").entity_uuid
    res = g.entity("Apollo 11", entity_uuid=uuid)
    assert (res.entity_uuid, res.created) == (uuid, False)
    assert g.record(uuid).name == "Apollo 11"


def test_a_rename_onto_a_name_another_entity_holds_is_refused(g: Group) -> None:
    g.entity("Apollo 11")
    other = g.entity("Apollo").entity_uuid
    with pytest.raises(RequestError, match="already has that name"):
        g.entity("apollo 11", entity_uuid=other)
    assert g.record(other).name == "Apollo"


def test_a_rename_that_keeps_the_key_is_no_rename(g: Group) -> None:
    uuid = g.entity("apollo 11").entity_uuid
    assert g.entity("APOLLO 11", entity_uuid=uuid).entity_uuid == uuid


def test_a_merged_name_or_uuid_updates_the_survivor(g: Group) -> None:
    keep = g.entity("Neil Armstrong").entity_uuid
    alias = g.entity("Armstrong").entity_uuid
    merge.merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias])
    by_uuid = g.entity("Neil Armstrong", entity_uuid=alias, summary="Via the tombstone.")
    assert (by_uuid.entity_uuid, by_uuid.created) == (keep, False)
    with g.ws.reading():
        found = assertion.resolve_entity_by_name(g.ws, g.id, "armstrong")
    assert found is not None and found.uuid == keep


def test_a_merge_chain_that_leaves_the_group_is_not_followed(g: Group) -> None:
    foreign = assertion.assert_entity(g.ws, name="Neil", group_id=g.id + "-x").entity_uuid
    record = EntityRecord(
        uuid="00000000-0000-4000-8000-0000000000aa",
        name="Armstrong",
        labels=["Entity", "Merged"],
        attributes=f'{{"merged_into":"{foreign}"}}',
        created_at="2024-01-01T00:00:00Z",
    )
    with g.ws.group_lock(g.id):
        g.ws.commit(g.id, [EntityAsserted(group_id=g.id, entity=record, created=True)])
    with pytest.raises(NotFoundError, match="merged_into chain ends"):
        g.entity("Armstrong")


# ---- relationships ----------------------------------------------------------------------


@pytest.mark.parametrize("field", ["source_name", "target_name", "predicate"])
def test_a_relationship_needs_each_of_its_three_names(g: Group, field: str) -> None:
    names = {"source_name": "A", "target_name": "B", "predicate": "knows", field: " "}
    with pytest.raises(InvalidParamsError, match=f"{field} is required"):
        assertion.assert_relationship(g.ws, group_id=g.id, **names)


def test_an_endpoint_not_in_the_group_points_to_cross_group_edges(g: Group) -> None:
    g.entity("Neil Armstrong")
    assertion.assert_entity(g.ws, name="NASA", group_id=g.id + "-x")
    with pytest.raises(NotFoundError, match="target entity 'NASA' not found.*cross_group"):
        g.relate("Neil Armstrong", "worked for", "NASA")


def test_a_relationship_is_upserted_by_source_predicate_and_target(g: Group) -> None:
    a, b = g.entity("Neil Armstrong").entity_uuid, g.entity("NASA").entity_uuid
    first = g.relate("Neil Armstrong", "worked for", "NASA", relation_type="WORKED_FOR")
    again = g.relate("neil armstrong", "worked for", "nasa", fact="He flew for NASA.")
    other = g.relate("Neil Armstrong", "left", "NASA")
    reverse = g.relate("NASA", "worked for", "Neil Armstrong")
    assert (first.created, again.created, other.created, reverse.created) == (
        True,
        False,
        True,
        True,
    )
    assert again.edge_uuid == first.edge_uuid
    assert len({first.edge_uuid, other.edge_uuid, reverse.edge_uuid}) == 3
    with g.ws.reading():
        (edge,) = graph_reads.edges_by_uuids(g.ws.graph, [first.edge_uuid])
    assert (edge.source_node_uuid, edge.target_node_uuid, edge.name) == (a, b, "worked for")
    assert (edge.fact, edge.relation_type) == ("He flew for NASA.", None), "a whole replace"
    kinds = [
        e.created for e in g.ws.store.reader(g.id).events() if isinstance(e, RelationshipAsserted)
    ]
    assert kinds == [True, False, True, True]


def test_a_blank_fact_is_said_from_the_three_names(g: Group) -> None:
    g.entity("Neil Armstrong")
    g.entity("NASA")
    res = g.relate("neil armstrong", "worked for", "NASA", fact="  ")
    with g.ws.reading():
        (edge,) = graph_reads.edges_by_uuids(g.ws.graph, [res.edge_uuid])
    assert edge.fact == "neil armstrong worked for NASA"


def test_a_relationship_to_a_merged_name_lands_on_the_survivor(g: Group) -> None:
    keep = g.entity("Neil Armstrong").entity_uuid
    alias = g.entity("Armstrong").entity_uuid
    nasa = g.entity("NASA").entity_uuid
    merge.merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias])
    res = g.relate("Armstrong", "worked for", "NASA")
    with g.ws.reading():
        (edge,) = graph_reads.edges_by_uuids(g.ws.graph, [res.edge_uuid])
    assert (edge.source_node_uuid, edge.target_node_uuid) == (keep, nasa)
