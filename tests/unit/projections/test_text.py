"""The text projection: ops, positions, snapshots, group isolation and query edge cases."""

from __future__ import annotations

import math
import re
import threading
from pathlib import Path

import msgspec
import pytest

from lcg.errors import GroupNameError, ProjectionError
from lcg.events.groups import encode_group
from lcg.events.position import Position
from lcg.projections import text as text_module
from lcg.projections._checksum import MAGIC, unseal
from lcg.projections.ops import ClearGroup, Delete, Op, Upsert
from lcg.projections.text import SNAPSHOT_SUFFIX, TextProjection, indexed_text


def ep(uuid: str, content: str, group: str = "g") -> Upsert:
    return Upsert(kind="episode", group_id=group, uuid=uuid, parts={"content": content})


def ent(uuid: str, group: str = "g", **parts: str) -> Upsert:
    return Upsert(kind="entity", group_id=group, uuid=uuid, parts=parts)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".lcg" / "text"


@pytest.fixture
def proj(root: Path) -> TextProjection:
    return TextProjection(root)


def test_empty_projection(proj: TextProjection, root: Path) -> None:
    assert proj.groups() == []
    assert proj.position("g") == Position.none("g")
    assert proj.search("g", "episode", "anything", 10) == []
    assert proj.doc_count("g", "entity") == 0
    proj.save()  # nothing to write: the root is not even created
    assert not root.exists()


def test_apply_sets_position_and_search_ranks(proj: TextProjection) -> None:
    proj.apply(
        "g",
        "gen1",
        3,
        [
            ep("e1", "Alice moved to Paris in May"),
            ep("e2", "Bob likes Paris and Paris likes Bob"),
            ep("e3", "Nothing relevant here"),
        ],
    )
    assert proj.position("g") == Position(group_id="g", generation="gen1", seq=3)
    hits = proj.search("g", "episode", "paris", 10)
    assert [u for u, _ in hits] == ["e2", "e1"]
    assert hits[0][1] > hits[1][1] > 0
    assert proj.search("g", "episode", "PARIS!", 1) == hits[:1]
    assert proj.doc_count("g", "episode") == 3
    assert proj.groups() == ["g"]


def test_exact_score_of_a_tiny_corpus(proj: TextProjection) -> None:
    proj.apply("g", "gen", 1, [ep("a", "red fox"), ep("b", "blue fish fish fish")])
    # N=2, df(fox)=1, dl(a)=2, avgdl=3 -> idf = ln(1 + 1.5/1.5) = ln 2
    want = math.log(2) * 1 * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * 2 / 3))
    [(uuid, score)] = proj.search("g", "episode", "fox", 5)
    assert uuid == "a"
    assert score == pytest.approx(want, rel=1e-12)


def test_ties_break_by_uuid_and_k_cuts_inside_a_tie(proj: TextProjection) -> None:
    proj.apply("g", "gen", 1, [ep(u, "same words here") for u in ["d", "b", "e", "a", "c"]])
    proj.apply("g", "gen", 2, [ep("z", "other text")])
    assert [u for u, _ in proj.search("g", "episode", "words", 10)] == ["a", "b", "c", "d", "e"]
    assert [u for u, _ in proj.search("g", "episode", "words", 2)] == ["a", "b"]
    assert [u for u, _ in proj.search("g", "episode", "words", 4)] == ["a", "b", "c", "d"]


def test_query_edge_cases(proj: TextProjection) -> None:
    proj.apply("g", "gen", 1, [ep("a", "the quick brown fox")])
    assert proj.search("g", "episode", "", 10) == []
    assert proj.search("g", "episode", "   ", 10) == []
    assert proj.search("g", "episode", "the of and", 10) == []  # only stopwords
    assert proj.search("g", "episode", "zebra", 10) == []  # unknown term
    assert proj.search("g", "episode", "fox", 0) == []
    assert proj.search("g", "episode", "fox", -3) == []
    assert proj.search("g", "entity", "fox", 10) == []  # other kind
    assert proj.search("other", "episode", "fox", 10) == []  # unknown group
    assert [u for u, _ in proj.search("g", "episode", "zebra fox fox", 10)] == ["a"]
    with pytest.raises(ProjectionError, match="unknown text kind"):
        proj.search("g", "passage", "fox", 10)


