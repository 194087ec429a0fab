"""One stream, one answer (issue 13 item 5, ADR 0115): ``knowledge_wal_mark_list`` and
``lcg mark list`` judge a mark's reachability by the same effective generation.

Before, the RPC method read only ``.wal-generation.json``: with the sidecar dropped (a glob
copy) it called a mark of another generation reachable, which ``lcg mark list`` (the lines'
generation) called unreachable. Real service on a real socket, real CLI in-process, real files;
the embedder is the hash test double.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import _service_fixtures as sf
import lcg.cli.main as cli_main
from lcg.events.generation import effective_generation
from lcg.events.groups import encode_group
from lcg.events.layout import GENERATION_FILE
from lcg.events.marks import create_mark

GROUP = "marks-agree"


def _cli_reachability(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, bool]:
    for key in [k for k in os.environ if k.startswith("LCG_")]:
        monkeypatch.delenv(key)
    for key, value in sf.HASH_ENV.items():
        monkeypatch.setenv(key, value)
    capsys.readouterr()
    assert cli_main.main(["-C", str(ws), "mark", "list", "--group", GROUP, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    return {m["name"]: m["reachable"] for m in listed["checkpoints"]}


@pytest.mark.parametrize("sidecar", ["kept", "dropped"])
def test_rpc_and_cli_mark_list_agree_on_reachability(
    sidecar: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as conn:
        for name in ("Kepler", "Tycho"):
            conn.result("knowledge_assert_entity", {"name": name, "group_id": GROUP})
        gdir = svc.config.wal_dir / encode_group(GROUP)
        generation = effective_generation(gdir)
        assert generation is not None
        create_mark(gdir, "this-generation", 0, generation)
        create_mark(gdir, "other-generation", 0, "0" * 32)
        if sidecar == "dropped":
            (gdir / GENERATION_FILE).unlink()
            assert effective_generation(gdir) == generation  # the lines still name it

        listed = conn.result("knowledge_wal_mark_list", {"group_id": GROUP})
        rpc = {m["name"]: m["reachable"] for m in listed["checkpoints"]}
        cli = _cli_reachability(svc.workspace, capsys, monkeypatch)

    assert rpc == cli == {"this-generation": True, "other-generation": False}
