"""``Workspace.known_groups``: the one definition of "every group of the workspace"."""

from __future__ import annotations

from pathlib import Path

from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion, deletion
from lcg.ingest.dump import dump_groups
from lcg.projections.ops import Upsert
from lcg.workspace import Workspace
from lcg.workspace.status import build_status


def _cfg(root: Path) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash"})


def _with_a_text_only_group(ws: Workspace) -> None:
    """``a`` has a stream and every projection; ``t`` only a text snapshot (no stream, no
    graph row: as a leftover of a purge that did not finish)."""
    assertion.assert_entity(ws, name="Ada", group_id="a")
    op = Upsert(kind="entity", group_id="t", uuid="u1", parts={"name": "left over"})
    ws.text.apply("t", "gen", 0, [op])


def test_known_groups_are_the_streams_and_what_any_projection_holds(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        _with_a_text_only_group(ws)
        assert ws.known_groups() == ["a", "t"]
        # The record's view: what status reports and a dump writes (both read the graph).
        assert ws.known_groups(record_only=True) == ["a"]
        assert sorted(build_status(ws).wal_groups) == ["a"]
        assert dump_groups(ws, tmp_path / "dump").groups == ["a"]


def test_a_clear_reaches_every_group_any_projection_holds(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        _with_a_text_only_group(ws)
        deletion.clear_all(ws, confirm=True, preserve_wal=True)
        assert ws.text.groups() == [] and ws.known_groups() == ["a"]  # its stream stays
        _with_a_text_only_group(ws)
        ws.wipe()
        assert ws.known_groups() == [] and ws.text.groups() == []
