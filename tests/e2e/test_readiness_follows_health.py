"""Issue 30 item 4: the readiness fields of ``knowledge_status`` follow ``health_check``.

The reference's documentation gives a launcher two equivalent readiness signals (written here
by hand from its Readiness section):

    Poll `health_check` until it reports `healthy` (or `knowledge_status` until `connected`
    and `queryable` are both `true` and `initializing` is `false` — `knowledge_status` has
    no `healthy` field of its own) before sending real work.

and its status reference: degraded (no DB) is ``connected:false, queryable:false, ...,
name_index_trusted:null``. lcg is also degraded with its workspace open: here a real ``lcg
serve`` whose group ``a`` has a damaged text snapshot and no stream to rebuild it from (its
writes are refused with -32001). Before, ``knowledge_status`` said ``connected`` and
``queryable`` true and ``name_index_trusted`` true there, so a launcher following the status
recipe went on into writes that failed. Now both recipes agree: the launcher does not proceed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _service_fixtures import (
    RawConnection,
    eventually,
    run_lcg,
    short_tmp,
    spawn_serve,
    stop_serve,
)
from event_samples import added
from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.workspace import Workspace

#: The reference's degraded guard code (``DB unavailable, recovery required``).
DEGRADED_CODE = -32001


@pytest.fixture
def damaged() -> Iterator[Path]:
    """A closed workspace: group ``a`` with a garbled text snapshot and no stream; ``b`` fine."""
    root = short_tmp("lcg-ready-")
    try:
        config = Config.from_env(root, env={"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"})
        with Workspace.open(config, HashEmbedder()) as ws:
            ws.commit("a", [added(f"a{i}", group="a", content=f"apple {i}") for i in range(3)])
            ws.commit("b", [added("b0", group="b", content="a storm over the harbour")])
        bm25 = root / ".lcg" / "text" / "a.bm25"
        bm25.write_bytes(b"\xff" * max(64, bm25.stat().st_size))
        shutil.rmtree(root / ".lcg" / "wal" / "a")
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _settled(conn_of: Any, method: str, initializing: Any) -> dict[str, Any]:
    """Poll ``method`` until ``initializing(result)`` is false (no fixed sleep)."""
    seen: dict[str, Any] = {}

    def settled() -> bool:
        with conn_of() as conn:
            seen.clear()
            seen.update(conn.result(method, {}))
        return not initializing(seen)

    eventually(settled, f"{method} never settled: {seen}")
    return dict(seen)


def test_a_launcher_following_the_status_recipe_does_not_write_into_a_degraded_service(
    damaged: Path,
) -> None:
    sock = damaged / ".lcg" / "service.sock"
    proc = spawn_serve(damaged)
    try:
        eventually(sock.exists, "lcg serve never bound its socket", proc=proc)

        def conn() -> RawConnection:
            return RawConnection(sock, timeout=120)

        # The first recipe: health_check, once past initializing.
        health = _settled(conn, "health_check", lambda h: h["state"] == "initializing")
        assert health["state"] == "degraded" and health["healthy"] is False, health
        # The second recipe: knowledge_status, once `initializing` is false.
        status = _settled(conn, "knowledge_status", lambda s: s["initializing"])
        ready = status["connected"] is True and status["queryable"] is True
        assert not ready, f"the status recipe would proceed into writes: {status}"
        assert status["name_index_trusted"] is None, status
        # Additions: it says it is degraded, and why (the health's reason).
        assert status["degraded"] is True
        assert "group 'a'" in status["reason"] and status["reason"] == health["reason"]
        # What a launcher that proceeded would have met.
        with conn() as c:
            refused = c.error(
                "knowledge_add_episode", {"name": "n", "episode_body": "x", "group_id": "a"}
            )
        assert refused["code"] == DEGRADED_CODE, refused
        # `lcg status` still shows the open workspace's table, and exits 1 naming the fault.
        shown = run_lcg(damaged, "status")
        assert shown.returncode == 1, shown
        assert "GROUP" in shown.stdout and "degraded: " in shown.stdout, shown.stdout
    finally:
        stop_serve(proc, sock)
