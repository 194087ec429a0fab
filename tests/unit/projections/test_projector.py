"""The projector's rebuild semantics, on real projections and real streams."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pytest

from lcg.config import Config
from lcg.errors import (
    EmbedderError,
    GenerationError,
    ProjectionError,
    RebuildRefusedError,
    StreamError,
)
from lcg.events.generation import write_generation
from lcg.events.layout import GENERATION_FILE
from lcg.events.model import EntityAsserted, EntityRecord, Event
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion, episodes
from lcg.projections.projector import ReplayProgress
from lcg.workspace import Workspace

TS = "2024-01-01T00:00:00.000000Z"


def _cfg(root: Path, **extra: str) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash", **extra})


def _entity(i: int) -> EntityAsserted:
    return EntityAsserted(
        group_id="g",
        entity=EntityRecord(uuid=f"e{i}", name=f"name {i}", labels=["Entity"], created_at=TS),
        created=True,
    )


def _fill(ws: Workspace, n: int = 10) -> None:
    for i in range(n):
        assertion.assert_entity(ws, name=f"thing {i}", group_id="g", summary=f"about {i}")
    episodes.process_chunk(ws, chunk_text="a note", chunk_id="c", source_file="f", group_id="g")


class FlakyEmbedder(HashEmbedder):
    """A test double: the hash embedder, failing while ``broken`` is set."""

    broken = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.broken:
            raise EmbedderError("the test embedder is down")
        return super().embed(texts)


def test_rebuild_refuses_a_group_with_data_unless_force_clear(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        _fill(ws)
        before = ws.digests("g")
        with pytest.raises(RebuildRefusedError, match="force_clear"):
            ws.projector.rebuild("g")
        with pytest.raises(RebuildRefusedError):
            ws.projector.rebuild("g", dry_run=True)
        result = ws.projector.rebuild("g", force_clear=True)
        assert result.mutations_replayed == 11
        assert result.last_committed_seq == 10
        assert ws.digests("g") == before


def test_rebuild_of_a_group_without_stream_files(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        with pytest.raises(StreamError, match="No WAL files found"):
            ws.projector.rebuild("nothing")


def test_to_seq_bounds_the_replay_and_dry_run_counts(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        _fill(ws)
        ws.projector.rebuild("g", force_clear=True, to_seq=4)
        assert {p.seq for p in ws.projector.positions("g").values()} == {4}
        assert ws.graph.counts("g").entities == 5
        dry = ws.projector.rebuild("g", from_seq=5, dry_run=True)
        assert dry.dry_run and dry.mutations_replayed == 6
        assert ws.graph.counts("g").entities == 5  # a dry run applies nothing
        ws.catch_up()
        assert ws.graph.counts("g").entities == 10


def test_generation_change_is_a_reset(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        _fill(ws, 3)
        old = ws.store.generation("g")
    # The publisher replaced its stream: new generation, different content.
    gdir = cfg.wal_dir / "g"
    shutil.rmtree(gdir)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", [_entity(1), _entity(2)])
    with Workspace.open(cfg, HashEmbedder(), catch_up=False) as ws:
        assert ws.projector.positions("g")["graph"].generation != ws.store.generation("g")
        dry = ws.projector.rebuild("g", dry_run=True)
        assert dry.reset_detected and dry.previous_generation is not None
        result = ws.catch_up()["g"]
        assert result.reset_detected
        assert ws.graph.counts("g").entities == 2
        now = ws.store.generation("g")
        assert all(p.generation == now for p in ws.projector.positions("g").values())
        assert ws.store.generation("g") != old


def test_a_reset_applied_at_open_is_reported_by_the_next_open_ended_rebuild(
    tmp_path: Path,
) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        _fill(ws, 3)
        old = ws.store.generation("g")
    shutil.rmtree(cfg.wal_dir / "g")
    with Workspace.open(cfg, HashEmbedder(), catch_up=False) as ws:
        ws.store.append("g", [_entity(1), _entity(2)])  # the publisher's new generation
        new = ws.store.generation("g")
    with Workspace.open(cfg, HashEmbedder()) as ws:  # the catch-up at open applies the reset
        assert ws.graph.counts("g").entities == 2
        pending = ws.projector.pending_reset("g")
        assert pending is not None and (pending.previous_generation, pending.generation) == (
            old,
            new,
        )
        # A bounded replay (a replica's, verify's) leaves the report to an open-ended one.
        ws.projector.rebuild("g", from_seq=1, to_seq=1)
        dry = ws.projector.rebuild("g", dry_run=True)
        assert dry.reset_detected and dry.previous_generation == old
    with Workspace.open(cfg, HashEmbedder()) as ws:
        result = ws.projector.rebuild("g")  # no force_clear needed: a reset forces it
        assert result.reset_detected and result.previous_generation == old
        assert result.generation == new and result.mutations_replayed == 2
        assert ws.projector.pending_reset("g") is None
        with pytest.raises(RebuildRefusedError, match="force_clear"):
            ws.projector.rebuild("g")


def test_unknown_generation_with_a_recorded_position_is_refused(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", [_entity(1)])
        ws.catch_up()
    gdir = cfg.wal_dir / "g"
    (gdir / GENERATION_FILE).unlink()
    # Lines still name the generation: the stream is recognised, not refused.
    with Workspace.open(cfg, HashEmbedder()) as ws:
        assert ws.graph.counts("g").entities == 1
    # Lines that carry no generation and no sidecar: refused with a remedy.
    (gdir / GENERATION_FILE).unlink(missing_ok=True)
    for seg in gdir.glob("*.jsonl"):
        seg.write_bytes(re.sub(rb'"gen":"[0-9a-f]*"', b'"gen":""', seg.read_bytes()))
    ws = Workspace(cfg, HashEmbedder())
    try:
        with pytest.raises(GenerationError, match="wal-generation.json"):
            ws.projector.catch_up("g")
    finally:
        ws.close()


def test_a_failing_event_is_isolated_and_counted(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, LCG_REPLAY_BATCH_SIZE="64")
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", [_entity(i) for i in range(8)])
        real_apply = ws.graph.apply

        def poisoned(group_id: str, generation: str, events: list[Event]) -> None:
            # Fault injection: the real graph, refusing any batch that holds entity e3.
            if any(isinstance(e, EntityAsserted) and e.entity.uuid == "e3" for e in events):
                raise ProjectionError("injected failure for e3")
            real_apply(group_id, generation, events)

        real_load = ws.graph.load_group

        def poisoned_load(group_id: str, generation: str, batches: Iterable[list[Event]]) -> int:
            # Fault injection: the bulk path fails part-way, as it would on e3.
            for batch in batches:
                if any(isinstance(e, EntityAsserted) and e.entity.uuid == "e3" for e in batch):
                    raise ProjectionError("injected failure for e3")
            return 0

        ws.graph.apply = poisoned  # type: ignore[method-assign]
        ws.graph.load_group = poisoned_load  # type: ignore[method-assign]
        result = ws.projector.rebuild("g", force_clear=True)
        ws.graph.apply = real_apply  # type: ignore[method-assign]
        ws.graph.load_group = real_load  # type: ignore[method-assign]
        assert any("bulk load failed" in w for w in result.warnings)
        assert result.failed_lines == 1
        assert result.failed_samples[0].cypher.startswith("EntityAsserted seq=3")
        assert "injected failure" in result.failed_samples[0].error
        assert result.transactions_rolled_back >= 1
        assert result.mutations_replayed == 8
        assert ws.graph.counts("g").entities == 7
        assert result.fidelity_warning is not None  # 8/9 applied < the 90 % default


def test_embedder_failure_lets_vectors_lag_then_catch_up(tmp_path: Path) -> None:
    emb = FlakyEmbedder()
    with Workspace.open(_cfg(tmp_path), emb) as ws:
        _fill(ws, 2)
        emb.broken = True
        assertion.assert_entity(ws, name="while down", group_id="g")
        positions = ws.projector.positions("g")
        assert positions["graph"].seq == positions["text"].seq == 3
        assert positions["vectors"].seq == 2
        assert "g" in ws.projector.embedder_failures
        emb.broken = False
        assertion.assert_entity(ws, name="after", group_id="g")
        assert {p.seq for p in ws.projector.positions("g").values()} == {4}
        live = ws.digests("g")
    for sub in ("db", "text", "vectors"):
        shutil.rmtree(tmp_path / ".lcg" / sub)
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        assert ws.digests("g") == live


def test_generation_sidecar_written_by_hand_is_respected(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    (cfg.wal_dir / "g").mkdir(parents=True)
    write_generation(cfg.wal_dir / "g", "hand-made")
    with Workspace.open(cfg, HashEmbedder()) as ws:
        stamped = ws.commit("g", [_entity(1)])
        assert stamped[0].gen == "hand-made"


def test_full_replay_reports_its_phases_and_builds_vector_graphs(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, LCG_REPLAY_BATCH_SIZE="4")
    with Workspace.open(cfg, HashEmbedder()) as ws:
        _fill(ws, 30)
        before = ws.digests("g")
    for sub in ("db", "text", "vectors"):
        shutil.rmtree(tmp_path / ".lcg" / sub)
    frames: list[ReplayProgress] = []
    ws = Workspace(cfg, HashEmbedder())
    try:
        ws.vectors._exact_below = 10  # so that the entity fields get an hnswlib graph
        with ws.rw.write():
            result = ws.projector.catch_up("g", frames.append)
        phases = [f.phase for f in frames]
        # Batches first, then the bulk graph write, then the one hnswlib build.
        assert phases[-2:] == ["graph", "vectors"] and set(phases[:-2]) == {"apply"}
        assert frames[-1].last_seq == result.last_committed_seq == 30
        field = ws.vectors._groups["g"].fields["entity.name"]
        assert field.has_graph and not field.suspended
        assert ws.digests("g") == before
    finally:
        ws.close()
