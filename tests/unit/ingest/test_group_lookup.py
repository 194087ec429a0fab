"""Where resolution finds its candidates (``GroupLookup``, docs/adr/0032): only in the group
asked, by name key, BM25 and name vectors, with Merged tombstones standing for the entity they
were merged into. Real workspace; the hash embedder is a TEST DOUBLE."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from lcg.events.model import EntityAsserted, EntityRecord
from lcg.ingest import assertion, merge
from lcg.ingest.resolution import GroupLookup, Match
from lcg.workspace import Workspace


class Group:
    """One group of the module's workspace, and lookups of names in it."""

    def __init__(self, ws: Workspace, group_id: str) -> None:
        self.ws, self.id, self.other = ws, group_id, group_id + "-other"

    def lookup(self) -> GroupLookup:
        def vector_of(name: str) -> np.ndarray | None:
            return self.ws.text_embedder.vectors([name]).get(name)

        return GroupLookup(self.ws, self.id, vector_of)

    def resolve(self, name: str, *, vectors: bool = True) -> Match | None:
        with self.ws.reading():
            return self.lookup().resolve(name, use_vectors=vectors)

    def entity(self, name: str, group_id: str | None = None) -> str:
        made = assertion.assert_entity(self.ws, name=name, group_id=group_id or self.id)
        return made.entity_uuid

    def tombstone(self, uuid: str, name: str, merged_into: str) -> None:
        """A Merged entity pointing at ``merged_into``, committed as is."""
        record = EntityRecord(
            uuid=uuid,
            name=name,
            labels=["Entity", "Merged"],
            attributes=f'{{"merged_into":"{merged_into}"}}',
            created_at="2024-01-01T00:00:00.000000Z",
        )
        with self.ws.group_lock(self.id):
            self.ws.commit(self.id, [EntityAsserted(group_id=self.id, entity=record, created=True)])


@pytest.fixture
def g(shared_ws: Workspace, group: str) -> Group:
    return Group(shared_ws, group)


def test_a_name_resolves_only_within_its_own_group(g: Group) -> None:
    g.entity("Kennedy Space Center", g.other)
    assert g.resolve("Kennedy Space Center") is None
    assert g.resolve("Kennedy Space Centre") is None
    here = g.entity("Kennedy Space Center")
    m = g.resolve("Kennedy Space Center")
    assert m is not None and (m.candidate.uuid, m.rule) == (here, "exact")


def test_an_exact_key_is_found_however_the_name_is_spaced_or_cased(g: Group) -> None:
    uuid = g.entity("Neil Armstrong")
    for spelled in ("neil armstrong", "  NEIL   ARMSTRONG ", "Neil\tArmstrong"):
        m = g.resolve(spelled)
        assert m is not None and (m.candidate.uuid, m.rule) == (uuid, "exact"), spelled


def test_an_exact_holder_beats_a_fuzzy_one_in_the_graph(g: Group) -> None:
    g.entity("Buzz Aldrinn")  # older, and a fuzzy match of the name
    exact = g.entity("Buzz Aldrin")
    m = g.resolve("buzz aldrin")
    assert m is not None and (m.candidate.uuid, m.rule) == (exact, "exact")


def test_a_fuzzy_variant_resolves_to_the_entity_it_spells(g: Group) -> None:
    uuid = g.entity("Valentina Tereshkova")
    m = g.resolve("Valentina Tereshkovo")
    assert m is not None and (m.candidate.uuid, m.rule) == (uuid, "fuzzy")


def test_a_guarded_near_miss_in_the_graph_resolves_to_nothing(g: Group) -> None:
    g.entity("Apollo 11")
    g.entity("Jane Smith")
    assert g.resolve("Apollo 12") is None
    assert g.resolve("John Smith") is None


def test_a_name_vector_match_needs_the_vectors(g: Group) -> None:
    uuid = g.entity("International Space Station Alpha")
    m = g.resolve("Space Station Alpha")
    assert m is not None and (m.candidate.uuid, m.rule) == (uuid, "vector")
    assert m.score >= 0.85
    # Edge endpoints are resolved without vectors: a name only an embedding links is not one.
    assert g.resolve("Space Station Alpha", vectors=False) is None


def test_a_merged_name_resolves_to_the_entity_it_was_merged_into(g: Group) -> None:
    canonical = g.entity("Edwin Aldrin")
    alias = g.entity("Buzz Aldrin")
    res = merge.merge_entities(g.ws, group_id=g.id, canonical_uuid=canonical, alias_uuids=[alias])
    assert res.success and res.merged_count == 1
    m = g.resolve("Buzz Aldrin")
    assert m is not None
    assert (m.candidate.uuid, m.rule) == (canonical, "exact"), "matched by the tombstone's name"


def test_a_tombstone_whose_chain_ends_nowhere_is_no_candidate(g: Group) -> None:
    g.tombstone(str(uuid.uuid4()), "Ghost Station", "missing-uuid")
    assert g.resolve("Ghost Station") is None


def test_a_tombstone_chain_that_loops_is_no_candidate(g: Group) -> None:
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    g.tombstone(a, "Loop Station", b)
    g.tombstone(b, "Loop Station Two", a)
    assert g.resolve("Loop Station") is None


def test_prefetch_resolves_a_batch_as_resolve_does_one_by_one(g: Group) -> None:
    g.entity("Neil Armstrong")
    g.entity("Apollo 11")
    names = ["neil armstrong", "Apollo-11", "Apollo 12", "Michael Collins"]
    with g.ws.reading():
        one_by_one = [g.lookup().resolve(n) for n in names]
        batch = g.lookup()
        batch.prefetch(names)
        together = [batch.resolve(n) for n in names]
    assert together == one_by_one
    assert [m is not None for m in together] == [True, True, False, False]