def test_upsert_replaces_only_named_parts(proj: TextProjection) -> None:
    proj.apply("g", "gen", 1, [ent("n1", name="Alice", summary="works at Acme")])
    proj.apply("g", "gen", 2, [ent("n1", summary="retired gardener")])
    assert [u for u, _ in proj.search("g", "entity", "alice", 5)] == ["n1"]
    assert [u for u, _ in proj.search("g", "entity", "gardener", 5)] == ["n1"]
    assert proj.search("g", "entity", "acme", 5) == []
    assert indexed_text("entity", {"summary": "s", "name": "n", "other": "x"}) == "n s"
    assert indexed_text("entity", {"summary": "s"}) == "s"
    # An entity whose summary alone is known is indexed by its summary.
    proj.apply("g", "gen", 3, [ent("n2", summary="gardener too")])
    assert proj.doc_count("g", "entity") == 2


def test_kinds_are_separate_indexes(proj: TextProjection) -> None:
    proj.apply(
        "g",
        "gen",
        1,
        [
            ent("n1", name="Paris", summary="a city"),
            Upsert(kind="edge", group_id="g", uuid="r1", parts={"name": "LIVES_IN", "fact": "x"}),
            ep("e1", "Paris trip"),
        ],
    )
    assert [u for u, _ in proj.search("g", "entity", "paris", 5)] == ["n1"]
    assert [u for u, _ in proj.search("g", "episode", "paris", 5)] == ["e1"]
    assert [u for u, _ in proj.search("g", "edge", "lives_in", 5)] == ["r1"]
    assert proj.search("g", "edge", "paris", 5) == []


def test_delete_and_clear(proj: TextProjection) -> None:
    proj.apply("g", "gen", 1, [ep("a", "apple"), ep("b", "apple pie"), ent("n", name="apple")])
    proj.apply("g", "gen", 2, [Delete(kind="episode", group_id="g", uuid="a")])
    proj.apply("g", "gen", 3, [Delete(kind="episode", group_id="g", uuid="missing")])
    assert [u for u, _ in proj.search("g", "episode", "apple", 5)] == ["b"]
    assert proj.doc_count("g", "episode") == 1
    proj.apply("g", "gen", 4, [ClearGroup(group_id="g"), ep("c", "apple again")])
    assert proj.position("g") == Position(group_id="g", generation="gen", seq=4)
    assert [u for u, _ in proj.search("g", "episode", "apple", 5)] == ["c"]
    assert proj.doc_count("g", "entity") == 0


def test_group_isolation_and_search_groups(proj: TextProjection) -> None:
    proj.apply("g1", "a", 1, [ep("x1", "shared term alpha", group="g1")])
    proj.apply("g2", "b", 7, [ep("x2", "shared term", group="g2")])
    proj.apply("g3", "c", 2, [ep("x3", "unrelated", group="g3")])
    assert [u for u, _ in proj.search("g1", "episode", "shared", 5)] == ["x1"]
    assert [u for u, _ in proj.search("g2", "episode", "alpha", 5)] == []
    assert proj.position("g2") == Position(group_id="g2", generation="b", seq=7)
    everywhere = proj.search_groups(None, "episode", "shared", 10)
    assert {(u, g) for u, _, g in everywhere} == {("x1", "g1"), ("x2", "g2")}
    assert everywhere == sorted(everywhere, key=lambda h: (-h[1], h[0], h[2]))
    assert [g for _, _, g in proj.search_groups(["g2", "nope"], "episode", "shared", 10)] == ["g2"]
    assert proj.search_groups([], "episode", "shared", 10) == []
    assert len(proj.search_groups(None, "episode", "shared", 1)) == 1
    assert proj.search_groups(None, "episode", "", 10) == []
    before = proj.digest("g2")
    proj.purge_group("g1")
    assert proj.groups() == ["g2", "g3"]
    assert proj.position("g1") == Position.none("g1")
    assert proj.digest("g2") == before


def test_ops_of_another_group_are_refused(proj: TextProjection) -> None:
    proj.apply("g", "gen", 1, [ep("a", "apple")])
    with pytest.raises(ProjectionError, match="group 'h'"):
        proj.apply("g", "gen", 2, [ep("b", "banana"), ep("c", "cherry", group="h")])
    assert proj.position("g") == Position(group_id="g", generation="gen", seq=1)
    assert proj.search("g", "episode", "banana", 5) == []
    with pytest.raises(GroupNameError):
        proj.apply("", "gen", 1, [])


