"""``Projector.check_rebuild``: the rebuild's refusals and plan, asked without rebuilding (the
service's preflight before a rebuild job), on real projections and real streams."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from event_samples import entities as _entities
from lcg.config import Config
from lcg.errors import GenerationError, RebuildRefusedError, StreamError
from lcg.events import GENERATION_FILE
from lcg.extract.embedders import HashEmbedder
from lcg.workspace import Workspace


def _cfg(root: Path) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash"})


def test_it_refuses_what_rebuild_refuses_and_changes_nothing(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        with pytest.raises(StreamError, match="No WAL files found at"):
            ws.projector.check_rebuild("nothing")
        ws.store.append("g", _entities(3))
        ws.catch_up()
        before = (ws.digests("g"), ws.projector.positions("g"))
        for dry_run in (False, True):
            with pytest.raises(RebuildRefusedError, match="already holds data") as checked:
                ws.projector.check_rebuild("g", dry_run=dry_run)
            with pytest.raises(RebuildRefusedError) as rebuilt:
                ws.projector.rebuild("g", dry_run=dry_run)
            assert str(checked.value) == str(rebuilt.value)  # one wording, one place
        plan = ws.projector.check_rebuild("g", force_clear=True)
        assert (plan.from_seq, plan.reset_detected) == (0, False)
        assert plan.generation == ws.store.generation("g")
        assert ws.projector.check_rebuild("g", from_seq=2).from_seq == 2
        assert (ws.digests("g"), ws.projector.positions("g")) == before


def test_an_unknown_generation_under_a_recorded_position_is_refused_in_the_one_wording(
    tmp_path: Path,
) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", _entities(1))
        ws.catch_up()
    gdir = cfg.wal_dir / "g"
    (gdir / GENERATION_FILE).unlink()
    for seg in gdir.glob("*.jsonl"):  # lines that name no generation either
        seg.write_bytes(re.sub(rb'"gen":"[0-9a-f]*"', b'"gen":""', seg.read_bytes()))
    ws = Workspace(cfg, HashEmbedder())
    try:
        with pytest.raises(GenerationError) as checked:
            ws.projector.check_rebuild("g", force_clear=True)
        with pytest.raises(GenerationError) as rebuilt:
            ws.projector.rebuild("g", force_clear=True)
        assert str(checked.value) == str(rebuilt.value)
        assert f"{gdir / GENERATION_FILE} is absent or unreadable" in str(checked.value)
        assert f"restore the stream's {GENERATION_FILE} from its publication" in str(checked.value)
    finally:
        ws.close()


def test_a_stream_replaced_under_an_open_writer_is_a_reset_not_a_refusal(
    tmp_path: Path,
) -> None:
    cfg, other = _cfg(tmp_path / "ws"), _cfg(tmp_path / "other")
    with Workspace.open(other, HashEmbedder()) as ws:
        ws.store.append("g", _entities(2, start=10))  # the publisher's new generation
        new = ws.store.generation("g")
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", _entities(3))
        ws.catch_up()
        old = ws.store.generation("g")
        # Replaced on disk while this workspace's writer still caches the old generation.
        shutil.rmtree(cfg.wal_dir / "g")
        shutil.copytree(other.wal_dir / "g", cfg.wal_dir / "g")
        assert ws.store.generation("g") == old != new
        plan = ws.projector.check_rebuild("g")  # the stream on disk decides, not the writer
        assert plan.reset_detected and (plan.previous_generation, plan.generation) == (old, new)
        assert ws.graph.counts("g").entities == 3  # nothing changed yet
        result = ws.projector.rebuild("g")  # no force_clear: the reset forces it
        assert result.reset_detected and result.mutations_replayed == 2
        assert ws.graph.counts("g").entities == 2 and ws.store.generation("g") == new


def test_a_reset_noted_at_open_is_planned_until_a_rebuild_reports_it(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", _entities(3))
        ws.catch_up()
        old = ws.store.generation("g")
    shutil.rmtree(cfg.wal_dir / "g")
    with Workspace.open(cfg, HashEmbedder(), catch_up=False) as ws:
        ws.store.append("g", _entities(2, start=10))
    with Workspace.open(cfg, HashEmbedder()) as ws:  # the catch-up at open applies the reset
        for _ in range(2):  # asking twice: the check reports the reset and forgets nothing
            plan = ws.projector.check_rebuild("g", from_seq=1)
            assert plan.reset_detected and plan.previous_generation == old
            assert (plan.from_seq, plan.to_seq) == (0, None)  # replayed in full
        assert ws.projector.pending_reset("g") is not None
        # A bounded replay (a replica's, verify's) leaves the report to an open-ended one.
        assert not ws.projector.check_rebuild("g", from_seq=1, to_seq=1).reset_detected
        ws.projector.rebuild("g")
        assert ws.projector.pending_reset("g") is None
        with pytest.raises(RebuildRefusedError, match="force_clear"):
            ws.projector.check_rebuild("g")
