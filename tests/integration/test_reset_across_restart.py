"""A reset is a reset across a restart (issue 19 item 7), written from lcg-api.md §3.9 and §5.12.

The operator's habit: publish a new generation of a group's stream while the service is
stopped, start ``lcg serve``, call ``knowledge_rebuild_from_wal {}``. The reference's rebuild
compares the recorded generation with the one on disk (§3.9 step 3): they differ, so it
reports ``reset_detected`` with ``previous_generation``, replays the group in full and then
rebinds the pointers of other groups into it (``cross_group_rebind``: the rebind counts of
§3.10). Everything is real (``lcg serve`` subprocesses, Kuzu, the socket, the streams); the
embedder is the hash test double.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.events.generation import read_generation
from lcg.events.model import EntityAsserted, EntityRecord
from lcg.events.store import WalStore
from lcg.rpc.client import Client
from lcg.rpc.errors import RemoteError

GROUP = "liminis"  # the default group: ``knowledge_rebuild_from_wal {}`` rebuilds it
TEAM = "team"
NEW_ADA = "00000000-0000-4000-8000-00000000a0a0"
REBIND_COUNTS = {
    "checked",
    "bound",
    "unbound",
    "ambiguous",
    "invalidated_self_loop",
    "invalidated_duplicate",
    "staleness_skipped",
}


def publish_new_generation(wal: Path, group: str) -> str:
    """Replace ``group``'s stream by a publisher's new generation (Ada with a new uuid, Grace)."""
    scratch = sf.short_tmp("lcg-pub-")
    try:
        store = WalStore(scratch)
        store.append(
            group,
            [
                EntityAsserted(
                    group_id=group,
                    created=True,
                    entity=EntityRecord(
                        uuid=uuid, name=name, labels=["Entity"], created_at="2025-01-01T00:00:00Z"
                    ),
                )
                for uuid, name in (
                    (NEW_ADA, "Ada"),
                    ("00000000-0000-4000-8000-00000000b0b0", "Grace"),
                )
            ],
        )
        store.close()
        shutil.rmtree(wal / group)
        shutil.copytree(scratch / group, wal / group)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    generation = read_generation(wal / group)
    assert generation is not None
    return generation


def job_result(c: Client, started: dict[str, Any]) -> dict[str, Any]:
    """Wait for a background rebuild job; its result."""
    assert started["status"] == "running", started
    deadline = time.monotonic() + 120
    while True:
        view = c.call("knowledge_rebuild_status", {"job_id": started["job_id"]})
        if view["status"] != "running":
            break
        assert time.monotonic() < deadline, view
        time.sleep(0.05)  # a background job has no readiness signal to wait on
    assert view["status"] == "completed", view
    result: dict[str, Any] = view["result"]
    return result


def serving(ws: Path) -> Any:
    """Start ``lcg serve`` on ``ws`` and wait until healthy; the process."""
    proc = sf.spawn_serve(ws)
    sf.wait_healthy(ws / ".lcg" / "service.sock", proc)
    return proc


def test_a_generation_published_while_stopped_is_reported_by_the_next_rebuild() -> None:
    with sf.temp_workspace() as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = serving(ws)
        try:
            with Client(sock, timeout=60) as c:
                old_ada = c.call("knowledge_assert_entity", {"name": "Ada"})["entity_uuid"]
                bob = c.call("knowledge_assert_entity", {"name": "Bob", "group_id": TEAM})[
                    "entity_uuid"
                ]
                edge = c.call(
                    "knowledge_add_cross_group_edge",
                    {
                        "group_id": TEAM,
                        "name": "KNOWS",
                        "fact": "Bob knows Ada",
                        "source": {"uuid": bob},
                        "target": {"source_group_id": GROUP, "endpoint_name": "Ada"},
                    },
                )
                assert edge["target_node_uuid"] == old_ada
                old_gen = c.call("knowledge_status")["wal_groups"][GROUP]["generation"]
        finally:
            sf.stop_serve(proc, sock)

        new_gen = publish_new_generation(ws / ".lcg" / "wal", GROUP)
        assert new_gen != old_gen

        proc = serving(ws)
        try:
            with Client(sock, timeout=60) as c:
                dry = c.call("knowledge_rebuild_from_wal", {"dry_run": True})
                assert {k: v for k, v in dry.items() if k != "message"} == {
                    "success": True,
                    "group_id": GROUP,
                    "dry_run": True,
                    "reset_detected": True,
                    "previous_generation": old_gen,
                    "generation": new_gen,
                }
                assert isinstance(dry["message"], str) and dry["message"]
        finally:
            sf.stop_serve(proc, sock)

        # A dry run reports, it does not consume: the reset is still there after another restart.
        proc = serving(ws)
        try:
            with Client(sock, timeout=60) as c:
                result = job_result(c, c.call("knowledge_rebuild_from_wal", {}))
                assert result["reset_detected"] is True
                assert result["previous_generation"] == old_gen
                assert result["generation"] == new_gen
                assert result["dry_run"] is False and result["indices_built"] is True
                assert result["from_seq"] == 0 and result["to_seq"] is None
                assert result["mutations_replayed"] == 2
                rebind = result["cross_group_rebind"]
                assert isinstance(rebind, dict) and set(rebind) == REBIND_COUNTS, rebind
                assert rebind["checked"] == 1 and rebind["bound"] == 1, rebind
                assert rebind["unbound"] == 0 and rebind["staleness_skipped"] == 0, rebind

                # Team's pointer now names the new generation's Ada (both hops exist again).
                edges = c.call("knowledge_get_edges_by_group", {"group_ids": [TEAM]})["edges"]
                (shown,) = [e for e in edges if e["uuid"] == edge["uuid"]]
                assert shown["target_node_uuid"] == NEW_ADA
                names = {n["name"] for n in c.call("knowledge_list_entities", {})["nodes"]}
                assert {"Ada", "Grace"} <= names

                # Reported once: the next rebuild finds the recorded generation on disk (§3.9
                # step 4 applies: the group holds data and no force_clear).
                with pytest.raises(RemoteError) as refused:
                    c.call("knowledge_rebuild_from_wal", {})
                assert "force_clear" in str(refused.value)
        finally:
            sf.stop_serve(proc, sock)


def test_a_streamed_rebuild_after_the_restart_reports_the_reset() -> None:
    with sf.temp_workspace() as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = serving(ws)
        try:
            with Client(sock, timeout=60) as c:
                c.call("knowledge_assert_entity", {"name": "Kepler"})
                old_gen = c.call("knowledge_status")["wal_groups"][GROUP]["generation"]
        finally:
            sf.stop_serve(proc, sock)
        new_gen = publish_new_generation(ws / ".lcg" / "wal", GROUP)

        proc = serving(ws)
        try:
            with Client(sock, timeout=60) as c:
                frames: list[Any] = []
                result = c.call("knowledge_rebuild_from_wal", {}, on_progress=frames.append)
                assert result["success"] is True and result["reset_detected"] is True
                assert result["previous_generation"] == old_gen
                assert result["generation"] == new_gen
                # No pointer of another group names this one: nothing to rebind, but counted.
                assert result["cross_group_rebind"] == dict.fromkeys(REBIND_COUNTS, 0)
                names = {n["name"] for n in c.call("knowledge_list_entities", {})["nodes"]}
                assert names == {"Ada", "Grace"}
        finally:
            sf.stop_serve(proc, sock)
