"""What ``merge_entities`` decides (§3.7, ``ingest/merge``): which entities are canonical and
aliases, what each alias edge becomes, and what is refused. Real workspace (one per module, a
group per test); the hash embedder is a TEST DOUBLE."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.events.model import (
    CorrectionsApplied,
    EdgeInvalidation,
    EntitiesMerged,
    EntityAsserted,
    EntityRecord,
)
from lcg.ingest import assertion, cross_group
from lcg.ingest.merge import MergePlan, merge_entities
from lcg.projections.graph import records as gr
from lcg.workspace import Workspace


class Group:
    """One group of the module's workspace."""

    def __init__(self, ws: Workspace, group_id: str) -> None:
        self.ws, self.id = ws, group_id

    def entity(self, name: str, **kw: Any) -> str:
        return assertion.assert_entity(self.ws, name=name, group_id=self.id, **kw).entity_uuid

    def edge(self, src: str, predicate: str, tgt: str) -> str:
        return assertion.assert_relationship(
            self.ws, source_name=src, target_name=tgt, predicate=predicate, group_id=self.id
        ).edge_uuid

    def current(self) -> set[tuple[str, str, str]]:
        """(source, name, target) of the group's current edges."""
        with self.ws.reading():
            edges = gr.all_edges(self.ws.graph, self.id)
        return {(e.source_uuid, e.name, e.target_uuid) for e in edges if e.invalid_at is None}

    def record(self, uuid: str) -> EntityRecord:
        with self.ws.reading():
            found = gr.entity_record(self.ws.graph, uuid)
        assert found is not None
        return found[1]

    def merges(self) -> list[EntitiesMerged]:
        return [e for e in self.ws.store.reader(self.id).events() if isinstance(e, EntitiesMerged)]


@pytest.fixture
def g(shared_ws: Workspace, group: str) -> Group:
    return Group(shared_ws, group)


# ---- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "error"),
    [
        ({"alias_names": ["A"]}, "either canonical_uuid or canonical_name is required"),
        ({"canonical_name": "A"}, "no aliases given"),
        ({"canonical_uuid": "nope", "alias_names": ["A"]}, "canonical entity 'nope' not found"),
        ({"canonical_name": "Nobody", "alias_names": ["A"]}, "'Nobody' matches no entities"),
    ],
)
def test_a_merge_without_a_canonical_or_aliases_is_a_soft_error(
    g: Group, kw: dict[str, Any], error: str
) -> None:
    res = merge_entities(g.ws, group_id=g.id, **kw)
    assert not res.success and len(res.errors) == 1 and error in res.errors[0]
    assert g.merges() == []


def test_a_canonical_of_another_group_is_refused(g: Group) -> None:
    other = assertion.assert_entity(g.ws, name="Neil", group_id=g.id + "-x").entity_uuid
    g.entity("Armstrong")
    res = merge_entities(g.ws, group_id=g.id, canonical_uuid=other, alias_names=["Armstrong"])
    assert not res.success and "belongs to group" in res.errors[0]


def test_a_merged_canonical_is_refused(g: Group) -> None:
    keep, old = g.entity("Neil Armstrong"), g.entity("Armstrong")
    g.entity("Commander")
    assert merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[old]).success
    res = merge_entities(g.ws, group_id=g.id, canonical_uuid=old, alias_names=["Commander"])
    assert not res.success and res.errors == [f"canonical entity '{old}' is already merged"]


def test_missing_aliases_are_reported_but_the_merge_still_succeeds(g: Group) -> None:
    keep, alias = g.entity("Neil Armstrong"), g.entity("Armstrong")
    res = merge_entities(
        g.ws,
        group_id=g.id,
        canonical_uuid=keep,
        alias_uuids=[alias, "no-such-uuid"],
        alias_names=["Nobody"],
    )
    assert res.success and res.merged_count == 1
    assert res.errors == [
        "alias entity 'no-such-uuid' not found",
        "alias name 'Nobody' matches no entities",
    ]


def test_an_alias_of_another_group_is_an_error_that_fails_the_merge(g: Group) -> None:
    keep, alias = g.entity("Neil Armstrong"), g.entity("Armstrong")
    foreign = assertion.assert_entity(g.ws, name="Neil", group_id=g.id + "-x").entity_uuid
    res = merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias, foreign])
    assert not res.success and res.merged_count == 1, "the rest is still merged"
    assert res.errors == [f"alias entity '{foreign}' belongs to group '{g.id}-x'"]
    with g.ws.reading():
        found = gr.entity_record(g.ws.graph, foreign)
    assert found is not None and "Merged" not in found[1].labels


# ---- who is canonical, who is an alias --------------------------------------------------


def _dated(g: Group, uuid: str, name: str, at: str) -> str:
    record = EntityRecord(uuid=uuid, name=name, labels=["Entity"], created_at=at)
    with g.ws.group_lock(g.id):
        g.ws.commit(g.id, [EntityAsserted(group_id=g.id, entity=record, created=True)])
    return uuid


def test_a_canonical_by_name_is_the_oldest_holder_and_merge_all_takes_the_rest(g: Group) -> None:
    young = _dated(g, "00000000-0000-4000-8000-000000000001", "Apollo", "2024-02-01T00:00:00Z")
    old = _dated(g, "00000000-0000-4000-8000-000000000002", "apollo", "2020-01-01T00:00:00Z")
    res = merge_entities(g.ws, group_id=g.id, canonical_name="APOLLO", merge_all_by_name=True)
    assert (res.success, res.canonical_uuid, res.merged_count) == (True, old, 1)
    assert g.record(young).labels[-1] == "Merged"


