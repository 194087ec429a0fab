"""A full disk under write load: success iff durable, reads go on, the same process recovers.

A real ``lcg serve`` subprocess keeps its workspace on a tmpfs (issue 11 item 6 reported a
3 MB one). Four client threads assert entities and process chunks (two groups) while the test
fills the disk with a filler file (the disk is full only while it is there: ``_tmpfs``). Then:

* every write answered success is in the stream, and no write answered with an error is;
* reads (entity search, passage search, status) answer while the disk is full, and
  ``health_check`` says ``degraded`` with ``disk full writing <path>``;
* once the filler is deleted, ``health_check`` says ``healthy`` again (before any write) and
  writes succeed in the same process;
* ``SIGTERM`` stops the service with exit code 0 (no abort in Kuzu's close), and after a
  restart ``lcg verify`` finds the projections equal to a replay of the streams.

Mounting a tmpfs needs root (CI runs the suite as root); anywhere else the test is skipped
with the reason. The embedder is the hash test double; everything else is real.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from pathlib import Path

import _service_fixtures as sf
from _tmpfs import fill, small_disk
from lcg.events.model import EpisodeAdded
from lcg.events.writer import StreamWriter
from lcg.rpc.client import Client

WRITERS = 4
GROUPS = ("liminis", "df-g2")
#: Events appended while the service is down: more than the graph's room reservation holds.
LATE = 300


class Writers:
    """Client threads writing unique keys; every outcome recorded as (key, error or None)."""

    def __init__(self, sock: Path, nonce: str) -> None:
        self.sock = sock
        self.nonce = nonce
        self.outcomes: list[tuple[str, str | None]] = []
        self.guard = threading.Lock()
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self, n: int, tag: str, limit: int | None = None) -> None:
        """Start ``n`` writers; each stops after ``limit`` writes or when told."""
        self.stop.clear()
        self.threads = [
            threading.Thread(target=self._run, args=(f"{tag}{t}", limit)) for t in range(n)
        ]
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        """Tell the writers to stop and wait for them."""
        self.stop.set()
        for thread in self.threads:
            thread.join(120)
        assert not any(t.is_alive() for t in self.threads), "a writer hung"

    def _run(self, who: str, limit: int | None) -> None:
        with Client(self.sock, timeout=120) as c:
            i = 0
            while not self.stop.is_set() and (limit is None or i < limit):
                i += 1
                # Keys are unique and quoted whole in the stream: "…-n1-<nonce>" is never
                # part of "…-n11-<nonce>".
                key = f"{who}-n{i}-{self.nonce}"
                error: str | None = None
                try:
                    if i % 2:
                        c.assert_entity(name=key, group_id=GROUPS[0], summary=f"about {key}")
                    else:
                        c.process_chunk(
                            chunk_text=f"passage {key} " + "words to search " * 20,
                            chunk_id=key,
                            source_file=f"{who}.txt",
                            group_id=GROUPS[1],
                        )
                except Exception as exc:  # noqa: BLE001 - every refusal is recorded and checked
                    error = str(exc)
                with self.guard:
                    self.outcomes.append((key, error))

    def count(self, *, failed: bool) -> int:
        """How many writes failed (or succeeded) so far."""
        with self.guard:
            return sum(1 for _, e in self.outcomes if (e is not None) == failed)


def wait_for(what: str, check: object, timeout: float = 60.0) -> None:
    """Poll ``check()`` until it is true."""
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def stream_text(ws: Path) -> str:
    """Every line of every group stream, as one text."""
    return json.dumps(sf.stream_events(ws / ".lcg" / "wal"))


def test_a_full_disk_refuses_writes_truthfully_and_the_same_process_recovers() -> None:
    with small_disk() as (mnt, logs):
        ws = mnt / "ws"
        ws.mkdir()
        sock = ws / ".lcg" / "service.sock"
        log = logs / "serve.log"
        proc = sf.spawn_serve(ws, log_name=str(log))
        try:
            sf.wait_healthy(sock, proc)
            writers = Writers(sock, uuid.uuid4().hex[:8])

            # Write with room, then fill the disk while four writers are busy.
            writers.start(WRITERS, "w")
            wait_for("writes with room", lambda: writers.count(failed=False) >= 12)
            filler = mnt / "filler"
            fill(filler)
            wait_for("refused writes", lambda: writers.count(failed=True) >= 8)
            writers.join()
            refusal = next(e for _, e in writers.outcomes if e is not None)
            assert "disk full writing" in refusal and "nothing was written" in refusal

            # While full: health says why, and reads answer.
            with Client(sock, timeout=60) as c:
                health = c.health_check()
                assert health["state"] == "degraded", health
                assert "disk full writing" in health["reason"], health
                acked = [k for k, e in writers.outcomes if e is None]
                entity = next(k for k in acked if int(k.split("-n")[1].split("-")[0]) % 2)
                assert any(n["name"] == entity for n in c.find_entities(entity)["nodes"])
                assert c.search_passages("words to search")["passages"]
                assert c.status()

            # Space is back: the same process says it is healthy (no write needed: health
            # retries the failed directories and catches the lagging groups up), then writes.
            filler.unlink()
            with Client(sock, timeout=60) as c:
                wait_for("healthy", lambda: c.health_check()["state"] == "healthy")
            writers.start(WRITERS, "r", limit=6)
            for thread in writers.threads:
                thread.join(120)
            after = writers.outcomes[-WRITERS * 6 :]
            assert [e for _, e in after if e is not None] == []
            with Client(sock, timeout=60) as c:
                wait_for("healthy", lambda: c.health_check()["state"] == "healthy")

            proc.send_signal(signal.SIGTERM)
            assert proc.wait(120) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        text = log.read_text(errors="replace")
        for abort in ("double free", "corrupted", "Aborted", "Fatal Python error"):
            assert abort not in text, text[-3000:]

        # After a restart: exactly the acknowledged writes are in the streams.
        stream = stream_text(ws)
        acked = [k for k, e in writers.outcomes if e is None]
        refused = [k for k, e in writers.outcomes if e is not None]
        assert [k for k in acked if f'"{k}"' not in stream] == []
        assert [k for k in refused if f'"{k}"' in stream] == []
        # The restart is about what survived, with room: the filler is gone, and the tmpfs
        # holds the workspace many times over whatever Kuzu's shadow and WAL and the Cypher
        # read model took under load.
        proc = sf.spawn_serve(ws, log_name=str(log))
        try:
            sf.wait_healthy(sock, proc)
            with Client(sock, timeout=60) as c:
                for key in acked[-4:]:
                    assert (
                        c.find_entities(key)["nodes"]
                        or c.search_passages(key, min_score=0.0)["passages"]  # ADR 0173
                    )
        finally:
            assert sf.stop_serve(proc, sock) == 0
        verify = sf.run_lcg(ws, "verify")
        assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_service_opened_on_a_full_disk_serves_and_catches_up_when_space_returns() -> None:
    # The workspace holds the Cypher worker's read model too (a second copy of the graph, ADR
    # 0152): the tmpfs has room for it many times over once the filler is gone.
    with small_disk() as (mnt, logs):
        ws = mnt / "ws"
        ws.mkdir()
        sock = ws / ".lcg" / "service.sock"
        log = logs / "serve.log"
        proc = sf.spawn_serve(ws, log_name=str(log))
        names = [f"open-full-{i}" for i in range(5)]
        try:
            sf.wait_healthy(sock, proc)
            with Client(sock, timeout=60) as c:
                for name in names:
                    c.assert_entity(name=name)
        finally:
            assert sf.stop_serve(proc, sock) == 0
        # While the service is down the stream grows (another writer, a pulled publication),
        # then the disk fills: the next open cannot apply those events (they need more than
        # the room the graph reserved before), and must still serve.
        with StreamWriter(ws / ".lcg" / "wal", "liminis") as writer:
            writer.append(
                [
                    EpisodeAdded(
                        group_id="liminis",
                        uuid=f"late-{i}",
                        name=f"late-{i}",
                        source_description="late.txt",
                        content=f"a late passage about quasars {i} " + "filling words " * 150,
                        created_at="2024-05-01T12:00:00.000000Z",
                        valid_at="2024-05-01T12:00:00.000000Z",
                    )
                    for i in range(LATE)
                ]
            )
        filler = mnt / "filler"
        fill(filler)
        proc = sf.spawn_serve(ws, log_name=str(log))
        try:
            deadline = time.monotonic() + 90
            while not sock.exists():
                assert proc.poll() is None and time.monotonic() < deadline, "never bound"
                time.sleep(0.05)
            with Client(sock, timeout=60) as c:
                wait_for("open", lambda: c.health_check()["state"] != "initializing", 90)
                health = c.health_check()
                assert health["state"] == "degraded", health
                assert "lag the stream" in health["reason"] and "disk full" in health["reason"]
                # Served, not refused: what the projections held before answers.
                assert {n["name"] for n in c.find_entities("open-full")["nodes"]} >= set(names)
                assert c.search_passages("quasars", min_score=0.0)["passages"] == []
                filler.unlink()
                wait_for("healthy", lambda: c.health_check()["state"] == "healthy")
                # One word of a long passage: under the 0.5 cosine floor (ADR 0173).
                assert c.search_passages("quasars", min_score=0.0)["passages"]
                episodes = c.call("knowledge_get_episodes", {"group_id": "liminis", "last_n": 1000})
                late = {e["uuid"] for e in episodes["episodes"] if e["uuid"].startswith("late-")}
                assert late == {f"late-{i}" for i in range(LATE)}
        finally:
            assert sf.stop_serve(proc, sock) == 0
