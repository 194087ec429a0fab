"""The service asks the projector's own rules before it starts a rebuild job (ADR 0184), over
a real socket with real Kuzu: what a rebuild would refuse is answered at once, and what it
would replay (a reset) is not refused by a second, different set of rules."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import _service_fixtures as sf
from lcg.config import Config
from lcg.events import encode_group
from lcg.events.generation import write_generation
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.workspace import Workspace


def _wait_for(conn: sf.RawConnection, job_id: str) -> dict[str, Any]:
    status: dict[str, Any] = conn.result("knowledge_rebuild_status", {"job_id": job_id})
    deadline = time.monotonic() + 60
    while status["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.02)  # polling the job's status (its only completion signal)
        status = conn.result("knowledge_rebuild_status", {"job_id": job_id})
    return status


def test_a_generation_split_is_refused_at_once_not_as_a_failing_job() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as conn:
        conn.result("knowledge_assert_entity", {"name": "Kepler", "group_id": "g"})
        gdir = svc.config.wal_dir / encode_group("g")
        write_generation(gdir, "0" * 32)  # the sidecar no longer names the lines' generation
        error = conn.error("knowledge_rebuild_from_wal", {"group_id": "g", "force_clear": True})
        assert "names generation '" + "0" * 32 + "'" in error["message"], error
        assert "the stream's lines carry" in error["message"], error
        assert svc.app.jobs == {}  # no job was started


def test_a_stream_replaced_under_the_service_is_rebuilt_as_a_reset(tmp_path: Path) -> None:
    other = Config.from_env(tmp_path / "other", env=sf.HASH_ENV)
    with Workspace.open(other, HashEmbedder()) as ws:  # the publisher's new generation
        for name in ("Tycho", "Brahe"):
            assertion.assert_entity(ws, name=name, group_id="g")
        new = ws.store.generation("g")
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as conn:
        for name in ("Kepler", "Galileo", "Newton"):
            conn.result("knowledge_assert_entity", {"name": name, "group_id": "g"})
        gdir = svc.config.wal_dir / encode_group("g")
        shutil.rmtree(gdir)
        shutil.copytree(other.wal_dir / encode_group("g"), gdir)
        # No force_clear: the stream on disk decides, not the generation the writer cached.
        job = conn.result("knowledge_rebuild_from_wal", {"group_id": "g"})
        status = _wait_for(conn, job["job_id"])
        assert status["status"] == "completed", status
        result = status["result"]
        assert result["reset_detected"] is True and result["generation"] == new, result
        assert result["mutations_replayed"] == 2
        names = conn.result("knowledge_get_nodes_by_group", {"group_ids": ["g"]})
        assert sorted(n["name"] for n in names["nodes"]) == ["Brahe", "Tycho"]
