"""Issue 11 item 2, exactly as reported, against a real ``lcg serve`` subprocess: assert a, b,
c; stop; delete the stream's last line; start; assert d. The write used to be acknowledged
(``created: true``) and never shown, with status ``hydrated`` and ``lcg verify`` DIFFERENT; now
the group is degraded with the reason and remedy, d is refused, ``lcg status`` exits 1, and
``lcg replay --force-clear`` (the remedy) makes the group take writes again (ADR 0076). The
``lcg`` commands run in this process (conftest's ``lcg_main``)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from _service_fixtures import spawn_serve, stop_serve, temp_workspace, wait_healthy
from lcg.events.segments import list_segments
from lcg.rpc.client import Client
from lcg.rpc.errors import DEGRADED, RemoteError, TransportError

GROUP = "liminis"


def _settled_health(sock: Path, proc: Any) -> dict[str, Any]:
    """Poll ``health_check`` until the service is past ``initializing`` (no sleeps to wait)."""
    deadline = time.monotonic() + 90
    while True:
        assert proc.poll() is None, "lcg serve exited"
        assert time.monotonic() < deadline, "lcg serve never settled"
        try:
            with Client(sock, timeout=60) as c:
                health = dict(c.health_check())
        except TransportError:  # not bound yet (or a stale socket file of the last run)
            health = {"state": "initializing"}
        if health["state"] != "initializing":
            return health
        time.sleep(0.02)


def test_a_write_after_a_lost_tail_is_refused_not_lost(lcg_main: sf.LcgMain) -> None:
    with temp_workspace() as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = spawn_serve(ws)
        try:
            wait_healthy(sock, proc)
            with Client(sock, timeout=60) as c:
                for name in ("a", "b", "c"):
                    c.call("knowledge_assert_entity", {"name": name})
        finally:
            stop_serve(proc, sock)

        (segment,) = list_segments(ws / ".lcg" / "wal" / GROUP)
        lines = segment.path.read_bytes().splitlines(keepends=True)
        assert len(lines) == 3
        segment.path.write_bytes(b"".join(lines[:-1]))  # the lost tail: c's line

        proc = spawn_serve(ws)
        try:
            health = _settled_health(sock, proc)
            assert health["state"] == "degraded" and health["healthy"] is False
            assert "applied seq 2" in health["reason"]
            assert f"lcg replay --group {GROUP} --force-clear" in health["reason"]
            with Client(sock, timeout=60) as c:
                with pytest.raises(RemoteError) as refused:
                    c.call("knowledge_assert_entity", {"name": "d"})
                assert refused.value.code == DEGRADED
                assert "refused" in str(refused.value.data)
                # Reads are still served: c is there, as the projections hold it.
                status = c.call("knowledge_status", {})
                group = status["wal_groups"][GROUP]
                assert group["hydration_status"] == "projections_ahead"
                assert group["degraded_reason"] and status["entity_count"] == 3
            assert len(segment.path.read_bytes().splitlines()) == 2  # nothing appended

            shown = lcg_main(ws, "status")
            assert shown.returncode == 1 and "degraded: group 'liminis'" in shown.stdout

            # The remedy: rebuild from what the stream holds; then d is written and shown.
            replay = lcg_main(ws, "replay", "--group", GROUP, "--force-clear")
            assert replay.returncode == 0, replay.stdout + replay.stderr
            with Client(sock, timeout=60) as c:
                assert c.health_check()["state"] == "healthy"
                created = c.call("knowledge_assert_entity", {"name": "d"})
                assert created["created"] is True
                assert c.call("knowledge_status", {})["entity_count"] == 3  # a, b, d
            verified = lcg_main(ws, "verify")
            assert verified.returncode == 0, verified.stdout + verified.stderr
            assert lcg_main(ws, "status").returncode == 0
        finally:
            stop_serve(proc, sock)


def test_a_corrupt_line_degrades_the_service_until_the_loss_is_accepted_over_rpc(
    lcg_main: sf.LcgMain,
) -> None:
    with temp_workspace() as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = spawn_serve(ws)
        try:
            wait_healthy(sock, proc)
            with Client(sock, timeout=60) as c:
                for i in range(6):
                    c.call("knowledge_assert_entity", {"name": f"thing {i}"})
        finally:
            stop_serve(proc, sock)
        (segment,) = list_segments(ws / ".lcg" / "wal" / GROUP)
        data = segment.path.read_bytes()
        segment.path.write_bytes(data.replace(b'"name":"thing 3"', b'"name":"thinG 3"'))
        shutil.rmtree(ws / ".lcg" / "db")  # the next open replays the stream

        proc = spawn_serve(ws)
        try:
            health = _settled_health(sock, proc)
            assert health["state"] == "degraded" and "--accept-loss" in health["reason"]
            lossy = lcg_main(ws, "replay", "--group", GROUP, "--force-clear", "--json")
            assert lossy.returncode == 1
            result = json.loads(lossy.stdout)
            assert result["success"] is False and result["skipped_seqs"] == [[3, 3]]
            accepted = lcg_main(ws, "replay", "--group", GROUP, "--force-clear", "--accept-loss")
            assert accepted.returncode == 0, accepted.stdout + accepted.stderr
            assert "loss accepted for 1 seq(s): 3" in accepted.stdout
            with Client(sock, timeout=60) as c:
                assert c.health_check()["state"] == "healthy"
                assert c.call("knowledge_assert_entity", {"name": "new"})["created"] is True
        finally:
            stop_serve(proc, sock)
