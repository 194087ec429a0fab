"""A reference-format stream under ``.lcg/wal/<group>/`` is recognised, never taken for empty
(issue 30 item 2, ADR 0212).

The seed ("Publishing a WAL stream"): an external, non-lcg publisher may create a group's
stream directory ``.lcg/wal/<group>/`` itself, writing its ``*.jsonl`` files and
``.wal-generation.json``; lcg-api §5.5 names the reference's files ``YYYYMMDD_HHMMSS_<6hex>_
<NNNN>.jsonl`` (a publisher names them as it likes) and its lines ``{seq, ts, db, cypher,
params}``; §3.1: ``max_seq`` is the literal highest seq, ``hydration_status`` is ``wal_ahead``
when applied < max; §3.9: a rebuild says ``No WAL files found at <dir>`` only when the
directory holds no ``*.jsonl``. The directory below is written by hand that way. A real ``lcg
serve`` must report the group as holding a reference stream (its highest seq, the command that
imports it) in ``knowledge_status`` and ``lcg status``, refuse ``knowledge_rebuild_from_wal``
naming that command rather than "No WAL files found", refuse a write that would start a stream
of its own beside it, and the command it names, run as given once the service is stopped, must
import the rows into the group.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.projections import graph_records as gr
from lcg.rpc import Client
from lcg.rpc.errors import RemoteError
from lcg.workspace import Workspace

GROUP = "published"
T0 = "2024-05-01T09:00:00.000000+00:00"
ENTITY = (
    "CREATE (:Entity {uuid: $uuid, name: $name, group_id: $group_id, labels: $labels, "
    "created_at: $created_at, name_embedding: $name_embedding, summary: $summary, "
    "attributes: $attributes})"
)


def _line(seq: int, uuid: str, name: str) -> str:
    params = {
        "uuid": uuid, "name": name, "group_id": GROUP, "labels": ["Entity"], "created_at": T0,
        "name_embedding": [0.5, 0.25], "summary": f"{name}.", "attributes": "{}",
    }  # fmt: skip
    record = {"seq": seq, "ts": T0, "db": "", "cypher": ENTITY, "params": params}
    return json.dumps(record, separators=(",", ":")) + "\n"


def _publish(ws: Path) -> Path:
    """The publisher's directory: the reference's own file name, then one of its own."""
    gdir = ws / ".lcg" / "wal" / GROUP
    gdir.mkdir(parents=True, mode=0o700)
    (ws / ".lcg").chmod(0o700)
    (ws / ".lcg" / "wal").chmod(0o700)
    (gdir / ".wal-generation.json").write_text(json.dumps({"generation": "pub-gen-1"}))
    (gdir / "20240501_090000_a1b2c3_0000.jsonl").write_text(
        _line(0, "p-1", "Ada Lovelace") + _line(1, "p-2", "Charles Babbage")
    )
    (gdir / "batch-0002.jsonl").write_text(_line(2, "p-3", "Analytical Engine"))
    return gdir


@pytest.fixture
def ws() -> Any:
    with sf.temp_workspace() as path:
        yield path


def test_a_published_reference_stream_is_named_with_the_command_that_imports_it(
    ws: Path, lcg_main: sf.LcgMain
) -> None:
    gdir = _publish(ws)
    sock = Config.from_env(ws, env=sf.HASH_ENV).socket_path
    proc = sf.spawn_serve(ws)
    try:
        sf.wait_healthy(sock, proc)
        with Client(sock, timeout=120) as c:
            status = c.call("knowledge_status", {})
            group = status["wal_groups"][GROUP]
            # Not empty: the stream's literal highest seq, and the group is behind it.
            assert group["max_seq"] == 2
            assert group["hydration_status"] == "wal_ahead"
            assert (group["generation"], group["generation_status"]) == ("pub-gen-1", "known")
            ref = group["reference_stream"]
            assert ref["file_count"] == 2 and ref["max_seq"] == 2
            assert "import-reference" in ref["import_command"]
            assert str(gdir) in ref["import_command"]
            assert "reference" in ref["note"] and ref["import_command"] in ref["note"]
            with pytest.raises(RemoteError) as refused:
                c.call("knowledge_rebuild_from_wal", {"group_id": GROUP})
            said = str(refused.value)
            assert "No WAL files found" not in said
            assert "reference's format" in said and ref["import_command"] in said
            # A write would start a stream of ours at seq 0 beside it: refused, naming it.
            with pytest.raises(RemoteError) as refused:
                c.assert_entity("Someone", group_id=GROUP)
            assert ref["import_command"] in str(refused.value)
            assert sorted(p.name for p in gdir.glob("*.jsonl")) == [
                "20240501_090000_a1b2c3_0000.jsonl",
                "batch-0002.jsonl",
            ]
        shown = lcg_main(ws, "status")
        assert "reference stream" in shown.stdout and "import-reference" in shown.stdout, (
            shown.stdout + shown.stderr
        )
    finally:
        assert sf.stop_serve(proc, sock) == 0
    # The command it names, as given (the service stopped, as the note says).
    argv = shlex.split(ref["import_command"])
    assert argv[0] == "lcg"
    done = lcg_main(None, *argv[1:], "-s")
    assert done.returncode == 0, done.stdout + done.stderr
    config = Config.from_env(ws, env=sf.HASH_ENV)
    with Workspace.open(config, HashEmbedder()) as opened:
        names = sorted(e.name for e in gr.all_entities(opened.graph, GROUP))
        assert names == ["Ada Lovelace", "Analytical Engine", "Charles Babbage"]
    assert not list(gdir.glob("20240501_*.jsonl")) and not (gdir / "batch-0002.jsonl").exists()


def test_an_empty_directory_is_still_no_wal_files(ws: Path) -> None:
    """The reference's message where the directory holds no ``*.jsonl`` at all (§3.9 step 1)."""
    with sf.in_process_service(ws) as svc:
        gdir = svc.config.wal_dir / GROUP
        gdir.mkdir(parents=True, mode=0o700)
        (gdir / "notes.txt").write_text("not a stream file")
        with svc.client() as c, pytest.raises(RemoteError) as refused:
            c.call("knowledge_rebuild_from_wal", {"group_id": GROUP})
        assert f"No WAL files found at {gdir}" in str(refused.value)
