"""A vector snapshot made under other rules of which rows are embedded (``ops.VECTOR_RULES``,
ADR 0223: declared edges and stem-named documents no longer are) is rebuilt, as one of
another embedder is: a writer deletes it and the projector replays the group; a read-only
open leaves it on disk and holds no position for it. Real hnswlib snapshots on disk."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from lcg.events.position import Position
from lcg.projections import vectors as vectors_module
from lcg.projections.ops import VECTOR_RULES, Op, Upsert, texts_to_embed
from lcg.projections.vectors import VectorProjection

GEN = "0" * 32


def _vector(text: str, dim: int) -> npt.NDArray[np.float32]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def test_a_snapshot_made_under_other_rules_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "vectors"
    ops: list[Op] = [Upsert(kind="entity", group_id="g", uuid="e1", parts={"name": "Ada"})]
    # A snapshot of the rules before this ones (as an lcg before ADR 0223 wrote it).
    monkeypatch.setattr(vectors_module, "VECTOR_RULES", "")
    old = VectorProjection(root, 8, "m")
    old.apply("g", GEN, 3, ops, {t: _vector(t, 8) for t in texts_to_embed(ops)})
    old.save()
    old.close()
    monkeypatch.setattr(vectors_module, "VECTOR_RULES", VECTOR_RULES)

    looking = VectorProjection(root, 8, "m", read_only=True)
    assert looking.discarded_groups == ["g"] and looking.position("g") == Position.none("g")
    looking.close()
    assert (root / "g").exists()  # read-only: left as it was

    writing = VectorProjection(root, 8, "m")
    assert writing.discarded_groups == ["g"] and writing.position("g") == Position.none("g")
    writing.apply("g", GEN, 3, ops, {t: _vector(t, 8) for t in texts_to_embed(ops)})
    writing.save()
    writing.close()

    again = VectorProjection(root, 8, "m")  # made under these rules: kept
    assert again.discarded_groups == []
    assert again.position("g") == Position(group_id="g", generation=GEN, seq=3)
    assert again.count("g", "entity.name") == 1
    again.close()
