"""What ingestion and deletion of episodes decide (§3.2, §3.6, ``ingest/episodes``,
``ingest/deletion``): what a chunk or episode records, when a resend is a duplicate or a
replacement, which episodes a deletion matches and where it is recorded, and what a purge
needs. Real workspace (one per module, a group per test, a fresh one where a test clears the
whole workspace); the hash embedder is a TEST DOUBLE."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lcg import timestamps
from lcg.errors import InvalidParamsError
from lcg.events.layout import DEFAULT_GROUP
from lcg.events.model import EpisodeAdded, EpisodesDeleted, Event, GroupPurged
from lcg.ingest import assertion, cross_group, deletion, episodes, parse_timestamp
from lcg.projections.graph import records as gr
from lcg.workspace import Workspace

WHEN = "2024-05-01T12:00:00Z"


def _events(ws: Workspace, group_id: str) -> list[Event]:
    if group_id not in ws.store.groups():
        return []
    return list(ws.store.reader(group_id).events())


def _of(kind: type[Event], ws: Workspace, group_id: str) -> list[Any]:
    return [e for e in _events(ws, group_id) if isinstance(e, kind)]


@pytest.fixture
def chunk(shared_ws: Workspace, group: str) -> Callable[..., episodes.ProcessChunkResult]:
    def send(text: str, chunk_id: str = "c1", source_file: str = "a.md", **kw: Any) -> Any:
        return episodes.process_chunk(
            shared_ws,
            chunk_text=text,
            chunk_id=chunk_id,
            source_file=source_file,
            group_id=kw.pop("group_id", group),
            reference_time=kw.pop("reference_time", WHEN),
            **kw,
        )

    return send


# ---- process_chunk ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"chunk_text": ""}, "chunk_text is required and must be non-empty"),
        ({"chunk_id": ""}, "chunk_id is required"),
        ({"source_file": ""}, "source_file is required"),
        ({"reference_time": "yesterday"}, "reference_time is not valid ISO 8601: yesterday"),
    ],
)
def test_a_chunk_missing_a_field_is_refused_and_records_nothing(
    shared_ws: Workspace, group: str, kw: dict[str, Any], message: str
) -> None:
    params: dict[str, Any] = {
        "chunk_text": "t",
        "chunk_id": "c",
        "source_file": "a.md",
        "group_id": group,
        **kw,
    }
    with pytest.raises(InvalidParamsError, match=message):
        episodes.process_chunk(shared_ws, **params)
    assert _events(shared_ws, group) == []


def test_a_chunk_is_an_episode_named_by_its_id_and_described_by_its_file(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    res = chunk("Neil Armstrong flew Apollo 11.", "c7", "notes/apollo.md")
    assert (res.chunk_id, res.source_file, res.extraction.status) == (
        "c7",
        "notes/apollo.md",
        "pending",
    )
    assert res.extraction.reason == episodes.NO_EXTRACTOR_REASON
    (added,) = _of(EpisodeAdded, shared_ws, group)
    assert (added.uuid, added.name, added.source) == (res.episode_uuid, "c7", "text")
    assert added.source_description == "notes/apollo.md:c7"
    assert added.created_at == added.valid_at == parse_timestamp(WHEN, field="x")
    assert added.content_hash == episodes.content_hash("Neil Armstrong flew Apollo 11.")


def test_the_same_chunk_sent_again_is_a_duplicate(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    first = chunk("Same text.")
    again = chunk("Same text.", reference_time="2030-01-01T00:00:00Z")
    assert again.episode_uuid == first.episode_uuid
    assert (again.extraction.status, again.extraction.reason) == ("duplicate", "same text")
    assert len(_events(shared_ws, group)) == 1


def test_a_chunk_sent_again_with_new_text_replaces_the_old(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    old = chunk("First text.")
    new = chunk("Edited text.")
    assert new.episode_uuid != old.episode_uuid and new.extraction.status == "pending"
    tail = _events(shared_ws, group)[-2:]
    assert isinstance(tail[0], EpisodeAdded) and tail[0].uuid == new.episode_uuid
    assert isinstance(tail[1], EpisodesDeleted), "the new text first, then the old goes"
    assert (tail[1].by, tail[1].key, tail[1].episode_uuids) == ("chunk", "c1", [old.episode_uuid])


def test_a_chunk_id_of_another_file_or_group_replaces_nothing(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    chunk("First text.")
    chunk("Other text.", source_file="b.md")
    chunk("Third text.", group_id=group + "-x")
    assert _of(EpisodesDeleted, shared_ws, group) == []
    assert len(_of(EpisodeAdded, shared_ws, group)) == 2


def test_a_chunk_longer_than_the_advice_is_stored_whole_with_a_warning(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    at_limit = chunk("x" * 40, "c1", advisory_max_chars=40)
    assert not isinstance(at_limit.warning, episodes.OversizeWarning)
    over = chunk("y" * 41, "c2", advisory_max_chars=40)
    assert isinstance(over.warning, episodes.OversizeWarning)
    assert (over.warning.chunk_text_chars, over.warning.recommended_max_chars) == (41, 40)
    assert _of(EpisodeAdded, shared_ws, group)[-1].content == "y" * 41


# ---- add_episode --------------------------------------------------------------------------


def test_a_named_episode_with_the_same_text_is_a_duplicate_an_unnamed_one_never(
    shared_ws: Workspace, group: str
) -> None:
    a = episodes.add_episode(shared_ws, name="n", episode_body="Body.", group_id=group)
    b = episodes.add_episode(shared_ws, name="n", episode_body="Body.", group_id=group)
    assert (b.episode_uuid, b.extraction.status) == (a.episode_uuid, "duplicate")
    c = episodes.add_episode(shared_ws, episode_body="Body.", group_id=group)
    d = episodes.add_episode(shared_ws, episode_body="Body.", group_id=group)
    assert len({a.episode_uuid, c.episode_uuid, d.episode_uuid}) == 3
    e = episodes.add_episode(shared_ws, name="n", episode_body="Other body.", group_id=group)
    assert e.episode_uuid != a.episode_uuid and _of(EpisodesDeleted, shared_ws, group) == []


@pytest.mark.parametrize(
    ("source", "stored"),
    [("JSON", "json"), ("Message", "message"), ("text", "text"), ("markdown", "text"), (3, "text")],
)
def test_an_episode_source_is_one_of_three_kinds(
    shared_ws: Workspace, group: str, source: Any, stored: str
) -> None:
    episodes.add_episode(shared_ws, episode_body="b", source=source, group_id=group)
    assert _of(EpisodeAdded, shared_ws, group)[0].source == stored


def test_an_episode_without_a_time_takes_now_and_a_bad_time_is_refused(
    shared_ws: Workspace, group: str
) -> None:
    before = timestamps.now()
    episodes.add_episode(shared_ws, episode_body="b", group_id=group)
    (added,) = _of(EpisodeAdded, shared_ws, group)
    assert before <= added.created_at == added.valid_at <= timestamps.now()
    with pytest.raises(InvalidParamsError, match="reference_time 'soon' is not a valid"):
        episodes.add_episode(shared_ws, episode_body="c", reference_time="soon", group_id=group)


# ---- deletion -----------------------------------------------------------------------------


def test_deleting_an_episode_keeps_its_entities_and_records_in_its_group(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    res = chunk("Text.")
    assertion.assert_entity(shared_ws, name="Neil Armstrong", group_id=group)
    assert deletion.delete_episode(shared_ws, res.episode_uuid) == group
    (deleted,) = _of(EpisodesDeleted, shared_ws, group)
    assert (deleted.by, deleted.key, deleted.episode_uuids) == (
        "uuid",
        res.episode_uuid,
        [res.episode_uuid],
    )
    with shared_ws.reading():
        assert [e.name for e in gr.all_entities(shared_ws.graph, group)] == ["Neil Armstrong"]


def test_deleting_an_unknown_episode_records_nothing(shared_ws: Workspace, group: str) -> None:
    episodes.add_episode(shared_ws, episode_body="b", group_id=group)
    before = len(_events(shared_ws, group))
    assert deletion.delete_episode(shared_ws, "no-such-episode") == DEFAULT_GROUP
    assert deletion.delete_episode(shared_ws, "") == DEFAULT_GROUP
    assert len(_events(shared_ws, group)) == before


def test_delete_by_source_matches_the_file_and_its_chunks_only(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    one = chunk("One.", "c1", "a.md")
    two = chunk("Two.", "c2", "a.md")
    chunk("Three.", "c3", "a.md.bak")
    chunk("Four.", "c4", "b/a.md")
    whole = episodes.add_episode(
        shared_ws, episode_body="Whole.", source_description="a.md", group_id=group
    )
    res = deletion.delete_by_source(shared_ws, "a.md", [group])
    assert sorted(res.deleted_uuids) == sorted(
        [one.episode_uuid, two.episode_uuid, whole.episode_uuid]
    )
    (deleted,) = _of(EpisodesDeleted, shared_ws, group)
    assert (deleted.by, deleted.key) == ("source", "a.md")


def test_delete_by_source_records_one_event_in_each_owning_group_asked(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    other, untouched = group + "-x", group + "-y"
    chunk("One.", group_id=group)
    chunk("Two.", group_id=other)
    chunk("Three.", group_id=untouched)
    res = deletion.delete_by_source(shared_ws, "a.md", [group, other, group + "-empty"])
    assert res.deleted_count == 2
    assert [len(_of(EpisodesDeleted, shared_ws, g)) for g in (group, other, untouched)] == [1, 1, 0]
    assert group + "-empty" not in shared_ws.store.groups()


def test_delete_chunk_episode_matches_the_chunk_id_exactly(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    keep = chunk("One.", "c1")
    gone = chunk("Two.", "c10")
    res = deletion.delete_chunk_episode(shared_ws, "c10", [group])
    assert res.deleted_uuids == [gone.episode_uuid]
    assert keep.episode_uuid not in res.deleted_uuids
    assert deletion.delete_chunk_episode(shared_ws, "C10", [group]).deleted_count == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda ws: deletion.delete_by_source(ws, "", ["g"]),
        lambda ws: deletion.delete_chunk_episode(ws, "", ["g"]),
        lambda ws: deletion.delete_by_group(ws, ["g"], confirm=False, dry_run=False),
        lambda ws: deletion.clear_all(ws, confirm=False, preserve_wal=True),
        lambda ws: deletion.clear_all(ws, confirm="yes", preserve_wal=True),  # type: ignore[arg-type]
    ],
)
def test_a_deletion_without_its_key_or_confirmation_is_refused(
    shared_ws: Workspace, call: Callable[[Workspace], Any]
) -> None:
    with pytest.raises(InvalidParamsError):
        call(shared_ws)


def test_a_purge_dry_run_counts_and_records_nothing_even_when_confirmed(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    chunk("One.")
    assertion.assert_entity(shared_ws, name="A", group_id=group)
    assertion.assert_entity(shared_ws, name="B", group_id=group)
    assertion.assert_relationship(
        shared_ws, source_name="A", target_name="B", predicate="knows", group_id=group
    )
    before = len(_events(shared_ws, group))
    res = deletion.delete_by_group(shared_ws, [group], confirm=True, dry_run=True)
    assert res.dry_run
    (counts,) = res.groups
    assert (counts.entities, counts.episodes, counts.edges) == (2, 1, 1)
    assert len(_events(shared_ws, group)) == before


def test_a_purge_records_its_counts_and_unbinds_pointers_into_the_group(
    shared_ws: Workspace, group: str
) -> None:
    owner = group + "-owner"
    target = assertion.assert_entity(shared_ws, name="Armstrong", group_id=group).entity_uuid
    houston = assertion.assert_entity(shared_ws, name="Houston", group_id=owner).entity_uuid
    made = cross_group.add_cross_group_edge(
        shared_ws,
        group_id=owner,
        source={"uuid": houston},
        target={"source_group_id": group, "endpoint_name": "Armstrong"},
        name="trained",
    )
    assert made.target_node_uuid == target
    res = deletion.delete_by_group(shared_ws, [group], confirm=True, dry_run=False)
    assert [(i.group_id, i.pointer_count) for i in res.unbound_impacts] == [(owner, 1)]
    (purged,) = _of(GroupPurged, shared_ws, group)
    assert (purged.entities, purged.episodes, purged.edges) == (1, 0, 0)
    with shared_ws.reading():
        (edge,) = [e for e in gr.all_edges(shared_ws.graph, owner) if e.uuid == made.uuid]
    assert edge.target_uuid == "", "the pointer into the purged group is unbound"


def test_a_group_never_written_is_not_purged(shared_ws: Workspace, group: str) -> None:
    res = deletion.delete_by_group(shared_ws, [group], confirm=True, dry_run=False)
    assert [c.entities for c in res.groups] == [0]
    assert group not in shared_ws.store.groups()


def test_clearing_with_the_stream_kept_appends_nothing(ws: Workspace) -> None:
    assertion.assert_entity(ws, name="Neil Armstrong", group_id="g")
    before = list(ws.store.reader("g").events())
    deletion.clear_all(ws, confirm=True, preserve_wal=True)
    assert list(ws.store.reader("g").events()) == before
    with ws.reading():
        assert gr.all_entities(ws.graph, "g") == []


def test_a_chunk_edited_back_to_its_old_text_is_stored_again(
    chunk: Callable[..., Any], shared_ws: Workspace, group: str
) -> None:
    first = chunk("Old text.")
    edited = chunk("New text.")
    back = chunk("Old text.")
    assert back.extraction.status == "pending", "the old copy was deleted: not a duplicate"
    assert len({first.episode_uuid, edited.episode_uuid, back.episode_uuid}) == 3
    deleted = _of(EpisodesDeleted, shared_ws, group)
    assert [d.episode_uuids for d in deleted] == [[first.episode_uuid], [edited.episode_uuid]]
