"""The vector projection on real hnswlib and real files.

Vectors come from ``fake_embed``, a deterministic stand-in for the embedder (a test double:
each text maps to a seeded random unit vector). Most tests run twice: with the default
``exact_below`` (small fields are searched exactly, no hnswlib graph) and with
``exact_below=1`` (the hnswlib graph exists from the first vector and answers every search).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from lcg.errors import ProjectionError
from lcg.events.groups import encode_group
from lcg.events.position import Position
from lcg.projections._checksum import MAGIC, seal, unseal
from lcg.projections.ops import ClearGroup, Delete, Op, Upsert, texts_to_embed
from lcg.projections.vectors import FIELDS, META_FILE, VectorProjection

DIM = 16
MODEL = "fake-embed-16"
G = "g1"
GEN = "gen-a"

F32 = npt.NDArray[np.float32]


def fake_embed(text: str, dim: int = DIM) -> F32:
    """Test double of the embedder: a unit vector seeded by the text's hash."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def vecs_for(ops: list[Op], dim: int = DIM) -> dict[str, F32]:
    return {t: fake_embed(t, dim) for t in texts_to_embed(ops)}


def ent(uuid: str, name: str | None = None, summary: str | None = None, g: str = G) -> Upsert:
    parts = {}
    if name is not None:
        parts["name"] = name
    if summary is not None:
        parts["summary"] = summary
    return Upsert(kind="entity", group_id=g, uuid=uuid, parts=parts)


def apply(vp: VectorProjection, seq: int, ops: list[Op], g: str = G, gen: str = GEN) -> None:
    vp.apply(g, gen, seq, ops, vecs_for(ops, vp.dim))


@pytest.fixture(params=[None, 1], ids=["exact-small", "hnsw"])
def exact_below(request: pytest.FixtureRequest) -> int | None:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".lcg" / "vectors"


def open_vp(
    root: Path, exact_below: int | None, dim: int = DIM, model: str = MODEL
) -> VectorProjection:
    if exact_below is None:
        return VectorProjection(root, dim, model)
    return VectorProjection(root, dim, model, exact_below=exact_below)


