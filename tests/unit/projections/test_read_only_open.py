"""Opening the text and vector projections read-only (``lcg status``/``lcg verify``): nothing on
disk is created or deleted, and what an opening for writing would discard (another embedder's
vectors, an older analyzer's terms, a dead temporary file) is left as it is and reported.
The vectors are a deterministic test double of an embedder (seeded by the text's hash).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from lcg.events.layout import TEMP_SUFFIX
from lcg.events.position import Position
from lcg.projections import text as text_module
from lcg.projections._analyzer import ANALYZER_VERSION
from lcg.projections.graph import GraphProjection, StaleGraphError
from lcg.projections.graph import projection as graph_module
from lcg.projections.graph._schema import SCHEMA_VERSION
from lcg.projections.ops import Op, Upsert, texts_to_embed
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection

GEN = "0" * 32


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _vector(text: str, dim: int) -> npt.NDArray[np.float32]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def _entity(uuid: str, name: str) -> Upsert:
    return Upsert(kind="entity", group_id="g", uuid=uuid, parts={"name": name})


def test_vectors_of_another_embedder_are_kept_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "vectors"
    vp = VectorProjection(root, 16, "model-a")
    ops: list[Op] = [_entity("e1", "Ada Lovelace")]
    vp.apply("g", GEN, 4, ops, {t: _vector(t, 16) for t in texts_to_embed(ops)})
    vp.save()
    vp.close()
    before = _files(root)

    looking = VectorProjection(root, 8, "model-b", read_only=True)
    assert looking.foreign_groups == {"g": ("model-a", 16, 4, GEN)}
    # Where the other embedder's vectors stand.
    assert looking.position("g") == Position(group_id="g", generation=GEN, seq=4)
    assert looking.discarded_groups == []
    looking.close()
    assert _files(root) == before

    # Opening for writing discards them, as before (the projector then re-embeds the group).
    writing = VectorProjection(root, 8, "model-b")
    assert writing.discarded_groups == ["g"] and writing.position("g") == Position.none("g")
    writing.close()
    assert not (root / "g").exists()


def test_read_only_vectors_create_no_directory(tmp_path: Path) -> None:
    VectorProjection(tmp_path / "none", 8, "m", read_only=True).close()
    assert not (tmp_path / "none").exists()


def test_text_of_an_older_analyzer_is_kept_when_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "text"
    tp = TextProjection(root)
    tp.apply("g", GEN, 2, [_entity("e1", "Ada Lovelace")])
    tp.save()
    tp.close()
    (root / f"g{TEMP_SUFFIX}").write_bytes(b"a save that died")
    before = _files(root)

    # This lcg's analyzer is a newer one than the snapshot's.
    monkeypatch.setattr(text_module, "ANALYZER_VERSION", ANALYZER_VERSION + "-next")
    looking = TextProjection(root, read_only=True)
    assert looking.discarded_groups == ["g"] and looking.position("g") == Position.none("g")
    looking.close()
    assert _files(root) == before

    writing = TextProjection(root)
    assert writing.discarded_groups == ["g"]
    writing.close()
    assert _files(root) == {}


def _stat(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_read_only_graph_writes_nothing_and_refuses_another_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "db"
    GraphProjection(db).close()
    before = _stat(db)
    looking = GraphProjection(db, read_only=True)
    assert looking.counts("g").entities == 0
    looking.close()
    assert _stat(db) == before  # not even a checkpoint

    # A newer lcg's schema: a writing open would drop the graph; a looking one refuses.
    monkeypatch.setattr(graph_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(StaleGraphError, match="`lcg serve` rebuilds it from the streams"):
        GraphProjection(db, read_only=True)
    assert _stat(db) == before
