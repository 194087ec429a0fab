"""``lcg replay`` and ``lcg status`` on the files directly (no service), in-process."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import lcg.cli.main as cli_main
from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.workspace import Workspace

#: ``lcg -C WS ARGS`` run in this process: (exit status, stdout, stderr).
Lcg = Callable[..., tuple[int, str, str]]


@pytest.fixture
def lcg(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Lcg:
    for key in [k for k in os.environ if k.startswith("LCG_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")  # the test double: no model load
    monkeypatch.setenv("LCG_TELEMETRY", "off")

    def call(ws: Path, *args: str) -> tuple[int, str, str]:
        status = cli_main.main(["-C", str(ws), *args])
        out, err = capsys.readouterr()
        return status, out, err

    return call


def _workspace(root: Path, n: int) -> dict[str, str]:
    cfg = Config.from_env(root, env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(cfg, HashEmbedder()) as ws:
        for i in range(n):
            assertion.assert_entity(ws, name=f"thing {i}", group_id="g", summary=f"about {i}")
        return ws.digests("g")


def test_replay_after_the_projections_are_deleted(tmp_path: Path, lcg: Lcg) -> None:
    digests = _workspace(tmp_path, 12)
    for sub in ("db", "text", "vectors"):
        shutil.rmtree(tmp_path / ".lcg" / sub)
    # The command replays the group itself (opening does not catch it up first and then
    # refuse it as "already holding data").
    status, out, err = lcg(tmp_path, "replay", "--group", "g", "--json")
    assert status == 0, err
    result = json.loads(out)
    assert result["mutations_replayed"] == 12 and result["failed_lines"] == 0
    with Workspace.open(Config.from_env(tmp_path, env={"LCG_EMBEDDER": "hash"})) as ws:
        assert ws.digests("g") == digests
    # Now the group holds data: refused with the remedy, then done with --force-clear.
    status, out, err = lcg(tmp_path, "replay", "--group", "g")
    assert status == 1 and "pass --force-clear to purge" in err
    status, out, err = lcg(tmp_path, "replay", "--group", "g", "--force-clear")
    assert status == 0 and "12 events replayed" in out


def test_status_reports_a_deleted_graph_without_rebuilding_it(tmp_path: Path, lcg: Lcg) -> None:
    _workspace(tmp_path, 5)
    shutil.rmtree(tmp_path / ".lcg" / "db")
    status, out, err = lcg(tmp_path, "status", "--json")
    # A status only looks: the group is reported behind its stream (exit 1), not rebuilt.
    assert status == 1, err
    report = json.loads(out)
    assert report["served_by"] == "direct"
    assert report["wal_groups"]["g"]["hydration_status"] == "wal_ahead"
    assert report["entity_count"] == 0
    # Opening to serve catches up, as `lcg status` advises.
    with Workspace.open(Config.from_env(tmp_path, env={"LCG_EMBEDDER": "hash"})) as ws:
        assert ws.graph.counts("g").entities == 5