def test_add_and_search_best_first(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    apply(vp, 1, [ent(f"e{i}", name=f"name {i}", summary=f"summary {i}") for i in range(30)])
    assert vp.count(G, "entity.name") == 30
    assert vp.count(G, "entity.summary") == 30
    hits = vp.search(G, "entity.name", fake_embed("name 7"), 5)
    assert hits[0][0] == "e7"
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    # Scores are cosine similarities of the stored vectors.
    for uuid, score in hits:
        v = vp.get_vector(G, "entity.name", uuid)
        assert v is not None
        assert score == pytest.approx(float(v @ fake_embed("name 7")), abs=1e-5)
    assert vp.position(G) == Position(group_id=G, generation=GEN, seq=1)


def test_replace_keeps_count_and_moves_vector(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    apply(vp, 1, [ent(f"e{i}", name=f"n{i}") for i in range(10)])
    apply(vp, 2, [ent("e3", name="renamed")])
    assert vp.count(G, "entity.name") == 10
    v = vp.get_vector(G, "entity.name", "e3")
    assert v is not None and np.array_equal(v, fake_embed("renamed"))
    assert vp.search(G, "entity.name", fake_embed("renamed"), 1)[0][0] == "e3"
    old = dict(vp.search(G, "entity.name", fake_embed("n3"), 10))
    assert old["e3"] == pytest.approx(float(fake_embed("renamed") @ fake_embed("n3")), abs=1e-5)


def test_upsert_changes_only_named_parts(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL)
    apply(vp, 1, [ent("e1", name="alpha", summary="first")])
    apply(vp, 2, [ent("e1", summary="second")])
    name = vp.get_vector(G, "entity.name", "e1")
    summary = vp.get_vector(G, "entity.summary", "e1")
    assert name is not None and np.array_equal(name, fake_embed("alpha"))
    assert summary is not None and np.array_equal(summary, fake_embed("second"))


def test_empty_text_removes_field_vector(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    apply(vp, 1, [ent("e1", name="alpha", summary="s1"), ent("e2", name="beta", summary="s2")])
    apply(vp, 2, [ent("e1", summary="")])
    assert vp.count(G, "entity.summary") == 1
    assert vp.get_vector(G, "entity.summary", "e1") is None
    assert vp.get_vector(G, "entity.name", "e1") is not None
    assert [u for u, _ in vp.search(G, "entity.summary", fake_embed("s1"), 10)] == ["e2"]


def test_delete_removes_every_field_of_kind(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    ops: list[Op] = [ent(f"e{i}", name=f"n{i}", summary=f"s{i}") for i in range(5)]
    ops.append(Upsert(kind="edge", group_id=G, uuid="e1", parts={"name": "R", "fact": "f"}))
    apply(vp, 1, ops)
    apply(vp, 2, [Delete(kind="entity", group_id=G, uuid="e1")])
    assert vp.get_vector(G, "entity.name", "e1") is None
    assert vp.get_vector(G, "entity.summary", "e1") is None
    # Another kind's field with the same uuid is untouched.
    assert vp.get_vector(G, "edge.fact", "e1") is not None
    for field in ("entity.name", "entity.summary"):
        assert vp.count(G, field) == 4
        assert "e1" not in [u for u, _ in vp.search(G, field, fake_embed("n1"), 10)]
    # Deleting something unknown is a no-op that still advances the position.
    apply(vp, 3, [Delete(kind="episode", group_id=G, uuid="nope")])
    assert vp.position(G) == Position(group_id=G, generation=GEN, seq=3)


def test_re_add_after_delete(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    apply(vp, 1, [ent(f"e{i}", name=f"n{i}") for i in range(8)])
    apply(vp, 2, [Delete(kind="entity", group_id=G, uuid="e2")])
    apply(vp, 3, [ent("e2", name="back again")])
    assert vp.count(G, "entity.name") == 8
    assert vp.search(G, "entity.name", fake_embed("back again"), 1)[0][0] == "e2"
    # A new uuid reuses the freed label of another; both stay distinct.
    apply(vp, 4, [Delete(kind="entity", group_id=G, uuid="e5")])
    apply(vp, 5, [ent("e99", name="newcomer"), ent("e5", name="n5")])
    assert vp.count(G, "entity.name") == 9
    for uuid, text in [("e99", "newcomer"), ("e5", "n5"), ("e2", "back again")]:
        assert vp.search(G, "entity.name", fake_embed(text), 1)[0][0] == uuid


def test_batch_net_effect_in_op_order(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    ops: list[Op] = [
        ent("a", name="one"),
        ent("b", name="two"),
        Delete(kind="entity", group_id=G, uuid="a"),
        ent("b", name="three"),
        ent("c", name="four"),
        ent("a", name="five"),
        Delete(kind="entity", group_id=G, uuid="c"),
    ]
    apply(vp, 7, ops)
    assert vp.count(G, "entity.name") == 2
    a = vp.get_vector(G, "entity.name", "a")
    b = vp.get_vector(G, "entity.name", "b")
    assert a is not None and np.array_equal(a, fake_embed("five"))
    assert b is not None and np.array_equal(b, fake_embed("three"))
    assert vp.get_vector(G, "entity.name", "c") is None


def test_fields_by_kind_and_non_vector_parts(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL)
    ops: list[Op] = [
        Upsert(kind="edge", group_id=G, uuid="r1", parts={"name": "WORKS_AT", "fact": "A at B"}),
        Upsert(kind="episode", group_id=G, uuid="p1", parts={"content": "hello world"}),
    ]
    apply(vp, 1, ops)
    assert vp.count(G, "edge.fact") == 1
    assert vp.count(G, "episode.content") == 1
    assert vp.search(G, "edge.fact", fake_embed("A at B"), 3)[0][0] == "r1"
    assert vp.search(G, "entity.name", fake_embed("WORKS_AT"), 3) == []
    with pytest.raises(ProjectionError, match="unknown vector field"):
        vp.search(G, "edge.name", fake_embed("WORKS_AT"), 3)


def test_clear_group(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    apply(vp, 1, [ent(f"e{i}", name=f"n{i}", summary=f"s{i}") for i in range(6)])
    apply(vp, 2, [ent("x", name="before"), ClearGroup(group_id=G), ent("y", name="after")])
    assert vp.count(G, "entity.name") == 1
    assert vp.count(G, "entity.summary") == 0
    assert vp.get_vector(G, "entity.name", "y") is not None
    assert vp.position(G) == Position(group_id=G, generation=GEN, seq=2)
    vp.save()
    vp.close()
    again = open_vp(root, exact_below)
    assert again.count(G, "entity.name") == 1
    assert again.count(G, "entity.summary") == 0
    assert sorted(p.name for p in (root / G).iterdir()) == sorted(
        [META_FILE, "entity.name.00000001.npy"]
        + (["entity.name.00000001.hnsw"] if exact_below == 1 else [])
    )


def test_k_larger_than_count_and_k_zero(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    apply(vp, 1, [ent(f"e{i}", name=f"n{i}") for i in range(12)])
    apply(vp, 2, [Delete(kind="entity", group_id=G, uuid=f"e{i}") for i in range(9)])
    hits = vp.search(G, "entity.name", fake_embed("n10"), 50)
    assert sorted(u for u, _ in hits) == ["e10", "e11", "e9"]
    assert hits[0][0] == "e10"
    assert vp.search(G, "entity.name", fake_embed("n10"), 0) == []
    assert vp.search("unknown", "entity.name", fake_embed("n10"), 5) == []
    assert vp.search(G, "entity.name", np.zeros(DIM, dtype=np.float32), 5) == []


def test_hnsw_with_most_points_deleted_and_tiny_ef(root: Path) -> None:
    # hnswlib keeps deleted points for navigation and raises if its beam ends with fewer
    # than k live ones; the projection clamps k and falls back to the exact scan.
    vp = VectorProjection(root, DIM, MODEL, exact_below=1)
    apply(vp, 1, [ent(f"e{i}", name=f"n{i}") for i in range(400)])
    apply(vp, 2, [Delete(kind="entity", group_id=G, uuid=f"e{i}") for i in range(3, 400)])
    hits = vp.search(G, "entity.name", fake_embed("n1"), 3, ef=3)
    exact = vp.search(G, "entity.name", fake_embed("n1"), 3, exact=True)
    assert [u for u, _ in hits] == [u for u, _ in exact]
    assert sorted(u for u, _ in hits) == ["e0", "e1", "e2"]


def test_growth_keeps_every_vector_findable(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL, exact_below=1)
    # Several batches so that both the raw arrays and the hnswlib graph are resized.
    for b in range(5):
        apply(vp, b + 1, [ent(f"e{b}-{i}", name=f"n{b}-{i}") for i in range(70)])
    assert vp.count(G, "entity.name") == 350
    misses = [
        f"e{b}-{i}"
        for b in range(5)
        for i in range(70)
        if vp.search(G, "entity.name", fake_embed(f"n{b}-{i}"), 1)[0][0] != f"e{b}-{i}"
    ]
    assert misses == []


def test_graph_built_when_threshold_crossed(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL, exact_below=50)
    apply(vp, 1, [ent(f"e{i}", name=f"n{i}") for i in range(49)])
    assert not (vp._groups[G].fields["entity.name"].has_graph)
    apply(vp, 2, [ent("e49", name="n49"), ent("e50", name="n50")])
    assert vp._groups[G].fields["entity.name"].has_graph
    assert vp.search(G, "entity.name", fake_embed("n50"), 1)[0][0] == "e50"
    exact = vp.search(G, "entity.name", fake_embed("n3"), 5, exact=True)
    approx = vp.search(G, "entity.name", fake_embed("n3"), 5)
    assert [u for u, _ in approx] == [u for u, _ in exact]
    assert [s for _, s in approx] == pytest.approx([s for _, s in exact], abs=1e-5)


def test_replaced_vectors_retire_labels_until_a_rebuild(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL, exact_below=10)
    apply(vp, 1, [ent(f"e{i}", name=f"v0 {i}") for i in range(60)])
    field = vp._groups[G].fields["entity.name"]
    graph = field._hnsw
    # Each change is an insert under a new label; the old label stays in the graph, dead.
    apply(vp, 2, [ent(f"e{i}", name=f"v1 {i}") for i in range(40)])
    assert field._hnsw is graph and len(field._dead) == 40
    for i in (0, 39):
        assert vp.search(G, "entity.name", fake_embed(f"v1 {i}"), 1)[0][0] == f"e{i}"
    # A batch that would make dead labels outnumber live ones rebuilds the graph instead:
    # its vectors change in place, the dead labels become free.
    slots = field._n_slots
    apply(vp, 3, [ent(f"e{i}", name=f"v2 {i}") for i in range(30)])
    assert field._hnsw is not graph and field._dead == [] and len(field._free) == 40
    assert field._n_slots == slots == 100
    apply(vp, 4, [ent(f"e{i}", name=f"v3 {i}") for i in range(30)])
    assert field._n_slots == slots  # free labels are reused
    for i, v in ((0, 3), (29, 3), (35, 1), (59, 0)):
        assert vp.search(G, "entity.name", fake_embed(f"v{v} {i}"), 1)[0][0] == f"e{i}"
    # Dead labels survive a snapshot as dead (reusing one would be an hnswlib update).
    digest = vp.digest(G)
    dead = sorted(field._dead)
    vp.close()
    again = VectorProjection(root, DIM, MODEL, exact_below=10)
    reloaded = again._groups[G].fields["entity.name"]
    assert sorted(reloaded._dead) == dead and again.digest(G) == digest
    assert again.search(G, "entity.name", fake_embed("v3 7"), 1)[0][0] == "e7"


def test_removals_past_the_threshold_drop_the_graph(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL, exact_below=20)
    apply(vp, 1, [ent(f"e{i}", name=f"n{i}") for i in range(30)])
    field = vp._groups[G].fields["entity.name"]
    assert field.has_graph
    apply(vp, 2, [Delete(kind="entity", group_id=G, uuid=f"e{i}") for i in range(16)])
    assert not field.has_graph and field._dead == [] and field.count == 14
    assert vp.search(G, "entity.name", fake_embed("n20"), 1)[0][0] == "e20"


def test_suspended_graphs_build_once_on_resume(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL, exact_below=20)
    vp.begin_bulk(G)
    for b in range(4):
        apply(vp, b + 1, [ent(f"e{i}", name=f"n{b}-{i}") for i in range(40)])
    field = vp._groups[G].fields["entity.name"]
    assert field.suspended and not field.has_graph
    # Searches stay right (exact) while suspended; a snapshot then has no hnswlib file.
    assert vp.search(G, "entity.name", fake_embed("n3-5"), 1)[0][0] == "e5"
    digest = vp.digest(G)
    vp.end_bulk(G)
    assert field.has_graph and not field.suspended
    assert vp.digest(G) == digest
    assert vp.search(G, "entity.name", fake_embed("n3-9"), 1)[0][0] == "e9"
    vp.close()
    reopened = VectorProjection(root, DIM, MODEL, exact_below=20)
    assert reopened._groups[G].fields["entity.name"].has_graph
    assert reopened.digest(G) == digest


def test_save_load_round_trip(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    apply(vp, 3, [ent(f"e{i}", name=f"n{i}", summary=f"s{i}") for i in range(40)])
    apply(vp, 9, [Delete(kind="entity", group_id=G, uuid="e4"), ent("e5", name="moved")])
    ops2: list[Op] = [
        Upsert(kind="episode", group_id="other/grp", uuid="p", parts={"content": "c"})
    ]
    vp.apply("other/grp", "gen-b", 1, ops2, vecs_for(ops2))
    queries = [fake_embed(f"n{i}") for i in range(0, 40, 7)] + [fake_embed("moved")]
    before = [vp.search(G, "entity.name", q, 6) for q in queries]
    digest = vp.digest(G)
    vp.save()
    vp.close()
    again = open_vp(root, exact_below)
    assert again.discarded_groups == []
    assert again.groups() == ["g1", "other/grp"]
    assert again.position(G) == Position(group_id=G, generation=GEN, seq=9)
    assert again.position("other/grp") == Position(group_id="other/grp", generation="gen-b", seq=1)
    assert (root / encode_group("other/grp") / META_FILE).exists()
    assert again.digest(G) == digest
    assert again.count(G, "entity.name") == 39
    assert [again.search(G, "entity.name", q, 6) for q in queries] == before
    # The loaded projection keeps working: a re-add reuses the freed label.
    apply(again, 10, [ent("e4", name="n4")])
    assert again.search(G, "entity.name", fake_embed("n4"), 1)[0][0] == "e4"


def test_save_writes_only_dirty_groups_and_fields(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL)
    apply(vp, 1, [ent("e1", name="a", summary="b")])
    apply(vp, 1, [ent("x", name="a", g="g2")], g="g2")
    vp.save()
    g2_meta = (root / "g2" / META_FILE).stat().st_mtime_ns
    apply(vp, 2, [ent("e1", summary="c")])
    vp.save()
    assert (root / "g2" / META_FILE).stat().st_mtime_ns == g2_meta
    assert sorted(p.name for p in (root / G).iterdir()) == [
        "entity.name.00000001.npy",
        "entity.summary.00000002.npy",
        META_FILE,
    ]
    vp.close()
    again = VectorProjection(root, DIM, MODEL)
    v = again.get_vector(G, "entity.summary", "e1")
    assert v is not None and np.array_equal(v, fake_embed("c"))


def test_model_or_dim_mismatch_discards(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL)
    apply(vp, 5, [ent("e1", name="a")])
    apply(vp, 2, [ent("e1", name="a", g="weird group")], g="weird group")
    vp.close()
    other_model = VectorProjection(root, DIM, "another-model")
    assert other_model.discarded_groups == ["g1", "weird group"]
    assert other_model.groups() == []
    assert other_model.position(G) == Position.none(G)
    assert list(root.iterdir()) == []
    apply(other_model, 1, [ent("e1", name="a")])
    other_model.close()
    other_dim = VectorProjection(root, DIM * 2, "another-model")
    assert other_dim.discarded_groups == ["g1"]
    assert other_dim.count(G, "entity.name") == 0


def test_purge_group(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL)
    apply(vp, 1, [ent("e1", name="a")])
    apply(vp, 1, [ent("e1", name="a", g="g2")], g="g2")
    vp.save()
    vp.purge_group(G)
    assert vp.position(G) == Position.none(G)
    assert vp.groups() == ["g2"]
    assert not (root / G).exists()
    vp.close()
    assert VectorProjection(root, DIM, MODEL).groups() == ["g2"]


def test_search_groups(root: Path, exact_below: int | None) -> None:
    vp = open_vp(root, exact_below)
    for g in ("ga", "gb", "gc"):
        apply(vp, 1, [ent(f"{g}-{i}", name=f"{g} n{i}", g=g) for i in range(5)], g=g)
    apply(vp, 1, [ent("shared", name="common text", g="gb")], g="gb")
    apply(vp, 2, [ent("shared", name="common text", g="gc")], g="gc")
    q = fake_embed("common text")
    hits = vp.search_groups(None, "entity.name", q, 4)
    assert len(hits) == 4
    assert {(u, g) for u, _, g in hits[:2]} == {("shared", "gb"), ("shared", "gc")}
    assert [s for _, s, _ in hits] == sorted((s for _, s, _ in hits), reverse=True)
    only_a = vp.search_groups(["ga", "missing"], "entity.name", q, 3)
    assert [g for _, _, g in only_a] == ["ga"] * 3
    assert vp.search_groups([], "entity.name", q, 3) == []
    assert len(vp.search_groups(["ga", "gb", "ga"], "entity.name", q, 100)) == 11


def test_digest_is_a_function_of_content_only(root: Path, exact_below: int | None) -> None:
    churned = open_vp(root / "a", exact_below)
    apply(churned, 1, [ent(f"e{i}", name=f"n{i}", summary=f"s{i}") for i in range(20)])
    apply(churned, 2, [Delete(kind="entity", group_id=G, uuid=f"e{i}") for i in range(0, 20, 3)])
    apply(churned, 3, [ent("e3", name="n3 v2", summary="s3"), ent("e1", name="n1 v2")])
    apply(churned, 4, [ent("tmp", name="gone"), Delete(kind="entity", group_id=G, uuid="tmp")])
    churned.save()
    churned.close()
    churned = open_vp(root / "a", exact_below)

    final: list[Op] = []
    for i in reversed(range(20)):
        if i == 3:
            final.append(ent("e3", name="n3 v2", summary="s3"))
        elif i % 3 == 0:
            continue
        elif i == 1:
            final.append(ent("e1", name="n1 v2", summary="s1"))
        else:
            final.append(ent(f"e{i}", summary=f"s{i}", name=f"n{i}"))
    fresh = VectorProjection(root / "b", DIM, MODEL)
    apply(fresh, 99, final)
    assert churned.digest(G) == fresh.digest(G)
    apply(fresh, 100, [ent("e1", name="n1 v3")])
    assert churned.digest(G) != fresh.digest(G)
    assert churned.digest("nobody") == fresh.digest("nobody")
    assert len(fresh.digest("nobody")) == 64


def test_bad_batch_changes_nothing(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL)
    apply(vp, 1, [ent("e1", name="a")])
    digest = vp.digest(G)
    ops: list[Op] = [Delete(kind="entity", group_id=G, uuid="e1"), ent("e2", name="b")]
    with pytest.raises(ProjectionError, match="no vector"):
        vp.apply(G, GEN, 2, ops, {})
    with pytest.raises(ProjectionError, match="shape"):
        vp.apply(G, GEN, 2, ops, {"b": np.ones(DIM + 1, dtype=np.float32)})
    with pytest.raises(ProjectionError, match="non-finite"):
        vp.apply(G, GEN, 2, ops, {"b": np.full(DIM, np.nan, dtype=np.float32)})
    with pytest.raises(ProjectionError, match="group"):
        vp.apply("g2", GEN, 2, ops, vecs_for(ops))
    assert vp.digest(G) == digest
    assert vp.position(G) == Position(group_id=G, generation=GEN, seq=1)
    assert vp.groups() == [G]
    with pytest.raises(ProjectionError, match="components"):
        vp.search(G, "entity.name", np.ones(3, dtype=np.float32), 1)


def test_crash_leftovers_are_swept_and_previous_snapshot_wins(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL, exact_below=1)
    apply(vp, 4, [ent(f"e{i}", name=f"n{i}") for i in range(10)])
    vp.save()
    digest = vp.digest(G)
    vp.close()
    gdir = root / G
    # A save that died before its meta: new-version files and a meta temp, never named.
    (gdir / "entity.name.00000002.npy").write_bytes(b"partial")
    (gdir / "entity.name.00000002.hnsw.tmp").write_bytes(b"partial")
    (gdir / (META_FILE + ".tmp")).write_bytes(b"partial")
    # A first save of another group that died before any meta.
    (root / "g2").mkdir()
    (root / "g2" / "entity.name.00000001.npy").write_bytes(b"partial")
    again = VectorProjection(root, DIM, MODEL, exact_below=1)
    assert again.groups() == [G]
    assert again.position(G) == Position(group_id=G, generation=GEN, seq=4)
    assert again.digest(G) == digest
    assert not (root / "g2").exists()
    assert sorted(p.name for p in gdir.iterdir()) == [
        "entity.name.00000001.hnsw",
        "entity.name.00000001.npy",
        META_FILE,
    ]


def _saved_two_groups(root: Path) -> None:
    """G with an hnswlib graph over 10 entities, and g2 beside it."""
    vp = VectorProjection(root, DIM, MODEL, exact_below=1)
    apply(vp, 1, [ent(f"e{i}", name=f"n{i}") for i in range(10)])
    apply(vp, 3, [ent("o1", name="other", g="g2")], g="g2")
    vp.close()


def _zero(data: bytes) -> bytes:
    return data[:200] + bytes(64) + data[264:]


def _flip(data: bytes) -> bytes:
    return bytes(b ^ 0xFF if i % 97 == 50 else b for i, b in enumerate(data))


@pytest.mark.parametrize(
    ("name", "damage", "fault"),
    [
        ("entity.name.00000001.npy", _zero, r"vector snapshot .*\.npy is damaged \(its CRC-32"),
        ("entity.name.00000001.npy", lambda d: d[:-4], r"\.npy has \d+ bytes, the snapshot"),
        ("entity.name.00000001.hnsw", _flip, r"hnswlib index .*\.hnsw is damaged \(its CRC-32"),
        ("entity.name.00000001.hnsw", lambda d: d[:100], r"\.hnsw has 100 bytes"),
        (META_FILE, lambda d: d[:-9], rf"{META_FILE} is damaged \(it holds"),
        (META_FILE, _flip, rf"{META_FILE} is damaged \(its CRC-32"),
        (META_FILE, lambda d: b"\xff\x00garbage", rf"{META_FILE} is damaged"),
    ],
    ids=["npy-zeroed", "npy-cut", "hnsw-flipped", "hnsw-cut", "meta-cut", "meta-flipped", "junk"],
)
def test_a_damaged_file_is_its_groups_alone(
    root: Path, name: str, damage: object, fault: str
) -> None:
    _saved_two_groups(root)
    path = root / G / name
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    looked = VectorProjection(root, DIM, MODEL, exact_below=1, read_only=True)
    assert list(looked.damaged) == [G] and looked.groups() == ["g2"]
    assert re.search(fault, looked.damaged[G]), looked.damaged[G]
    assert path.exists()  # looking deletes nothing
    again = VectorProjection(root, DIM, MODEL, exact_below=1)
    # Not loaded (no position: the projector rebuilds it) and deleted; g2 is served.
    assert list(again.damaged) == [G] and again.position(G) == Position.none(G)
    assert not (root / G).exists()
    assert again.position("g2") == Position(group_id="g2", generation=GEN, seq=3)
    assert again.search("g2", "entity.name", fake_embed("other"), 1)[0][0] == "o1"


def test_files_without_checksums_are_accepted_then_recorded(root: Path) -> None:
    _saved_two_groups(root)
    meta_path = root / G / META_FILE
    sealed = meta_path.read_bytes()
    meta = msgspec.msgpack.decode(unseal(sealed)[0])
    for field in meta["fields"].values():  # as the previous lcg wrote the meta
        for key in ("vectors_crc", "vectors_bytes", "hnsw_crc"):
            del field[key]
    meta_path.write_bytes(msgspec.msgpack.encode(meta))
    before = {p.name: p.read_bytes() for p in (root / G).iterdir() if p.name != META_FILE}
    again = VectorProjection(root, DIM, MODEL, exact_below=1)
    assert again.damaged == {} and again.position(G) == Position(group_id=G, generation=GEN, seq=1)
    assert again.search(G, "entity.name", fake_embed("n3"), 1)[0][0] == "e3"
    again.close()  # nothing applied, yet the save records the files' checksums
    rewritten = msgspec.msgpack.decode(unseal(meta_path.read_bytes())[0])
    assert meta_path.read_bytes().startswith(MAGIC)
    assert all(f["vectors_crc"] is not None for f in rewritten["fields"].values())
    # The field files themselves were not rewritten, and now they are checked.
    assert {p.name: p.read_bytes() for p in (root / G).iterdir() if p.name != META_FILE} == before
    npy = root / G / "entity.name.00000001.npy"
    npy.write_bytes(_zero(npy.read_bytes()))
    assert G in VectorProjection(root, DIM, MODEL, exact_below=1).damaged


def test_a_legacy_file_hnswlib_cannot_read_is_damage_not_a_raw_error(root: Path) -> None:
    _saved_two_groups(root)
    meta_path = root / G / META_FILE
    meta = msgspec.msgpack.decode(unseal(meta_path.read_bytes())[0])
    for field in meta["fields"].values():
        del field["vectors_crc"], field["hnsw_crc"]
    meta_path.write_bytes(msgspec.msgpack.encode(meta))
    hnsw = root / G / "entity.name.00000001.hnsw"
    # Same size, no checksum to compare: only hnswlib can tell, and its error is reworded.
    hnsw.write_bytes(b"\xff" * hnsw.stat().st_size)
    again = VectorProjection(root, DIM, MODEL, exact_below=1, read_only=True)
    assert list(again.damaged) == [G], again.damaged
    assert again.damaged[G] == (
        f"hnswlib index {hnsw} is unreadable (RuntimeError: Index seems to be corrupted or "
        "unsupported)"
    )


def test_a_newer_format_is_refused_whole(root: Path) -> None:
    _saved_two_groups(root)
    meta_path = root / G / META_FILE
    meta = msgspec.msgpack.decode(unseal(meta_path.read_bytes())[0])
    meta_path.write_bytes(seal(msgspec.msgpack.encode({**meta, "format": 9})))
    with pytest.raises(ProjectionError, match="format 9, this lcg reads up to 1: a newer lcg"):
        VectorProjection(root, DIM, MODEL)
    assert meta_path.exists()


def test_closed_projection_refuses(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL)
    apply(vp, 1, [ent("e1", name="a")])
    vp.close()
    vp.close()
    with pytest.raises(ProjectionError, match="closed"):
        vp.search(G, "entity.name", fake_embed("a"), 1)
    with pytest.raises(ProjectionError, match="closed"):
        apply(vp, 2, [ent("e1", name="b")])
    assert VectorProjection(root, DIM, MODEL).count(G, "entity.name") == 1


def test_fields_constant() -> None:
    assert FIELDS == ("edge.fact", "entity.name", "entity.summary", "episode.content")


def test_bulk_keeps_the_graphs_of_a_group_that_holds_vectors(root: Path) -> None:
    vp = VectorProjection(root, DIM, MODEL, exact_below=10)
    apply(vp, 1, [ent(f"e{i}", name=f"n{i}") for i in range(30)])
    field = vp._groups[G].fields["entity.name"]
    graph = field._hnsw
    vp.begin_bulk(G)  # e.g. only the graph projection was deleted: nothing to redo here
    apply(vp, 2, [ent("e30", name="n30")])
    vp.end_bulk(G)
    assert field._hnsw is graph and not field.suspended
    assert vp.search(G, "entity.name", fake_embed("n30"), 1)[0][0] == "e30"
