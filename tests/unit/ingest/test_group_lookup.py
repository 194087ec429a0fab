"""Where resolution finds its candidates (``GroupLookup``, docs/adr/0032): only in the group
asked, by name key, BM25 and name vectors, with Merged tombstones standing for the entity they
were merged into. Real workspace; the hash embedder is a TEST DOUBLE."""

from __future__ import annotations

import numpy as np

from lcg.events.model import EntityAsserted, EntityRecord
from lcg.ingest import assertion, merge
from lcg.ingest.resolution import GroupLookup, Match
from lcg.workspace import Workspace

G, OTHER = "g", "other"


def _lookup(ws: Workspace, group_id: str = G) -> GroupLookup:
    def vector_of(name: str) -> np.ndarray | None:
        return ws.text_embedder.vectors([name]).get(name)

    return GroupLookup(ws, group_id, vector_of)


def _resolve(ws: Workspace, name: str, *, group_id: str = G, vectors: bool = True) -> Match | None:
    with ws.reading():
        return _lookup(ws, group_id).resolve(name, use_vectors=vectors)


def _entity(ws: Workspace, name: str, group_id: str = G) -> str:
    return assertion.assert_entity(ws, name=name, group_id=group_id).entity_uuid


def test_a_name_resolves_only_within_its_own_group(ws: Workspace) -> None:
    _entity(ws, "Kennedy Space Center", OTHER)
    assert _resolve(ws, "Kennedy Space Center") is None
    assert _resolve(ws, "Kennedy Space Centre") is None
    here = _entity(ws, "Kennedy Space Center")
    m = _resolve(ws, "Kennedy Space Center")
    assert m is not None and (m.candidate.uuid, m.rule) == (here, "exact")


def test_an_exact_key_is_found_however_the_name_is_spaced_or_cased(ws: Workspace) -> None:
    uuid = _entity(ws, "Neil Armstrong")
    for spelled in ("neil armstrong", "  NEIL   ARMSTRONG ", "Neil\tArmstrong"):
        m = _resolve(ws, spelled)
        assert m is not None and (m.candidate.uuid, m.rule) == (uuid, "exact"), spelled


def test_an_exact_holder_beats_a_fuzzy_one_in_the_graph(ws: Workspace) -> None:
    _entity(ws, "Buzz Aldrinn")  # older, and a fuzzy match of the name
    exact = _entity(ws, "Buzz Aldrin")
    m = _resolve(ws, "buzz aldrin")
    assert m is not None and (m.candidate.uuid, m.rule) == (exact, "exact")


def test_a_fuzzy_variant_resolves_to_the_entity_it_spells(ws: Workspace) -> None:
    uuid = _entity(ws, "Valentina Tereshkova")
    m = _resolve(ws, "Valentina Tereshkovo")
    assert m is not None and (m.candidate.uuid, m.rule) == (uuid, "fuzzy")


def test_a_guarded_near_miss_in_the_graph_resolves_to_nothing(ws: Workspace) -> None:
    _entity(ws, "Apollo 11")
    _entity(ws, "Jane Smith")
    assert _resolve(ws, "Apollo 12") is None
    assert _resolve(ws, "John Smith") is None


def test_a_name_vector_match_needs_the_vectors(ws: Workspace) -> None:
    uuid = _entity(ws, "International Space Station Alpha")
    m = _resolve(ws, "Space Station Alpha")
    assert m is not None and (m.candidate.uuid, m.rule) == (uuid, "vector")
    assert m.score >= 0.85
    # Edge endpoints are resolved without vectors: a name only an embedding links is not one.
    assert _resolve(ws, "Space Station Alpha", vectors=False) is None


def test_a_merged_name_resolves_to_the_entity_it_was_merged_into(ws: Workspace) -> None:
    canonical = _entity(ws, "Edwin Aldrin")
    alias = _entity(ws, "Buzz Aldrin")
    res = merge.merge_entities(ws, group_id=G, canonical_uuid=canonical, alias_uuids=[alias])
    assert res.success and res.merged_count == 1
    m = _resolve(ws, "Buzz Aldrin")
    assert m is not None
    assert (m.candidate.uuid, m.rule) == (canonical, "exact"), "matched by the tombstone's name"


def _tombstone(ws: Workspace, uuid: str, name: str, merged_into: str) -> None:
    record = EntityRecord(
        uuid=uuid,
        name=name,
        labels=["Entity", "Merged"],
        attributes=f'{{"merged_into":"{merged_into}"}}',
        created_at="2024-01-01T00:00:00.000000Z",
    )
    with ws.group_lock(G):
        ws.commit(G, [EntityAsserted(group_id=G, entity=record, created=True)])


def test_a_tombstone_whose_chain_ends_nowhere_is_no_candidate(ws: Workspace) -> None:
    _tombstone(ws, "00000000-0000-4000-8000-00000000000a", "Ghost Station", "missing-uuid")
    assert _resolve(ws, "Ghost Station") is None


def test_a_tombstone_chain_that_loops_is_no_candidate(ws: Workspace) -> None:
    a, b = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
    _tombstone(ws, a, "Loop Station", b)
    _tombstone(ws, b, "Loop Station Two", a)
    assert _resolve(ws, "Loop Station") is None


def test_prefetch_resolves_a_batch_as_resolve_does_one_by_one(ws: Workspace) -> None:
    _entity(ws, "Neil Armstrong")
    _entity(ws, "Apollo 11")
    names = ["neil armstrong", "Apollo-11", "Apollo 12", "Michael Collins"]
    with ws.reading():
        one_by_one = [_lookup(ws).resolve(n) for n in names]
        batch = _lookup(ws)
        batch.prefetch(names)
        together = [batch.resolve(n) for n in names]
    assert together == one_by_one
    assert [m is not None for m in together] == [True, True, False, False]
