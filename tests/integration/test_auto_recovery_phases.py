"""Issue 30 item 5: the healing lcg does is observable as the reference's ``wal_auto_recovery``
phases (ADR 0213).

Written from the reference's telemetry documentation: the phase names, their order
(``corruption_detected`` → ``checkpoint_drop_complete`` → ``cursor_derived`` →
``replay_complete`` → ``index_build_complete`` → ``recovery_complete``, or
``fallback_triggered``), and the fields (all but ``phase`` optional). Real workspaces (real
Kuzu, BM25, hnswlib, the hash embedder), one real ``lcg serve``.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from event_samples import added
from lcg import telemetry
from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.rpc.client import Client
from lcg.workspace import Workspace

#: The reference's example line, written by hand from its documentation.
DOC_EXAMPLE = json.loads(
    '{"type":"wal_auto_recovery","ts_ms":1716100000090,"phase":"replay_complete",'
    '"from_seq":7,"mutations_replayed":412,"elapsed_ms":1830}'
)
DOC_FIELDS = {
    "type", "ts_ms", "phase", "from_seq", "cursor_reason", "mutations_replayed", "elapsed_ms",
    "fallback_reason",
}  # fmt: skip
HEALED = [
    "corruption_detected", "checkpoint_drop_complete", "cursor_derived", "replay_complete",
    "index_build_complete", "recovery_complete",
]  # fmt: skip
N = 5


def _config(root: Path) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"})


@pytest.fixture
def ws() -> Iterator[Path]:
    """A closed workspace: group ``a`` with N episodes."""
    root = sf.short_tmp("lcg-ar-")
    try:
        with Workspace.open(_config(root), HashEmbedder()) as w:
            w.commit("a", [added(f"a{i}", group="a", content=f"word{i} apple") for i in range(N)])
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def records() -> Iterator[io.BytesIO]:
    sink = io.BytesIO()
    telemetry.set_sink(sink, enabled=True)
    yield sink
    telemetry.set_sink(None, enabled=False)


def _phases(lines: bytes) -> list[dict[str, Any]]:
    found = [json.loads(line) for line in lines.splitlines() if line.startswith(b"{")]
    return [r for r in found if r["type"] == "wal_auto_recovery"]


def _garble_bm25(root: Path) -> Path:
    path = root / ".lcg" / "text" / "a.bm25"
    data = bytearray(path.read_bytes())
    data[100:400] = b"\xff" * 300
    path.write_bytes(bytes(data))
    return path


def _documented(phases: list[dict[str, Any]]) -> None:
    assert set(DOC_EXAMPLE) <= DOC_FIELDS
    for record in phases:
        assert set(record) <= DOC_FIELDS and {"type", "ts_ms", "phase"} <= set(record), record
        assert all(v is not None for v in record.values()), "absent, not null"


def test_a_clean_open_emits_no_recovery(ws: Path, records: io.BytesIO) -> None:
    Workspace.open(_config(ws), HashEmbedder()).close()
    assert _phases(records.getvalue()) == []


def test_a_damaged_snapshot_healed_on_open_steps_through_the_phases(
    ws: Path, records: io.BytesIO
) -> None:
    _garble_bm25(ws)
    with Workspace.open(_config(ws), HashEmbedder()) as w:
        assert "a" not in w.projector.damage
    phases = _phases(records.getvalue())
    _documented(phases)
    assert [p["phase"] for p in phases] == HEALED
    cursor = phases[2]
    assert cursor["from_seq"] == 0 and cursor["cursor_reason"]
    assert phases[3]["mutations_replayed"] == N


def test_nothing_to_rebuild_from_ends_in_fallback_triggered(ws: Path, records: io.BytesIO) -> None:
    path = _garble_bm25(ws)
    shutil.rmtree(ws / ".lcg" / "wal" / "a")  # the stream is gone too
    with Workspace.open(_config(ws), HashEmbedder()) as w:
        assert "a" in w.projector.damage
    phases = _phases(records.getvalue())
    _documented(phases)
    assert [p["phase"] for p in phases][-1] == "fallback_triggered"
    assert str(path) in phases[-1]["fallback_reason"]
    assert "recovery_complete" not in [p["phase"] for p in phases]


def test_recover_full_of_a_degraded_service_steps_through_the_phases(ws: Path) -> None:
    graph = ws / ".lcg" / "db" / "graph.kuzu"
    data = bytearray(graph.read_bytes())
    data[:4096] = b"\xff" * 4096  # not a graph database any more: the service opens degraded
    graph.write_bytes(bytes(data))
    sock = ws / ".lcg" / "service.sock"
    proc = sf.spawn_serve(ws)
    try:
        with Client(sock, timeout=120) as c:
            sf.eventually(sock.exists, "lcg serve binds its socket", proc=proc)
            sf.eventually(
                lambda: c.health_check()["state"] == "degraded", "degraded on open", proc=proc
            )
            full = c.call("knowledge_recover_full", {})
            assert full["success"] is True and full["mutations_replayed"] == N, full
            assert c.health_check()["state"] == "healthy"
    finally:
        assert sf.stop_serve(proc, sock) == 0
    phases = _phases((ws / "serve.log").read_bytes())
    _documented(phases)
    assert [p["phase"] for p in phases] == HEALED
    assert phases[2]["from_seq"] == 0 and phases[3]["mutations_replayed"] == N
