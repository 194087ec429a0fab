"""Conformance of the health, status, Cypher and administration methods (lcg-api.md §1.3,
§3.1, §3.4 query_cypher, §3.9, §3.11), over a real socket with real Kuzu.

Also: the socket file is mode 0600, ``query_cypher`` refuses writes and escape hatches in any
case or spacing, and a service whose workspace cannot open is degraded with the reference's
exemptions.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf


class Svc:
    """The shared service."""

    def __init__(self, svc: sf.InProcessService, conn: sf.RawConnection) -> None:
        self.svc = svc
        self.conn = conn
        self.wal = svc.config.wal_dir

    def ok(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.conn.result(method, params or {})

    def err(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        before = sf.stream_bytes(self.wal)
        error = self.conn.error(method, params or {})
        assert sf.stream_bytes(self.wal) == before, f"{method} appended although it failed"
        return error


@pytest.fixture(scope="module")
def svc() -> Iterator[Svc]:
    from lcg import telemetry

    telemetry.set_sink(None, enabled=False)
    with sf.in_process_service() as s, sf.RawConnection(s.socket_path) as conn:
        conn.result("knowledge_assert_entity", {"name": "Kepler", "summary": "astronomer"})
        conn.result("knowledge_assert_entity", {"name": "Tycho", "summary": "astronomer"})
        conn.result(
            "knowledge_assert_relationship",
            {"source_name": "Kepler", "target_name": "Tycho", "predicate": "ASSISTED"},
        )
        conn.result("knowledge_process_chunk",
                    {"chunk_text": "Kepler used Tycho's observations.", "chunk_id": "k",
                     "source_file": "k.txt"})  # fmt: skip
        yield Svc(s, conn)


def test_socket_is_mode_0600(svc: Svc) -> None:
    mode = os.stat(svc.svc.socket_path).st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


# ---- query_cypher: read-only ---------------------------------------------------------------

REFUSED = [
    "CREATE (:Entity {uuid: 'x'})",
    "create (:Entity {uuid: 'x'})",
    "MATCH (e:Entity) SET e.name = 'x'",
    "match (e:Entity)\tset\te.name='x'",
    "MATCH (e:Entity)\nDELETE e",
    "MATCH (e:Entity) DETACH DELETE e",
    "MATCH (e:Entity) dElEtE e",
    "COPY Entity FROM '/tmp/x.csv'",
    "  copy   Entity TO '/tmp/out.csv'",
    "LOAD FROM '/etc/passwd' RETURN *",
    "load\n  from '/tmp/x.csv' RETURN *",
    "INSTALL httpfs",
    "install json",
    "LOAD EXTENSION json",
    "ATTACH '/tmp/other.db' AS o (dbtype kuzu)",
    "attach '/tmp/x' as y",
    "MERGE (:Entity {uuid: 'x'})",
    "MATCH (e:Entity) REMOVE e.summary",
    "DROP TABLE Entity",
    "ALTER TABLE Entity ADD x STRING",
    "CALL drop_fts_index('Entity', 'x')",
    "MATCH (e:Entity) RETURN e.name; CREATE (:Entity {uuid: 'y'})",
    "MATCH (e:Entity) RETURN e/**/;SET",
    "MATCH(e:Entity)SET(e).name='x'",
    "BEGIN TRANSACTION",
    "CHECKPOINT",
]


@pytest.mark.parametrize("query", REFUSED)
def test_query_cypher_refuses_writes_and_escape_hatches(svc: Svc, query: str) -> None:
    counts = svc.ok("knowledge_query_cypher", {"query": "MATCH (e:Entity) RETURN count(e)"})
    error = svc.err("knowledge_query_cypher", {"query": query})
    assert error["code"] == -32000
    assert "read-only" in error["message"] or "one read-only statement" in error["message"]
    assert svc.ok("knowledge_query_cypher", {"query": "MATCH (e:Entity) RETURN count(e)"}) == counts


ALLOWED = [
    ("MATCH (e:Entity) RETURN e.name ORDER BY e.name", [["Kepler"], ["Tycho"]]),
    # words inside string literals are not statements
    ("MATCH (e:Entity) WHERE e.summary <> 'CREATE SET DELETE' RETURN count(e)", [["2"]]),
    (
        "MATCH (e:Entity {name: 'Kepler'}) RETURN e.summary, e.labels",
        [["astronomer", '["Entity"]']],
    ),
    ("RETURN NULL", [[""]]),  # null → ""
    ("MATCH (e:Entity) RETURN e.name ORDER BY e.name LIMIT 1;", [["Kepler"]]),
]


@pytest.mark.parametrize(("query", "rows"), ALLOWED)
def test_query_cypher_reads(svc: Svc, query: str, rows: list[list[str]]) -> None:
    result = svc.ok("knowledge_query_cypher", {"query": query})
    assert set(result) == {"rows"}
    got = result["rows"]
    assert all(isinstance(v, str) for row in got for v in row)
    if rows[0][0].startswith("["):
        assert got[0][0] == "astronomer" and "Entity" in got[0][1]
    else:
        assert got == rows


def test_query_cypher_bad_query_is_a_database_error(svc: Svc) -> None:
    error = svc.err("knowledge_query_cypher", {"query": "MATCH (x:NoSuchTable) RETURN x"})
    assert error["code"] == -32000 and error["message"].startswith("database error: ")


# ---- marks --------------------------------------------------------------------------------


def test_wal_marks(svc: Svc) -> None:
    created = svc.ok("knowledge_wal_mark_create", {"name": "before-x_1"})
    assert set(created) == {"success", "name", "group_id", "seq", "generation"}
    status = svc.ok("knowledge_status", {})
    assert created["seq"] == status["wal"]["applied_seq"]
    assert created["generation"] == status["wal"]["generation"]
    assert created["group_id"] == "liminis"
    e = svc.err("knowledge_wal_mark_create", {"name": "before-x_1"})
    assert e["message"] == 'checkpoint "before-x_1" already exists'
    for bad in ("", "has space", "x" * 201, "dot.name"):
        e = svc.err("knowledge_wal_mark_create", {"name": bad})
        assert e["code"] in (-32000, -32602), e
    listed = svc.ok("knowledge_wal_mark_list", {"group_id": ""})  # "" → default group
    assert listed["group_id"] == "liminis"
    [mark] = [m for m in listed["checkpoints"] if m["name"] == "before-x_1"]
    assert set(mark) == {"name", "seq", "reachable", "wal_min_seq", "wal_max_seq", "generation"}
    assert mark["reachable"] is True and mark["wal_min_seq"] == 0
    # a group never written (no applied position) takes no mark, as the reference (issue 11)
    e = svc.err("knowledge_wal_mark_create", {"name": "m", "group_id": "never-written"})
    assert "has never been written" in e["message"]
    assert svc.ok("knowledge_wal_mark_delete", {"name": "before-x_1"}) == {
        "success": True, "name": "before-x_1", "group_id": "liminis"}  # fmt: skip
    e = svc.err("knowledge_wal_mark_delete", {"name": "before-x_1"})
    assert e["message"] == 'checkpoint "before-x_1" not found'
    e = svc.err("knowledge_wal_mark_delete", {})
    assert "name is required" in e["message"]
    names = [m["name"] for m in svc.ok("knowledge_wal_mark_list", {})["checkpoints"]]
    assert "before-x_1" not in names


# ---- rebuild_from_wal ---------------------------------------------------------------------


REBUILD_ERRORS = [
    ({"from_seq": True}, "from_seq must be a non-negative integer"),
    ({"from_seq": -1}, "from_seq must be a non-negative integer"),
    ({"from_seq": "3"}, "from_seq must be a non-negative integer"),
    ({"to_seq": False}, "to_seq must be a non-negative integer"),
    ({"to_seq": -2}, "to_seq must be a non-negative integer"),
    ({"from_seq": 5, "to_seq": 2}, "to_seq (2) must be >= from_seq (5)"),
    ({"group_id": "no-stream"}, "No WAL files found at"),
    ({}, "already holds data"),  # from_seq 0 onto a populated group needs force_clear
    ({"dry_run": True}, "already holds data"),
]


@pytest.mark.parametrize(
    ("params", "text"), REBUILD_ERRORS, ids=[str(p) for p, _ in REBUILD_ERRORS]
)
def test_rebuild_from_wal_errors(svc: Svc, params: dict[str, Any], text: str) -> None:
    error = svc.err("knowledge_rebuild_from_wal", params)
    assert text in error["message"], error


RESULT_KEYS = {
    "group_id", "from_seq", "to_seq", "mutations_replayed", "match_prefixed_replayed",
    "wal_files_processed", "indexes_created", "unrecognised_lines", "failed_lines",
    "unparseable_lines", "legacy_skipped_lines", "lines_skipped", "failed_samples",
    "failed_sample_categories_dropped", "fidelity_warning", "rolled_back_lines",
    "last_committed_seq", "transactions_committed", "transactions_rolled_back", "reset_detected",
    "previous_generation", "generation", "cross_group_rebind",
}  # fmt: skip


def test_rebuild_streaming_dry_and_background(svc: Svc) -> None:
    conn = svc.conn
    applied = svc.ok("knowledge_status")["wal"]["applied_seq"]
    # dry run past the applied seq: synchronous, dry_run key
    dry = svc.ok("knowledge_rebuild_from_wal", {"from_seq": 1, "dry_run": True})
    assert RESULT_KEYS <= set(dry) and dry["dry_run"] is True and dry["success"] is True
    assert dry["mutations_replayed"] == applied  # seqs 1..applied
    # streaming, force_clear: bare progress frames, then the response
    conn.send_line(
        b'{"jsonrpc":"2.0","id":"s1","method":"knowledge_rebuild_from_wal",'
        b'"params":{"force_clear":true,"_progress_token":"t"}}'
    )
    frames = []
    while True:
        msg = conn.read_message()
        if msg.get("type") == "progress":
            frames.append(msg)
            continue
        break
    assert msg["id"] == "s1" and "result" in msg, msg
    res = msg["result"]
    assert RESULT_KEYS <= set(res) and res["success"] is True and "indices_built" in res
    assert res["mutations_replayed"] == applied + 1 and res["last_committed_seq"] == applied
    assert frames, "no progress frames"
    for f in frames:
        assert {"message", "mutations_replayed_so_far", "files_processed_so_far", "files_total",
                "failed_lines_so_far", "legacy_skipped_lines_so_far"} <= set(f)  # fmt: skip
    # A force-cleared group replays by the bulk path: its last frames name the phases after
    # the events are read (additive fields, docs/compatibility.md).
    assert [f["phase"] for f in frames][-2:] == ["graph", "vectors"]
    assert {f["phase"] for f in frames[:-2]} == {"apply"}
    assert svc.ok("knowledge_get_nodes_by_group", {})["count"] == 2
    # background job: {success, job_id, status: running}; then rebuild_status completes
    job = svc.ok("knowledge_rebuild_from_wal", {"force_clear": True})
    assert set(job) == {"success", "job_id", "status"} and job["status"] == "running"
    status = svc.ok("knowledge_rebuild_status", {"job_id": job["job_id"]})
    deadline = time.monotonic() + 60
    while status["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.02)  # polling the job's status (its only completion signal)
        status = svc.ok("knowledge_rebuild_status", {"job_id": job["job_id"]})
    assert status["status"] == "completed", status
    assert set(status) == {
        "job_id", "status", "group_id", "mutations_replayed", "wal_files_processed",
        "wal_files_total", "start_time", "elapsed_seconds", "error", "result",
    }  # fmt: skip
    assert status["start_time"].endswith("Z") and status["error"] is None
    assert status["mutations_replayed"] == applied + 1
    assert status["result"]["dry_run"] is False
    assert svc.ok("knowledge_verify")["ok"] is True
    assert svc.ok("knowledge_get_nodes_by_group", {})["count"] == 2


# ---- dump / checkpoint / indices / verify / recover ----------------------------------------


def test_dump_wal(svc: Svc) -> None:
    r = svc.ok("knowledge_dump_wal", {})
    assert set(r) >= {"success", "nodes_dumped", "edges_dumped", "files_written", "target_dir"}
    assert r["success"] is True and Path(r["target_dir"]) == svc.wal.parent / "wal-compacted"
    assert r["nodes_dumped"] >= 3 and r["edges_dumped"] >= 1 and r["files_written"] >= 1
    e = svc.err("knowledge_dump_wal", {})  # the target is no longer empty
    assert "not empty" in e["message"]
    one = svc.ok(
        "knowledge_dump_wal", {"group_id": "liminis", "target_dir": str(svc.svc.workspace / "d2")}
    )
    assert Path(one["target_dir"]) == svc.svc.workspace / "d2"


def test_prepare_checkpoint_build_indices_verify(svc: Svc) -> None:
    cp = svc.ok("knowledge_prepare_checkpoint")
    assert set(cp) == {"success", "files_flushed", "files_total"} and cp["files_total"] >= 1
    assert svc.ok("knowledge_build_indices") == {"status": "ok", "indices_built": True}
    v = svc.ok("knowledge_verify")
    assert v["ok"] is True and {g["group_id"] for g in v["groups"]} >= {"liminis"}


def test_recover(svc: Svc) -> None:
    assert "strategy is required" in svc.err("knowledge_recover")["message"]
    unknown = svc.err("knowledge_recover", {"strategy": "nope"})
    # a state error (-32000), not a parameter error (issue 12 item 8)
    assert unknown == {"code": -32000, "message": "IPC error: Unknown strategy: nope"}
    soft = svc.ok("knowledge_recover", {"strategy": "restore_from_backup"})
    assert soft["success"] is False and soft["restart_required"] is False
    assert "No backup file found" in soft["error"]
    full = svc.ok("knowledge_recover_full")
    assert set(full) == {"success", "recovery_needed", "episodes_before", "mutations_replayed",
                         "episodes_after", "indexes_rebuilt"}  # fmt: skip
    assert full["recovery_needed"] is False and full["episodes_before"] == full["episodes_after"]
    before = svc.ok("knowledge_get_nodes_by_group", {})["count"]
    for strategy in ("rebuild_from_workspace_wal", "drop_lbug_wal"):
        r = svc.ok("knowledge_recover", {"strategy": strategy})
        assert r == {"strategy": strategy, "success": True, "restart_required": False}, r
        assert svc.ok("health_check")["healthy"] is True
        assert svc.ok("knowledge_get_nodes_by_group", {})["count"] == before


# ---- degraded mode (§1.3) -----------------------------------------------------------------

EXEMPT = ["health_check", "knowledge_status", "knowledge_recover_full", "knowledge_wal_mark_list",
          "knowledge_wal_mark_delete", "knowledge_recover"]  # fmt: skip
GUARDED = ["knowledge_find_entities", "knowledge_assert_entity", "knowledge_get_episodes",
           "knowledge_wal_mark_create", "knowledge_query_cypher", "knowledge_rebuild_from_wal",
           "knowledge_process_chunk"]  # fmt: skip


def test_degraded_service_answers_only_exempt_methods() -> None:
    with sf.temp_workspace() as ws:
        lock_dir = ws / ".lcg"
        lock_dir.mkdir()
        # Another holder of the workspace lock makes the open fail → degraded with a reason.
        fd = os.open(lock_dir / "workspace.lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            import asyncio
            import threading

            from lcg.config import Config
            from lcg.rpc.app import build_app
            from lcg.rpc.server import serve

            config = Config.from_env(ws, env=sf.HASH_ENV)
            app = build_app(config)
            holder: dict[str, Any] = {}
            bound = threading.Event()

            def started(server: Any) -> None:
                holder["s"] = server
                bound.set()

            t = threading.Thread(
                target=lambda: asyncio.run(serve(app, config.socket_path, 2000, started=started)),
                daemon=True,
            )
            t.start()
            assert bound.wait(30)
            with sf.RawConnection(config.socket_path) as conn:
                health = conn.result("health_check")
                for _ in range(1000):
                    if health["state"] != "initializing":
                        break
                    health = conn.result("health_check")
                assert health["ok"] is False and health["healthy"] is False
                assert health["state"] == "degraded" and "another lcg process" in health["reason"]
                status = conn.result("knowledge_status")
                assert status["degraded"] is True and status["queryable"] is False
                assert status["recovery_available"][0] == "drop_lbug_wal"
                assert status["name_index_trusted"] is None
                assert status["cross_group_pointers"] is None
                assert "wal" not in status
                assert conn.result("knowledge_wal_mark_list")["checkpoints"] == []
                for method in GUARDED:
                    err = conn.error(method, {"name": "x", "query": "q"})
                    assert err["code"] == -32001, (method, err)
                    assert err["message"] == "DB unavailable, recovery required"
                    assert "another lcg process" in err["data"]["reason"]
                full = conn.result("knowledge_recover_full")
                assert full["success"] is False and "another lcg process" in full["error"]
                conn.result("knowledge_close")
            t.join(30)
            assert not t.is_alive()
            assert not config.socket_path.exists()
        finally:
            os.close(fd)


def test_rebuild_busy_refusal_and_one_job_at_a_time() -> None:
    with (
        sf.in_process_service() as s,
        sf.RawConnection(s.socket_path) as a,
        sf.RawConnection(s.socket_path) as b,
    ):
        a.result("knowledge_assert_entity", {"name": "Vega"})
        lock = s.app.ws.group_lock("liminis")
        lock.acquire()
        try:
            # a write waiting for its group: the service counts it in flight
            a.send_line(
                b'{"jsonrpc":"2.0","id":"w","method":"knowledge_assert_entity",'
                b'"params":{"name":"Altair"}}'
            )
            deadline = time.monotonic() + 30
            while s.app.active_writes == 0 and time.monotonic() < deadline:
                time.sleep(0.005)  # the call is on its way to the worker thread
            err = b.error("knowledge_rebuild_from_wal", {"force_clear": True})
            assert "Service is busy: 1 write operation(s) in progress" in err["message"]
            # a dry run is neither refused nor held up by the waiting write (shared lock)
            dry = b.result("knowledge_rebuild_from_wal", {"from_seq": 1, "dry_run": True})
            assert dry["dry_run"] is True and dry["mutations_replayed"] == 0
        finally:
            lock.release()
        assert a.read_message()["id"] == "w"
        lock.acquire()
        try:
            # the job waits for the group; a second request answers the running job
            first = b.result("knowledge_rebuild_from_wal", {"force_clear": True})
            second = b.result("knowledge_rebuild_from_wal", {"force_clear": True})
            assert second == first and first["status"] == "running"
            assert (
                b.result("knowledge_rebuild_status", {"job_id": first["job_id"]})["status"]
                == "running"
            )
        finally:
            lock.release()
        status = b.result("knowledge_rebuild_status", {"job_id": first["job_id"]})
        deadline = time.monotonic() + 60
        while status["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.02)  # polling the job's status (its only completion signal)
            status = b.result("knowledge_rebuild_status", {"job_id": first["job_id"]})
        assert status["status"] == "completed", status
        assert b.result("knowledge_get_nodes_by_group", {})["count"] == 2


def test_health_reason_tells_how_far_the_catch_up_on_open_is() -> None:
    import asyncio
    import shutil

    from lcg.config import Config
    from lcg.ingest import assertion
    from lcg.projections.projector import ReplayProgress
    from lcg.rpc.app import build_app
    from lcg.workspace import Workspace

    with sf.temp_workspace() as root:
        config = Config.from_env(root, env=sf.HASH_ENV)
        with Workspace.open(config) as ws:
            for i in range(6):
                assertion.assert_entity(ws, name=f"thing {i}", group_id="g")
        for sub in ("db", "text", "vectors"):
            shutil.rmtree(root / ".lcg" / sub)
        app = build_app(config)
        seen: list[tuple[str, str | None]] = []
        note = app._note_catch_up

        def spy(p: ReplayProgress) -> None:
            note(p)
            seen.append(app.state())

        app._note_catch_up = spy  # type: ignore[method-assign]
        asyncio.run(app.open())
        try:
            assert seen and all(state == "initializing" for state, _ in seen)
            assert seen[-1][1] is not None
            assert seen[-1][1].startswith("catching up group 'g': 6 of 6 events")
            assert app.state() == ("healthy", None)
        finally:
            asyncio.run(app.close())