def test_save_and_reopen_round_trip(root: Path) -> None:
    proj = TextProjection(root)
    w = "g/weird id"
    ops: list[Op] = [ep(f"e{i}", f"turn {i} about topic{i % 5} and cats", w) for i in range(300)]
    ops += [ent("n1", w, name="Zoë Ångström", summary="physicist"), ent("n2", w, name="Ada")]
    proj.apply("g/weird id", "gen-1", 42, ops)
    # Enough deletes to leave tombstones (below the compaction threshold) in the snapshot.
    proj.apply(
        "g/weird id",
        "gen-1",
        43,
        [Delete(kind="episode", group_id="g/weird id", uuid=f"e{i}") for i in range(0, 60, 3)],
    )
    proj.apply("plain", "gen-2", 5, [ep("p", "cats everywhere", group="plain")])
    queries = ["cats topic3", "turn 7", "zoë", "ZOE", "ångström physicist", "ada"]
    before = {q: proj.search("g/weird id", "episode", q, 10) for q in queries}
    before_ent = {q: proj.search("g/weird id", "entity", q, 10) for q in queries}
    digests = {g: proj.digest(g) for g in proj.groups()}
    proj.save()
    snapshot = root / (encode_group("g/weird id") + SNAPSHOT_SUFFIX)
    assert snapshot.is_file()
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [snapshot.name, "plain" + SNAPSHOT_SUFFIX]
    )
    proj.close()
    with pytest.raises(ProjectionError, match="closed"):
        proj.search("plain", "episode", "cats", 1)

    again = TextProjection(root)
    assert again.groups() == ["g/weird id", "plain"]
    weird = Position(group_id="g/weird id", generation="gen-1", seq=43)
    assert again.position("g/weird id") == weird
    assert again.position("plain") == Position(group_id="plain", generation="gen-2", seq=5)
    assert {g: again.digest(g) for g in again.groups()} == digests
    assert {q: again.search("g/weird id", "episode", q, 10) for q in queries} == before
    assert {q: again.search("g/weird id", "entity", q, 10) for q in queries} == before_ent
    assert again.doc_count("g/weird id", "episode") == 280
    # The reopened projection keeps working incrementally.
    again.apply("plain", "gen-2", 6, [ep("q", "cats indoors", group="plain")])
    assert [u for u, _ in again.search("plain", "episode", "cats", 5)] == ["p", "q"]
    again.close()


def test_save_writes_only_dirty_groups(root: Path) -> None:
    proj = TextProjection(root)
    proj.apply("a", "gen", 1, [ep("x", "one", group="a")])
    proj.apply("b", "gen", 1, [ep("y", "two", group="b")])
    proj.save()
    a_file, b_file = root / ("a" + SNAPSHOT_SUFFIX), root / ("b" + SNAPSHOT_SUFFIX)
    b_before = b_file.stat().st_mtime_ns, b_file.read_bytes()
    a_before = a_file.read_bytes()
    proj.apply("a", "gen", 2, [ep("x2", "three", group="a")])
    proj.save()
    assert a_file.read_bytes() != a_before
    assert (b_file.stat().st_mtime_ns, b_file.read_bytes()) == b_before


def test_purge_removes_the_snapshot(root: Path) -> None:
    proj = TextProjection(root)
    proj.apply("a", "gen", 1, [ep("x", "one", group="a")])
    proj.save()
    proj.purge_group("a")
    proj.purge_group("never-existed")
    assert not (root / ("a" + SNAPSHOT_SUFFIX)).exists()
    proj.close()
    assert TextProjection(root).groups() == []


def test_stale_temp_is_swept_and_previous_snapshot_stands(root: Path) -> None:
    proj = TextProjection(root)
    proj.apply("a", "gen", 1, [ep("x", "kept", group="a")])
    proj.close()
    stale = root / ("a" + SNAPSHOT_SUFFIX + ".tmp")
    stale.write_bytes(b"half a snapshot")
    (root / "README").write_text("not a snapshot")
    again = TextProjection(root)
    assert not stale.exists()
    assert again.position("a") == Position(group_id="a", generation="gen", seq=1)
    assert [u for u, _ in again.search("a", "episode", "kept", 1)] == ["x"]


def _two_groups(root: Path) -> Path:
    """Groups a and b saved; the path of a's snapshot."""
    proj = TextProjection(root)
    proj.apply("a", "gen", 1, [ep("x", "kept", group="a")])
    proj.apply("b", "gen", 4, [ep("y", "other words", group="b")])
    proj.close()
    return root / ("a" + SNAPSHOT_SUFFIX)


