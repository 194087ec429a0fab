"""SIGKILL ``lcg serve`` under write load, restart it: every acknowledged write is there.

Several client threads assert entities and process chunks (two groups) against a real
``lcg serve`` subprocess and record each acknowledged result. The process is killed with
SIGKILL while they write, restarted, and polled with ``health_check`` until healthy; then
every acknowledged entity and episode is read back by uuid, and ``lcg wal verify`` and
``lcg verify`` (run as the CLI) pass.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import _service_fixtures as sf
from lcg.rpc.client import Client

THREADS = 4
KILL_AFTER_ACKS = 14
ROUNDS = 2


def _writer(
    sock: Path,
    tid: int,
    acked: list[tuple[str, str, str]],
    guard: threading.Lock,
    enough: threading.Event,
    stop: threading.Event,
) -> None:
    group = "liminis" if tid % 2 == 0 else "crash-g"
    i = 0
    try:
        with Client(sock, timeout=60) as c:
            while not stop.is_set():
                i += 1
                if i % 2:
                    r = c.assert_entity(name=f"t{tid}-entity-{i}-{id(stop)}", group_id=group)
                    item = ("entity", group, str(r["entity_uuid"]))
                else:
                    r = c.process_chunk(
                        chunk_text=f"thread {tid} chunk {i} round {id(stop)}",
                        chunk_id=f"t{tid}-c{i}-{id(stop)}",
                        source_file=f"t{tid}.txt",
                        group_id=group,
                    )
                    item = ("episode", group, str(r["episode_uuid"]))
                with guard:
                    acked.append(item)
                    if len(acked) >= KILL_AFTER_ACKS:
                        enough.set()
    except Exception:  # noqa: BLE001 - the kill breaks the connection mid-call: expected
        return


def test_sigkill_under_write_load_loses_no_acknowledged_write() -> None:
    with sf.temp_workspace("lcg-crash-") as ws:
        sock = ws / ".lcg" / "service.sock"
        acked: list[tuple[str, str, str]] = []
        for _ in range(ROUNDS):
            proc = sf.spawn_serve(ws)
            try:
                sf.wait_healthy(sock, proc)
                round_acked: list[tuple[str, str, str]] = []
                guard = threading.Lock()
                enough = threading.Event()
                stop = threading.Event()
                threads = [
                    threading.Thread(
                        target=_writer, args=(sock, t, round_acked, guard, enough, stop)
                    )
                    for t in range(THREADS)
                ]
                for t in threads:
                    t.start()
                assert enough.wait(180), "the writers made no progress"
                proc.send_signal(signal.SIGKILL)
                assert proc.wait(30) == -signal.SIGKILL
                stop.set()
                for t in threads:
                    t.join(60)
                    assert not t.is_alive()
                with guard:
                    acked.extend(round_acked)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
        assert len(acked) >= ROUNDS * KILL_AFTER_ACKS

        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            with Client(sock, timeout=120) as c:
                nodes = c.call("knowledge_get_nodes_by_group", {})["nodes"]
                have_entities = {(n["group_id"], n["uuid"]) for n in nodes}
                have_episodes: set[tuple[str, str]] = set()
                for group in ("liminis", "crash-g"):
                    eps = c.call("knowledge_get_episodes", {"group_id": group, "last_n": 100000})
                    have_episodes |= {(group, e["uuid"]) for e in eps["episodes"]}
                status = c.call("knowledge_status", {})
            for kind, group, uuid in acked:
                pool = have_entities if kind == "entity" else have_episodes
                assert (group, uuid) in pool, f"acknowledged {kind} {uuid} in {group} was lost"
            for g in status["wal_groups"].values():
                assert g["hydration_status"] == "hydrated", status["wal_groups"]
        finally:
            assert sf.stop_serve(proc, sock) == 0
        wal = sf.run_lcg(ws, "wal", "verify")
        assert wal.returncode == 0, wal.stdout + wal.stderr
        verify = sf.run_lcg(ws, "verify")
        assert verify.returncode == 0, verify.stdout + verify.stderr
