"""The identity a workspace opens with while its embedder is away, and the standby embedder
(ADR 0171). The server is ``FakeEmbeddingsServer``, a FAKE at the embedder boundary (loopback
HTTP, deterministic hash vectors); the snapshots and sidecars are real files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fake_embeddings import FAKE_DIM, FAKE_MODEL, FakeEmbeddingsServer, FakeState, free_port
from lcg.errors import EmbedderError
from lcg.events.sidecars import EmbeddingModelSidecar, write_embedding_model
from lcg.extract.embedders import HashEmbedder, HttpEmbedder, StandbyEmbedder
from lcg.projections.ops import Upsert
from lcg.projections.vectors import VectorProjection
from lcg.workspace.embedder_standby import PLACEHOLDER_DIM, provisional_identity


def _snapshot(root: Path, group: str, model: str, dim: int) -> None:
    # Written apart and moved in: opening ``root`` with one identity deletes the others'.
    apart = root.parent / f"apart-{group}"
    vp = VectorProjection(apart, dim, model)
    op = Upsert(kind="entity", group_id=group, uuid="u1", parts={"name": "Ada"})
    vp.apply(group, "gen", 0, [op], {"Ada": HashEmbedder(dim).embed(["Ada"])[0]})
    vp.save()
    vp.close()
    root.mkdir(exist_ok=True)
    for entry in apart.iterdir():
        entry.rename(root / entry.name)


def _sidecar(wal: Path, group: str, model: str, dim: int) -> None:
    (wal / group).mkdir(parents=True)
    write_embedding_model(wal / group, EmbeddingModelSidecar(model=model, dim=dim))


def test_the_vector_snapshots_decide_first(tmp_path: Path) -> None:
    vectors, wal = tmp_path / "vectors", tmp_path / "wal"
    _snapshot(vectors, "a", "served-model", 48)
    _snapshot(vectors, "b", "served-model", 48)
    _snapshot(vectors, "c", "older-model", 32)
    _sidecar(wal, "a", "sidecar-model", 64)
    assert provisional_identity("asked", None, vectors, wal) == ("served-model", 48)
    # LCG_EMBEDDING_DIM narrows the choice to that dimension.
    assert provisional_identity("asked", 32, vectors, wal) == ("older-model", 32)
    # Loading with the chosen identity keeps those snapshots (another one's are deleted).
    kept = VectorProjection(vectors, 48, "served-model")
    assert kept.groups() == ["a", "b"] and kept.discarded_groups == ["c"]
    kept.close()


def test_then_the_streams_sidecars_then_the_configuration(tmp_path: Path) -> None:
    vectors, wal = tmp_path / "vectors", tmp_path / "wal"
    _sidecar(wal, "a", "sidecar-model", 64)
    assert provisional_identity("asked", None, vectors, wal) == ("sidecar-model", 64)
    assert provisional_identity("asked", 16, vectors, wal) == ("asked", 16)
    assert provisional_identity("asked", None, tmp_path / "none", tmp_path / "none") == (
        "asked",
        PLACEHOLDER_DIM,
    )


def test_an_away_server_fails_at_once_and_is_taken_back_when_it_answers() -> None:
    port = free_port()
    inner = HttpEmbedder(f"http://127.0.0.1:{port}", FAKE_MODEL)
    standby = StandbyEmbedder(inner, FAKE_MODEL, FAKE_DIM, away="it was not there", retry_s=3600)
    try:
        reason = standby.away
        assert reason is not None and "LCG_EMBEDDING_URL" in reason
        with pytest.raises(EmbedderError, match="it was not there"):
            standby.embed(["Ada"])  # within retry_s: no new probe, the known reason
        server = FakeEmbeddingsServer(port=port)
        try:
            assert standby.refresh() is None
            assert standby.confirmed
            out = standby.embed(["Ada"])
            np.testing.assert_allclose(out, HashEmbedder(FAKE_DIM).embed(["Ada"]), atol=1e-6)
        finally:
            server.stop()
        # Gone again mid-life: away, with the new reason, until it answers.
        with pytest.raises(EmbedderError, match="is unreachable"):
            standby.embed(["Grace"])
        assert standby.away is not None and "is unreachable" in standby.away
    finally:
        standby.close()


def test_a_server_back_with_another_identity_is_held_until_adopted() -> None:
    server = FakeEmbeddingsServer(state=FakeState(dim=32, model="new-model"))
    standby = StandbyEmbedder(HttpEmbedder(server.url, "asked"), "old-model", 48, away="down")
    try:
        reason = standby.refresh()
        assert standby.arrived == ("new-model", 32)
        assert reason is not None and "'new-model' (32-d)" in reason
        with pytest.raises(EmbedderError, match="being rebuilt"):
            standby.embed(["Ada"])  # never a 32-d vector into a 48-d projection
        standby.adopt("new-model", 32)
        assert (standby.model_id, standby.dim, standby.away) == ("new-model", 32, None)
        assert standby.embed(["Ada"]).shape == (1, 32)
    finally:
        standby.close()
        server.stop()