@pytest.mark.parametrize(
    ("damage", "fault"),
    [
        (lambda d: d[:-7], r"holds \d+ bytes after its header, \d+ recorded"),
        (
            lambda d: d[:30] + bytes(b ^ 0xFF for b in d[30:38]) + d[38:],
            "its CRC-32 is [0-9a-f]{8}, [0-9a-f]{8} recorded",
        ),
        (lambda d: d[:10], "its checksum header is damaged"),
        (lambda d: b"\x93garbage", "MessagePack|Expected|truncated"),
    ],
    ids=["truncated", "flipped", "header-cut", "garbage"],
)
def test_a_damaged_snapshot_is_its_groups_alone(root: Path, damage: object, fault: str) -> None:
    path = _two_groups(root)
    assert path.read_bytes().startswith(MAGIC)  # sealed at save
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    again = TextProjection(root)
    # Not loaded (no position: the projector rebuilds it), named with its path; b is served.
    assert again.position("a") == Position.none("a")
    assert list(again.damaged) == ["a"]
    assert f"text snapshot {path} is damaged" in again.damaged["a"]
    assert re.search(fault, again.damaged["a"]), again.damaged["a"]
    assert not path.exists()  # deleted, so the rebuilt group is saved afresh
    assert again.position("b") == Position(group_id="b", generation="gen", seq=4)
    assert [u for u, _ in again.search("b", "episode", "words", 1)] == ["y"]


def test_read_only_leaves_a_damaged_snapshot_in_place(root: Path) -> None:
    path = _two_groups(root)
    path.write_bytes(path.read_bytes()[:-1])
    looked = TextProjection(root, read_only=True)
    assert list(looked.damaged) == ["a"] and looked.groups() == ["b"]
    looked.close()
    assert path.exists()


def test_a_snapshot_without_checksum_is_accepted_then_sealed(root: Path) -> None:
    path = _two_groups(root)
    # As the previous lcg wrote it: the bare msgpack, no header.
    path.write_bytes(bytes(unseal(path.read_bytes())[0]))
    again = TextProjection(root)
    assert again.damaged == {}
    assert again.position("a") == Position(group_id="a", generation="gen", seq=1)
    assert [u for u, _ in again.search("a", "episode", "kept", 1)] == ["x"]
    again.close()  # nothing applied, yet the save seals it
    assert path.read_bytes().startswith(MAGIC)
    assert TextProjection(root).position("a") == Position(group_id="a", generation="gen", seq=1)


def test_digest_is_content_not_history(tmp_path: Path) -> None:
    one = TextProjection(tmp_path / "one")
    one.apply("g", "gen", 1, [ent("n", name="Alice", summary="old"), ep("e", "x")])
    one.apply(
        "g", "gen", 2, [ent("n", summary="new"), Delete(kind="episode", group_id="g", uuid="e")]
    )
    one.apply("g", "gen", 3, [ep("e", "back")])
    two = TextProjection(tmp_path / "two")
    two.apply("g", "other", 9, [ep("e", "back"), ent("n", summary="new", name="Alice")])
    assert one.digest("g") == two.digest("g")
    assert one.digest("g") != one.digest("missing")
    two.apply("g", "other", 10, [ep("e", "back!")])
    assert one.digest("g") != two.digest("g")
    # Same uuid and text under another kind is other content.
    three = TextProjection(tmp_path / "three")
    three.apply(
        "g", "gen", 1, [Upsert(kind="episode", group_id="g", uuid="n", parts={"content": "x"})]
    )
    four = TextProjection(tmp_path / "four")
    four.apply("g", "gen", 1, [Upsert(kind="edge", group_id="g", uuid="n", parts={"fact": "x"})])
    assert three.digest("g") != four.digest("g")


