"""What cross-group edges decide (§3.10, §5.12, ``ingest/cross_group``): how a name in another
group binds, which endpoints are refused, and what a rebind changes. Real workspace (one per
module, a group per test); the hash embedder is a TEST DOUBLE."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.errors import InvalidParamsError, NotFoundError
from lcg.events.model import CrossGroupEdgeAdded, EntityAsserted, EntityRecord, PointersRebound
from lcg.ingest import assertion, merge
from lcg.ingest.cross_group import add_cross_group_edge, rebind_pointers, resolve_pointer
from lcg.projections.graph import records as gr
from lcg.workspace import Workspace


class Groups:
    """A group that owns edges (``owner``) and the group they point into (``source``)."""

    def __init__(self, ws: Workspace, group_id: str) -> None:
        self.ws, self.owner, self.source = ws, group_id, group_id + "-src"
        self.houston = assertion.assert_entity(ws, name="Houston", group_id=self.owner).entity_uuid

    def entity(self, name: str, group_id: str | None = None) -> str:
        made = assertion.assert_entity(self.ws, name=name, group_id=group_id or self.source)
        return made.entity_uuid

    def link(self, name: str, predicate: str = "trained") -> Any:
        """An owner edge from Houston to ``name`` of the source group."""
        return add_cross_group_edge(
            self.ws,
            group_id=self.owner,
            source={"uuid": self.houston},
            target={"source_group_id": self.source, "endpoint_name": name},
            name=predicate,
        )

    def resolve(self, name: str) -> tuple[str, str | None]:
        with self.ws.reading():
            return resolve_pointer(self.ws, self.source, name)

    def target_of(self, edge_uuid: str) -> tuple[str, str | None]:
        """(target uuid, invalid_at) of an owner edge."""
        with self.ws.reading():
            (edge,) = [e for e in gr.all_edges(self.ws.graph, self.owner) if e.uuid == edge_uuid]
        return edge.target_uuid, edge.invalid_at

    def rebinds(self) -> list[PointersRebound]:
        events = self.ws.store.reader(self.owner).events()
        return [e for e in events if isinstance(e, PointersRebound)]


@pytest.fixture
def x(shared_ws: Workspace, group: str) -> Groups:
    return Groups(shared_ws, group)


def _legacy_twin(x: Groups, uuid: str, name: str) -> None:
    """A second entity of one name, as an older lcg could record it."""
    record = EntityRecord(
        uuid=uuid, name=name, labels=["Entity"], created_at="2020-01-01T00:00:00Z"
    )
    with x.ws.group_lock(x.source):
        x.ws.commit(x.source, [EntityAsserted(group_id=x.source, entity=record, created=True)])


# ---- resolving a name in another group --------------------------------------------------


def test_no_entity_of_the_name_is_unbound(x: Groups) -> None:
    assert x.resolve("armstrong") == ("unbound", None)


def test_one_entity_of_the_name_is_bound_whatever_its_case(x: Groups) -> None:
    uuid = x.entity("Neil Armstrong")
    assert x.resolve("neil armstrong") == ("bound", uuid)


def test_two_live_entities_of_the_name_are_ambiguous(x: Groups) -> None:
    x.entity("Neil Armstrong")
    _legacy_twin(x, "00000000-0000-4000-8000-0000000000c1", "NEIL ARMSTRONG")
    assert x.resolve("neil armstrong") == ("ambiguous", None)


def test_a_merged_entity_binds_to_its_survivor(x: Groups) -> None:
    keep, alias = x.entity("Neil Armstrong"), x.entity("Armstrong")
    merge.merge_entities(x.ws, group_id=x.source, canonical_uuid=keep, alias_uuids=[alias])
    assert x.resolve("armstrong") == ("bound", keep)


def test_a_tombstone_beside_a_live_entity_of_its_name_is_not_ambiguous(x: Groups) -> None:
    keep = x.entity("Buzz")
    alias = x.entity("Aldrin")
    merge.merge_entities(x.ws, group_id=x.source, canonical_uuid=keep, alias_uuids=[alias])
    live = x.entity("aldrin")  # asserted again after the merge: a new entity of that name
    assert live != alias and x.resolve("aldrin") == ("bound", live)


# ---- adding an edge -----------------------------------------------------------------------


def test_a_bound_endpoint_is_the_entity_and_an_unbound_one_is_empty(x: Groups) -> None:
    neil = x.entity("Neil Armstrong")
    bound = x.link("  Neil ARMSTRONG ")
    ptr = bound.cross_group_pointers.dst
    assert bound.target_node_uuid == neil and ptr is not None
    assert (ptr.binding_state, ptr.resolved_uuid, ptr.endpoint_name) == (
        "bound",
        neil,
        "neil armstrong",
    )
    assert ptr.bound_at_seq is not None and bound.cross_group_pointers.src is None
    unbound = x.link("Nobody")
    ptr = unbound.cross_group_pointers.dst
    assert unbound.target_node_uuid == "" and ptr is not None
    assert (ptr.binding_state, ptr.resolved_uuid, ptr.bound_at_seq) == ("unbound", None, None)


@pytest.mark.parametrize(
    "target",
    [
        None,
        "Neil",
        {},
        {"uuid": ""},
        {"uuid": "u", "endpoint_name": "n"},
        {"source_group_id": "s"},
        {"source_group_id": "", "endpoint_name": "n"},
        {"source_group_id": "s", "endpoint_name": "  "},
        {"source_group_id": "s", "endpoint_name": "n", "extra": 1},
    ],
)
def test_an_endpoint_must_be_a_uuid_alone_or_a_group_and_name_alone(x: Groups, target: Any) -> None:
    with pytest.raises(InvalidParamsError):
        add_cross_group_edge(x.ws, group_id=x.owner, source={"uuid": x.houston}, target=target)
    events = x.ws.store.reader(x.owner).events()
    assert not any(isinstance(e, CrossGroupEdgeAdded) for e in events)


def test_a_uuid_endpoint_must_be_an_entity_of_the_edges_own_group(x: Groups) -> None:
    elsewhere = x.entity("Neil Armstrong")
    with pytest.raises(NotFoundError, match=f"does not exist in group '{x.owner}'"):
        add_cross_group_edge(
            x.ws, group_id=x.owner, source={"uuid": x.houston}, target={"uuid": elsewhere}
        )


# ---- rebinding ----------------------------------------------------------------------------


def test_a_rebind_binds_a_pointer_once_its_name_exists(x: Groups) -> None:
    edge = x.link("Neil Armstrong")
    neil = x.entity("Neil Armstrong")
    res = rebind_pointers(x.ws, x.source)
    assert (res.checked, res.bound, res.unbound) == (1, 1, 0)
    assert x.target_of(edge.uuid) == (neil, None)
    (event,) = x.rebinds()
    assert event.source_group_id == x.source and [r.uuid for r in event.rebinds] == [edge.uuid]


def test_a_rebind_that_changes_nothing_records_nothing(x: Groups) -> None:
    x.link("Nobody")
    res = rebind_pointers(x.ws, x.source)
    assert (res.checked, res.unbound) == (1, 1)
    assert x.rebinds() == []


def test_a_fresh_bound_pointer_is_skipped_unless_forced(x: Groups) -> None:
    x.entity("Neil Armstrong")
    x.link("Neil Armstrong")
    lazy = rebind_pointers(x.ws, x.source)
    assert (lazy.staleness_skipped, lazy.checked) == (1, 0)
    forced = rebind_pointers(x.ws, x.source, forced=True)
    assert (forced.staleness_skipped, forced.checked, forced.bound) == (0, 1, 1)


def test_a_rebind_onto_an_edge_already_there_closes_the_duplicate(x: Groups) -> None:
    neil = x.entity("Neil Armstrong")
    kept = x.link("Neil Armstrong")
    late = x.link("Armstrong")  # unbound for now
    alias = x.entity("Armstrong")
    merge.merge_entities(x.ws, group_id=x.source, canonical_uuid=neil, alias_uuids=[alias])
    res = rebind_pointers(x.ws, x.source, forced=True)
    assert res.invalidated_duplicate == 1
    target, closed_at = x.target_of(late.uuid)
    assert target == neil and closed_at is not None
    assert x.target_of(kept.uuid) == (neil, None)


def test_a_rebind_that_makes_both_ends_one_entity_closes_the_loop(x: Groups) -> None:
    neil = x.entity("Neil Armstrong")
    loop = add_cross_group_edge(
        x.ws,
        group_id=x.owner,
        source={"source_group_id": x.source, "endpoint_name": "Neil Armstrong"},
        target={"source_group_id": x.source, "endpoint_name": "Armstrong"},
        name="is",
    )
    alias = x.entity("Armstrong")
    merge.merge_entities(x.ws, group_id=x.source, canonical_uuid=neil, alias_uuids=[alias])
    res = rebind_pointers(x.ws, x.source, forced=True)
    assert res.invalidated_self_loop == 1
    assert x.target_of(loop.uuid)[1] is not None


def test_a_rebind_needs_a_source_group(x: Groups) -> None:
    with pytest.raises(InvalidParamsError, match="source_group_id is required"):
        rebind_pointers(x.ws, "")
