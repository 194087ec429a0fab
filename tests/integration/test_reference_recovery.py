"""Conformance of the reference's recovery workflows, status rules, purge and rebuild results
(issue 12 items 4-7), written from lcg-api.md §3.1, §3.6, §3.9, §5.8, §5.10 and §5.12.

Everything is real (Kuzu, hnswlib, the socket, the streams); the embedder is the hash test
double (``LCG_EMBEDDER=hash``), named as such.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import _service_fixtures as sf
from lcg import telemetry
from lcg.events.generation import read_generation
from lcg.events.model import EntityAsserted, EntityRecord
from lcg.events.store import WalStore

telemetry.set_sink(None, enabled=False)


def stream(conn: sf.RawConnection, method: str, params: dict[str, Any]) -> tuple[list[Any], Any]:
    """Call with ``_progress_token``; return the progress frames and the final response."""
    conn.send_line(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "s",
                "method": method,
                "params": {**params, "_progress_token": "t"},
            }
        ).encode()
    )
    frames: list[Any] = []
    while True:
        message = conn.read_message()
        if isinstance(message, dict) and message.get("type") == "progress":
            frames.append(message)
            continue
        return frames, message


def counts(conn: sf.RawConnection) -> tuple[int, int, int]:
    st = conn.result("knowledge_status")
    return st["entity_count"], st["relationship_count"], st["episode_count"]


def fill(conn: sf.RawConnection, group: str = "liminis") -> None:
    for name in ("Kepler", "Tycho", "Brahe"):
        conn.result(
            "knowledge_assert_entity", {"name": name, "summary": "astronomer", "group_id": group}
        )
    conn.result(
        "knowledge_assert_relationship",
        {
            "source_name": "Kepler",
            "target_name": "Tycho",
            "predicate": "ASSISTED",
            "group_id": group,
        },
    )


def replace_stream(wal: Path, group: str, names: list[str]) -> str:
    """Replace ``group``'s stream on disk by a new one (a new generation), as a publisher
    that reset its stream would; returns the new generation."""
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
                        uuid=f"00000000-0000-4000-8000-00000000000{i}",
                        name=name,
                        labels=["Entity"],
                        created_at="2025-01-01T00:00:00Z",
                    ),
                )
                for i, name in enumerate(names)
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


# ---- item 4: clear_all keeps the streams; a rebuild brings the data back --------------------


def test_clear_all_preserving_the_wal_then_rebuild_force_clear_restores() -> None:
    with sf.temp_workspace() as ws:
        with sf.in_process_service(ws) as svc, sf.RawConnection(svc.socket_path) as c:
            fill(c)
            full = counts(c)
            assert full == (3, 1, 0)
            wal = svc.config.wal_dir
            before = sf.stream_bytes(wal)
            assert c.result("knowledge_clear_all", {"confirm": True, "preserve_wal": True}) == {
                "success": True,
                "message": "Graph cleared and reinitialized successfully",
            }
            # §3.6: the DB is emptied, the WAL kept as it was (nothing appended).
            assert sf.stream_bytes(wal) == before
            assert counts(c) == (0, 0, 0)
            st = c.result("knowledge_status")["wal"]
            # §5.8 clear_all: default → 0; §3.1: applied (0) < max → wal_ahead.
            assert st["applied_seq"] == 0
            assert st["max_seq"] == 3
            assert st["hydration_status"] == "wal_ahead"
        # A restart (catch-up on open) does not resurrect what was cleared.
        with sf.in_process_service(ws) as svc, sf.RawConnection(svc.socket_path) as c:
            assert counts(c) == (0, 0, 0)
            # Later writes apply on top of the cleared graph, and survive a restart.
            c.result("knowledge_assert_entity", {"name": "Galileo", "summary": "astronomer"})
            assert counts(c) == (1, 0, 0)
        with sf.in_process_service(ws) as svc, sf.RawConnection(svc.socket_path) as c:
            assert counts(c) == (1, 0, 0)
            frames, answer = stream(c, "knowledge_rebuild_from_wal", {"force_clear": True})
            assert "error" not in answer, answer
            assert answer["result"]["mutations_replayed"] == 5
            assert counts(c) == (4, 1, 0)
            st = c.result("knowledge_status")["wal"]
            assert (st["applied_seq"], st["max_seq"], st["hydration_status"]) == (4, 4, "hydrated")
        with sf.in_process_service(ws) as svc, sf.RawConnection(svc.socket_path) as c:
            assert counts(c) == (4, 1, 0)


def test_clear_all_then_rebuild_without_force_clear_is_accepted() -> None:
    """The cleared group holds no rows, so §3.9 step 4 does not refuse a replay from 0."""
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        fill(c)
        c.result("knowledge_clear_all", {"confirm": True, "preserve_wal": True})
        dry = c.result("knowledge_rebuild_from_wal", {"dry_run": True})
        assert dry["dry_run"] is True and dry["mutations_replayed"] == 4
        assert counts(c) == (0, 0, 0)
        _, answer = stream(c, "knowledge_rebuild_from_wal", {})
        assert "error" not in answer, answer
        assert counts(c) == (3, 1, 0)


def test_delete_by_group_then_rebuild_of_the_empty_group_is_accepted() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        fill(c, "scratch")
        purge = c.result("knowledge_delete_by_group", {"group_ids": ["scratch"], "confirm": True})
        assert purge["groups"] == [
            {"group_id": "scratch", "entities": 3, "episodes": 0, "edges": 1}
        ]
        assert purge["applied_seq_reset"] is False
        # A dry run from seq 0 on the now-empty group (step 4 looks at rows, not positions).
        dry = c.result("knowledge_rebuild_from_wal", {"group_id": "scratch", "dry_run": True})
        assert dry["success"] is True and dry["mutations_replayed"] == 5
        # A real one, without force_clear: the replay includes the purge, so it ends empty.
        _, answer = stream(c, "knowledge_rebuild_from_wal", {"group_id": "scratch"})
        assert "error" not in answer, answer
        result = answer["result"]
        assert result["mutations_replayed"] == 5
        assert result["last_committed_seq"] == 4
        assert c.result("knowledge_status")["wal_groups"]["scratch"]["entity_count"] == 0
        # Rows refuse a replay from 0 as before.
        fill(c, "scratch")
        err = c.error("knowledge_rebuild_from_wal", {"group_id": "scratch"})
        assert "force_clear" in err["message"]


# ---- item 5: status as the reference --------------------------------------------------------


def test_status_of_a_fresh_workspace_and_of_a_one_event_stream() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        wal = c.result("knowledge_status")["wal"]
        assert wal["applied_seq"] == 0  # never null (§5.8 backfill: nothing → 0)
        assert wal["max_seq"] is None
        assert wal["hydration_status"] == "not_applicable"
        c.result("knowledge_assert_entity", {"name": "Kepler"})
        wal = c.result("knowledge_status")["wal"]
        assert (wal["applied_seq"], wal["max_seq"]) == (0, 0)
        # §3.1: max null/0 → not_applicable.
        assert wal["hydration_status"] == "not_applicable"


def test_status_reports_the_loaded_workspace_ontology() -> None:
    with sf.temp_workspace() as ws:
        (ws / ".lcg").mkdir()
        (ws / ".lcg" / "ontology.yaml").write_text(
            "mode: strict\n"
            "entity_types:\n  - name: Person\n  - name: Place\n  - name: Organization\n"
            "relation_types:\n  - name: WORKS_AT\n"
        )
        env = {"LIMINIS_WORKSPACE_ROOT": str(ws)}
        with sf.in_process_service(ws, env=env) as svc, sf.RawConnection(svc.socket_path) as c:
            onto = c.result("knowledge_status")["ontology"]
            assert onto == {
                "present": True,
                "loaded": True,
                "mode": "strict",
                "entity_type_count": 3,
                "relation_type_count": 1,
                "drifted": False,
                "drift_summary": None,
            }


def test_degraded_status_reports_the_workspace_ontology_too() -> None:
    """§3.1 shape 1 (no DB) carries ``ontology`` as well."""
    import asyncio
    import fcntl
    import os
    import threading

    from lcg.config import Config
    from lcg.rpc.app import build_app
    from lcg.rpc.server import serve

    with sf.temp_workspace() as ws:
        (ws / ".lcg").mkdir()
        (ws / ".lcg" / "ontology.yaml").write_text("entity_types: [Person, Place]\n")
        # Another holder of the workspace lock makes the open fail: the service degrades.
        fd = os.open(ws / ".lcg" / "workspace.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            config = Config.from_env(ws, env={**sf.HASH_ENV, "LIMINIS_WORKSPACE_ROOT": str(ws)})
            app = build_app(config)
            bound = threading.Event()
            thread = threading.Thread(
                target=lambda: asyncio.run(
                    serve(app, config.socket_path, 2000, started=lambda _s: bound.set())
                ),
                daemon=True,
            )
            thread.start()
            assert bound.wait(30)
            with sf.RawConnection(config.socket_path) as c:
                status = c.result("knowledge_status")
                for _ in range(1000):
                    if status.get("initializing") is False:
                        break
                    status = c.result("knowledge_status")
                assert status["degraded"] is True
                onto = status["ontology"]
                assert (onto["present"], onto["loaded"], onto["entity_type_count"]) == (
                    True,
                    True,
                    2,
                )
                assert c.result("knowledge_close") == {"status": "closed"}
            thread.join(30)
        finally:
            os.close(fd)


def test_status_ontology_of_a_broken_file_and_of_no_root() -> None:
    with sf.temp_workspace() as ws:
        (ws / ".lcg").mkdir()
        (ws / ".lcg" / "ontology.yaml").write_text("entity_types: [unclosed\n")
        env = {"LIMINIS_WORKSPACE_ROOT": str(ws)}
        with sf.in_process_service(ws, env=env) as svc, sf.RawConnection(svc.socket_path) as c:
            onto = c.result("knowledge_status")["ontology"]
            # present on disk, but not loaded (a parse error stands for "no ontology", §5.11)
            assert (onto["present"], onto["loaded"], onto["mode"]) == (True, False, None)
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        onto = c.result("knowledge_status")["ontology"]
        assert (onto["present"], onto["loaded"], onto["drifted"]) == (False, False, False)


def test_status_shows_a_generation_change_on_disk_without_a_restart() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        c.result("knowledge_assert_entity", {"name": "Kepler"})  # the writer is now open
        old = c.result("knowledge_status")["wal"]["generation"]
        new = replace_stream(svc.config.wal_dir, "liminis", ["Ada", "Grace"])
        assert new != old
        wal = c.result("knowledge_status")["wal"]
        assert wal["generation"] == new
        assert wal["generation_status"] == "known"
        assert wal["max_seq"] == 1


# ---- item 6: a purge unbinds the pointers into the purged group -----------------------------


def test_delete_by_group_unbinds_foreign_pointers_and_replay_reproduces_it() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        c.result("knowledge_assert_entity", {"name": "Ada", "group_id": "people"})
        local = c.result("knowledge_assert_entity", {"name": "Engine", "group_id": "notes"})
        edge = c.result(
            "knowledge_add_cross_group_edge",
            {
                "group_id": "notes",
                "name": "BUILT_BY",
                "fact": "The engine was designed by Ada",
                "source": {"uuid": local["entity_uuid"]},
                "target": {"source_group_id": "people", "endpoint_name": "Ada"},
            },
        )
        assert edge["cross_group_pointers"]["dst"]["binding_state"] == "bound"
        assert c.result("knowledge_status")["cross_group_pointers"] == {
            "bound": 1,
            "unbound": 0,
            "ambiguous": 0,
        }
        purge = c.result("knowledge_delete_by_group", {"group_ids": ["people"], "confirm": True})
        assert purge["unbound_impacts"] == [{"group_id": "notes", "pointer_count": 1}]
        # §5.10: the forced rebind runs inside the purge: no manual rebind_pointers needed.
        pointers = {"bound": 0, "unbound": 1, "ambiguous": 0}
        assert c.result("knowledge_status")["cross_group_pointers"] == pointers
        rows = c.result(
            "knowledge_query_cypher",
            {
                "query": "MATCH (n:Entity {group_id: 'notes'})-[:RELATES_TO]->"
                "(:RelatesToNode_)-[:RELATES_TO]->(m:Entity) RETURN m.name"
            },
        )["rows"]
        assert rows == []
        # The outcome is an event of the owning group, so a replay reproduces it.
        notes = (svc.config.wal_dir / "notes").glob("*.jsonl")
        types = [json.loads(line)["type"] for f in notes for line in f.read_text().splitlines()]
        assert types[-1] == "PointersRebound"
        _, answer = stream(
            c, "knowledge_rebuild_from_wal", {"group_id": "notes", "force_clear": True}
        )
        assert "error" not in answer, answer
        assert c.result("knowledge_status")["cross_group_pointers"] == pointers


# ---- item 7: rebuild results ----------------------------------------------------------------


def test_one_line_one_file_stream_counts_once() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        c.result("knowledge_assert_entity", {"name": "Kepler"})
        frames, answer = stream(c, "knowledge_rebuild_from_wal", {"force_clear": True})
        result = answer["result"]
        assert result["wal_files_processed"] == 1
        assert result["mutations_replayed"] == 1
        assert result["indices_built"] is True
        applied = [f for f in frames if f.get("phase", "apply") == "apply"]
        assert len(applied) == 1, frames
        assert applied[0]["mutations_replayed_so_far"] == 1


def test_rebuild_status_job_result_has_indices_built() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        fill(c)
        job = c.result("knowledge_rebuild_from_wal", {"force_clear": True})
        assert job["status"] == "running"
        deadline = time.monotonic() + 60
        while True:
            view = c.result("knowledge_rebuild_status", {"job_id": job["job_id"]})
            if view["status"] != "running" or time.monotonic() > deadline:
                break
            time.sleep(0.05)  # polling a background job: there is no readiness signal to wait on
        assert view["status"] == "completed", view
        assert view["result"]["indices_built"] is True
        assert view["result"]["dry_run"] is False
        assert view["result"]["mutations_replayed"] == 4


def test_dry_run_on_a_generation_reset_answers_the_short_shape() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        c.result("knowledge_assert_entity", {"name": "Kepler"})
        old = c.result("knowledge_status")["wal"]["generation"]
        new = replace_stream(svc.config.wal_dir, "liminis", ["Ada", "Grace"])
        for answer in (
            c.request("knowledge_rebuild_from_wal", {"dry_run": True}),
            stream(c, "knowledge_rebuild_from_wal", {"dry_run": True})[1],
        ):
            assert "result" in answer, answer
            result = answer["result"]
            assert set(result) == {
                "success",
                "group_id",
                "dry_run",
                "reset_detected",
                "previous_generation",
                "generation",
                "message",
            }
            assert result["success"] is True and result["dry_run"] is True
            assert result["reset_detected"] is True
            assert (result["previous_generation"], result["generation"]) == (old, new)
            assert result["group_id"] == "liminis" and result["message"]
        assert counts(c) == (1, 0, 0)  # a dry run changes nothing