def test_queries_while_applying_on_another_thread(proj: TextProjection) -> None:
    proj.apply("g", "gen", 0, [ep("seed", "alpha beta")])
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(1, 200):
                proj.apply("g", "gen", i, [ep(f"d{i % 50}", f"alpha w{i}"), ep("seed", "alpha")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=writer)
    t.start()
    while t.is_alive():
        assert proj.search("g", "episode", "alpha", 5)
        proj.search_groups(None, "episode", "alpha", 5)
    t.join()
    assert errors == []
    assert proj.doc_count("g", "episode") == 51


def test_an_inconsistent_snapshot_without_checksum_is_damage(root: Path) -> None:
    proj = TextProjection(root)
    proj.apply("a", "gen", 1, [ep("x", "kept words", group="a"), ep("y", "more words", group="a")])
    proj.close()
    path = root / ("a" + SNAPSHOT_SUFFIX)
    snap = msgspec.msgpack.decode(unseal(path.read_bytes())[0], type=text_module._GroupSnapshot)
    state = snap.kinds["episode"]
    # Postings that name a doc id past the end of the doc table.
    bad_index = msgspec.structs.replace(state.index, uuids=state.index.uuids[:1])
    bad = msgspec.structs.replace(
        snap, kinds={**snap.kinds, "episode": msgspec.structs.replace(state, index=bad_index)}
    )
    path.write_bytes(msgspec.msgpack.encode(bad))
    assert "damaged" in TextProjection(root, read_only=True).damaged["a"]
    # Documents the index does not hold.
    bad_parts = msgspec.structs.replace(state, parts={**state.parts, "z": {"content": "zz"}})
    path.write_bytes(
        msgspec.msgpack.encode(
            msgspec.structs.replace(snap, kinds={**snap.kinds, "episode": bad_parts})
        )
    )
    assert "disagree" in TextProjection(root, read_only=True).damaged["a"]
    # Another group's snapshot under this name.
    path.write_bytes(msgspec.msgpack.encode(msgspec.structs.replace(snap, group_id="b")))
    assert "holds group 'b'" in TextProjection(root, read_only=True).damaged["a"]


def test_bulk_defers_compaction_to_its_end(root: Path) -> None:
    plain, bulk = TextProjection(root / "plain"), TextProjection(root / "bulk")
    bulk.begin_bulk("g")
    for rev in range(6):  # every doc revised six times: tombstones far past the threshold
        ops: list[Op] = [ep(f"p{i}", f"revision {rev} of note {i}") for i in range(200)]
        for p in (plain, bulk):
            p.apply("g", "gen", rev, ops)
    index = bulk._groups["g"].indexes["episode"]
    assert index.tombstones == 5 * 200
    assert plain._groups["g"].indexes["episode"].tombstones < 200
    assert bulk.search("g", "episode", "revision 5 note 7", 3) == plain.search(
        "g", "episode", "revision 5 note 7", 3
    )
    bulk.end_bulk("g")
    assert index.tombstones == 0
    assert bulk.digest("g") == plain.digest("g")
    # Compaction runs inline again after the bulk.
    for rev in range(6, 9):
        bulk.apply("g", "gen", rev, [ep(f"p{i}", f"again {rev} {i}") for i in range(200)])
    assert index.tombstones < 200


def chunk(uuid: str, content: str, source: str, group: str = "g") -> Upsert:
    return Upsert(
        kind="episode", group_id=group, uuid=uuid, parts={"content": content, "source": source}
    )


def test_rivers_finds_river(proj: TextProjection) -> None:
    # Issue 14 item 4: before the stemmer this query found nothing.
    proj.apply("g", "gen", 1, [ep("e1", "We kayaked down the river at dawn"), ep("e2", "bread")])
    assert [u for u, _ in proj.search("g", "episode", "rivers", 5)] == ["e1"]
    assert [u for u, _ in proj.search("g", "episode", "kayaking", 5)] == ["e1"]


def _source_reference(chunks: dict[str, tuple[str, str]]) -> TextProjection:
    """A projection built in one batch from the final chunks (the replay of the end state)."""
    ref = TextProjection(Path("/nonexistent-never-saved"))
    ref.apply("g", "gen", 1, [chunk(u, text, src) for u, (text, src) in sorted(chunks.items())])
    return ref


def test_sources_are_ranked_as_whole_texts(proj: TextProjection) -> None:
    # Neither chunk of s1 holds both words; the source as a whole does, and wins.
    proj.apply(
        "g",
        "gen",
        1,
        [
            chunk("a#0", "I adopted a puppy last spring", "s1"),
            chunk("a#1", "we walk along the river every morning", "s1"),
            chunk("b#0", "the puppy chewed my shoes", "s2"),
            chunk("c#0", "a boat trip on the river", "s3"),
            ep("loose", "puppy river puppy river"),  # no source: not in the source index
        ],
    )
    hits = proj.search_sources(["g"], "puppy rivers", 10)
    assert [s for s, _, _ in hits][0] == "s1"
    assert {s for s, _, _ in hits} == {"s1", "s2", "s3"}
    assert proj.sources_of("g", ["a#1", "b#0", "loose", "nope"]) == {"a#1": "s1", "b#0": "s2"}
    assert proj.members_of("g", "s1") == ["a#0", "a#1"]
    assert proj.search_sources(["other"], "puppy", 10) == []


def test_source_index_follows_chunk_edits_and_deletes(root: Path) -> None:
    proj = TextProjection(root)
    final: dict[str, tuple[str, str]] = {}
    seq = 0
    # Chunks arrive one per batch (as process_chunk sends them), some are rewritten, some
    # moved to another source, some deleted; a search between batches forces re-indexing.
    script: list[tuple[str, str, str | None]] = [
        ("x#0", "alpha beta", "sx"),
        ("x#1", "gamma delta", "sx"),
        ("y#0", "alpha alpha", "sy"),
        ("x#1", "gamma epsilon", "sx"),  # rewritten
        ("z#0", "beta zeta", "sz"),
        ("z#0", "beta zeta", "sy"),  # moved to another source
        ("y#0", "", None),  # deleted
        ("w#0", "omega", "sw"),
        ("w#0", "", None),  # sw loses its only chunk
    ]
    for uuid, text, source in script:
        seq += 1
        op: Op
        if source is None:
            op = Delete(kind="episode", group_id="g", uuid=uuid)
            final.pop(uuid)
        else:
            op = chunk(uuid, text, source)
            final[uuid] = (text, source)
        proj.apply("g", "gen", seq, [op])
        proj.search_sources(["g"], "alpha", 5)
    ref = _source_reference(final)
    for q in ["alpha", "beta", "gamma epsilon", "delta", "zeta", "omega", "alpha beta zeta"]:
        assert proj.search_sources(["g"], q, 10) == ref.search_sources(["g"], q, 10), q
    assert proj.members_of("g", "sw") == [] and proj.members_of("g", "sy") == ["z#0"]
    proj.close()
    # The snapshot keeps the source index; the reopened projection keeps it up to date.
    again = TextProjection(root)
    assert again.search_sources(["g"], "beta", 10) == ref.search_sources(["g"], "beta", 10)
    again.apply("g", "gen", seq + 1, [chunk("y#1", "beta beta beta", "sy")])
    final["y#1"] = ("beta beta beta", "sy")
    ref = _source_reference(final)
    assert again.search_sources(["g"], "beta", 10) == ref.search_sources(["g"], "beta", 10)
    # Saved with stale sources (no search since the change): re-indexed after the reopen.
    again.apply("g", "gen", seq + 2, [chunk("x#2", "beta theta", "sx")])
    final["x#2"] = ("beta theta", "sx")
    again.close()
    third = TextProjection(root)
    assert third._groups["g"].stale == {"sx"}
    ref = _source_reference(final)
    for q in ["beta", "theta", "alpha gamma"]:
        assert third.search_sources(["g"], q, 10) == ref.search_sources(["g"], q, 10), q
    third.close()


def test_snapshot_of_another_analyzer_is_discarded_for_replay(root: Path) -> None:
    proj = TextProjection(root)
    proj.apply("a", "gen", 7, [ep("x", "rivers and lakes", group="a")])
    proj.apply("b", "gen", 3, [ep("y", "mountains", group="b")])
    proj.close()
    path = root / ("a" + SNAPSHOT_SUFFIX)
    snap = msgspec.msgpack.decode(unseal(path.read_bytes())[0], type=text_module._GroupSnapshot)
    # What lcg wrote before the stemmer: format 1, no analyzer, no source index.
    old = msgspec.msgpack.encode(
        {
            "format": 1,
            "group_id": "a",
            "generation": snap.generation,
            "seq": snap.seq,
            "kinds": snap.kinds,
        }
    )
    path.write_bytes(old)
    again = TextProjection(root)
    # No position: the projector replays the group through the new analyzer.
    assert again.position("a") == Position.none("a") and not path.exists()
    assert again.discarded_groups == ["a"]
    assert again.position("b") == Position(group_id="b", generation="gen", seq=3)
    again.close()
    # Same format, another analyzer: also replayed.
    path_b = root / ("b" + SNAPSHOT_SUFFIX)
    snap_b = msgspec.msgpack.decode(unseal(path_b.read_bytes())[0], type=text_module._GroupSnapshot)
    path_b.write_bytes(msgspec.msgpack.encode(msgspec.structs.replace(snap_b, analyzer="other")))
    third = TextProjection(root)
    assert third.discarded_groups == ["b"] and third.groups() == []
    # A snapshot from a newer lcg is refused, not deleted.
    path_b.write_bytes(msgspec.msgpack.encode(msgspec.structs.replace(snap_b, format=99)))
    with pytest.raises(ProjectionError, match="format 99"):
        TextProjection(root)
    assert path_b.exists()