def test_the_canonical_is_never_its_own_alias_and_tombstones_are_skipped(g: Group) -> None:
    keep, alias = g.entity("Neil Armstrong"), g.entity("Armstrong")
    merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias])
    res = merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[keep, alias])
    assert (res.success, res.merged_count, res.skipped) == (True, 0, [alias])
    assert len(g.merges()) == 1, "nothing to merge records nothing"


def test_an_alias_becomes_a_tombstone_keeping_its_attributes(g: Group) -> None:
    keep = g.entity("Neil Armstrong")
    alias = g.entity("Armstrong", attributes={"rank": "commander"}, labels=["Person"])
    merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias])
    tomb = g.record(alias)
    assert tomb.labels == ["Entity", "Person", "Merged"]
    assert tomb.attributes == f'{{"merged_into":"{keep}","rank":"commander"}}'


def test_the_canonical_takes_the_earliest_creation_time(g: Group) -> None:
    keep = _dated(g, "00000000-0000-4000-8000-00000000000a", "Neil", "2024-01-01T00:00:00Z")
    alias = _dated(g, "00000000-0000-4000-8000-00000000000b", "Armstrong", "2019-05-05T00:00:00Z")
    merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias])
    assert g.record(keep).created_at == "2019-05-05T00:00:00.000000Z"


# ---- what each alias edge becomes -------------------------------------------------------


def test_an_alias_edge_moves_to_the_canonical(g: Group) -> None:
    keep, alias, nasa = g.entity("Neil Armstrong"), g.entity("Armstrong"), g.entity("NASA")
    old = g.edge("Armstrong", "worked for", "NASA")
    res = merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias])
    assert (res.edges_rewritten, res.edges_deduplicated) == (1, 0)
    assert g.current() == {(keep, "worked for", nasa)}
    (event,) = g.merges()
    assert [i.uuid for i in event.merge.edges_invalidated] == [old]
    assert event.merge.edges_created[0].uuid != old, "a copy, with a new uuid"


def test_an_alias_edge_the_canonical_already_has_is_only_closed(g: Group) -> None:
    keep, alias, nasa = g.entity("Neil Armstrong"), g.entity("Armstrong"), g.entity("NASA")
    g.edge("Neil Armstrong", "worked for", "NASA")
    g.edge("Armstrong", "worked for", "NASA")
    g.edge("Armstrong", "trained at", "NASA")
    res = merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias])
    assert (res.edges_rewritten, res.edges_deduplicated) == (1, 1)
    assert g.current() == {(keep, "worked for", nasa), (keep, "trained at", nasa)}


def test_an_edge_between_canonical_and_alias_would_loop_and_is_only_closed(g: Group) -> None:
    keep, alias = g.entity("Neil Armstrong"), g.entity("Armstrong")
    second = g.entity("Neil")
    g.edge("Armstrong", "is", "Neil Armstrong")
    g.edge("Armstrong", "also is", "Neil")  # two aliases: a loop too
    res = merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias, second])
    assert (res.edges_rewritten, res.edges_deduplicated) == (0, 2)
    assert g.current() == set()


def test_an_edge_another_group_owns_is_left_alone(g: Group) -> None:
    keep, alias = g.entity("Neil Armstrong"), g.entity("Armstrong")
    other = g.id + "-x"
    houston = assertion.assert_entity(g.ws, name="Houston", group_id=other).entity_uuid
    cross_group.add_cross_group_edge(
        g.ws,
        group_id=other,
        source={"uuid": houston},
        target={"source_group_id": g.id, "endpoint_name": "Armstrong"},
        name="trained",
    )
    res = merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias])
    assert (res.foreign_edges_skipped, res.edges_rewritten) == (1, 0)


def test_a_dry_run_plans_per_alias_and_records_nothing(g: Group) -> None:
    keep, alias, nasa = g.entity("Neil Armstrong"), g.entity("Armstrong"), g.entity("NASA")
    g.edge("Neil Armstrong", "worked for", "NASA")
    g.edge("Armstrong", "worked for", "NASA")
    g.edge("Armstrong", "flew for", "NASA")
    res = merge_entities(
        g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias], dry_run=True
    )
    assert res.success and res.dry_run and res.merged_count == 1
    plan = res.plan
    assert isinstance(plan, MergePlan)
    (one,) = plan.aliases
    assert (one.uuid, one.active_edges, one.duplicate_edges) == (alias, 2, 1)
    assert (plan.total_edges_rewritten, plan.total_edges_collapsed) == (1, 1)
    assert g.merges() == [] and "Merged" not in g.record(alias).labels
    assert (keep, "worked for", nasa) in g.current()


def test_an_alias_edge_no_longer_current_is_left_as_it_is(g: Group) -> None:
    keep, alias, nasa = g.entity("Neil Armstrong"), g.entity("Armstrong"), g.entity("NASA")
    old = g.edge("Armstrong", "worked for", "NASA")
    with g.ws.group_lock(g.id):
        closed = EdgeInvalidation(uuid=old, invalid_at="2024-01-01T00:00:00Z", reason="retract")
        g.ws.commit(
            g.id, [CorrectionsApplied(group_id=g.id, correction_ids=["r"], retractions=[closed])]
        )
    res = merge_entities(g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias])
    assert (res.merged_count, res.edges_rewritten, res.edges_deduplicated) == (1, 0, 0)
    assert g.current() == set(), f"nothing moved onto {keep} or to {nasa}"
