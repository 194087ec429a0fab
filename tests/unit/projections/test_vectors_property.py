"""Property: any op history, split into batches and reopened anywhere, gives the digest of
its final state applied at once. Vectors come from the ``fake_embed`` test double."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lcg.projections.ops import VECTOR_FIELDS, ClearGroup, Delete, Op, Upsert, texts_to_embed
from lcg.projections.vectors import VectorProjection

DIM = 8
MODEL = "fake-embed-8"
G = "prop"
UUIDS = ["a", "b", "c", "d", "e"]
TEXTS = ["", "x", "y", "z", "w"]

upserts = st.builds(
    lambda kind, uuid, parts: Upsert(kind=kind, group_id=G, uuid=uuid, parts=parts),
    st.sampled_from(["entity", "episode", "edge"]),
    st.sampled_from(UUIDS),
    st.dictionaries(
        st.sampled_from(["name", "summary", "content", "fact"]), st.sampled_from(TEXTS)
    ),
)
deletes = st.builds(
    lambda kind, uuid: Delete(kind=kind, group_id=G, uuid=uuid),
    st.sampled_from(["entity", "episode", "edge"]),
    st.sampled_from(UUIDS),
)
ops_strategy = st.lists(
    st.one_of(upserts, upserts, deletes, st.just(ClearGroup(group_id=G))), max_size=40
)


def fake_embed(text: str) -> np.ndarray:
    """Test double of the embedder: a unit vector seeded by the text's hash."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def as_upsert(field: str, uuid: str, text: str) -> Upsert:
    kind, part = field.split(".")
    return Upsert(kind=kind, group_id=G, uuid=uuid, parts={part: text})  # type: ignore[arg-type]


def final_state(ops: list[Op]) -> dict[tuple[str, str], str]:
    """The model: (field, uuid) → text, applying ops one by one."""
    state: dict[tuple[str, str], str] = {}
    for op in ops:
        if isinstance(op, ClearGroup):
            state.clear()
        elif isinstance(op, Upsert):
            for part, text in op.parts.items():
                if (op.kind, part) in VECTOR_FIELDS:
                    key = (f"{op.kind}.{part}", op.uuid)
                    if text:
                        state[key] = text
                    else:
                        state.pop(key, None)
        else:
            for kind, part in VECTOR_FIELDS:
                if kind == op.kind:
                    state.pop((f"{kind}.{part}", op.uuid), None)
    return state


@settings(max_examples=60, deadline=None)
@given(
    ops=ops_strategy,
    cuts=st.lists(st.integers(0, 40), max_size=4),
    reopen=st.lists(st.booleans(), min_size=5, max_size=5),
    exact_below=st.sampled_from([1, 3, 2000]),
)
def test_history_and_reopen_do_not_change_digest(
    ops: list[Op], cuts: list[int], reopen: list[bool], exact_below: int
) -> None:
    bounds = sorted({0, len(ops), *(c for c in cuts if c <= len(ops))})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "inc"
        vp = VectorProjection(root, DIM, MODEL, exact_below=exact_below)
        for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
            batch = ops[lo:hi]
            vp.apply(G, "gen", hi, batch, {t: fake_embed(t) for t in texts_to_embed(batch)})
            if reopen[i % len(reopen)]:
                vp.close()
                vp = VectorProjection(root, DIM, MODEL, exact_below=exact_below)
        state = final_state(ops)
        once: list[Op] = [
            as_upsert(field, uuid, text) for (field, uuid), text in sorted(state.items())[::-1]
        ]
        ref = VectorProjection(Path(tmp) / "ref", DIM, MODEL)
        ref.apply(G, "gen", 1, once, {t: fake_embed(t) for t in texts_to_embed(once)})
        assert vp.digest(G) == ref.digest(G)
        for field in sorted({f"{k}.{p}" for k, p in VECTOR_FIELDS}):
            live = {u for (f, u) in state if f == field}
            assert vp.count(G, field) == len(live)
            hits = vp.search(G, field, fake_embed("x"), 10)
            assert {u for u, _ in hits} == live
            for uuid in live:
                got = vp.get_vector(G, field, uuid)
                assert got is not None and np.array_equal(got, fake_embed(state[(field, uuid)]))
        vp.close()
