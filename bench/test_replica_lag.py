"""Replica lag: a publisher writes continuously; every second it publishes (commit + push)
and the replica pulls; a real follower (watchfiles) applies what lands.

Run by ``make bench``; ``LCG_BENCH_REPLICA_SECONDS`` shortens the default 60 s. Reported:

* lag in events - the publisher's head seq minus the replica's applied seq, sampled every
  100 ms over the run (includes the up-to-one-second publish interval, by design);
* lag in seconds - per event, the time from its commit on the publisher to its application
  on the replica;
* apply after pull - from the end of a ``git pull`` to the follower having applied it;
* the baseline: one publish + push + pull cycle (what git costs before the follower starts);
  lag in seconds is also given as a ratio to the publish interval plus that cycle.

The embedder is the hash test double (``HashEmbedder``); git, Kuzu, hnswlib are real.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from pathlib import Path

from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest.assertion import assert_entity
from lcg.ingest.episodes import process_chunk
from lcg.replication import Follower, ReplicaStatus, publish_group, replica_config
from lcg.workspace import Workspace

G = "bench"
HASH = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off", "LCG_WAL_FSYNC": "batch"}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "lcg bench",
    "GIT_AUTHOR_EMAIL": "bench@lcg.invalid",
    "GIT_COMMITTER_NAME": "lcg bench",
    "GIT_COMMITTER_EMAIL": "bench@lcg.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def test_replica_lag(tmp_path: Path) -> None:
    seconds = float(os.environ.get("LCG_BENCH_REPLICA_SECONDS", "60"))
    origin, pubrepo, clone = tmp_path / "o.git", tmp_path / "pubrepo", tmp_path / "r" / "clone"
    clone.parent.mkdir()
    _git("init", "-q", "--bare", "-b", "main", str(origin))
    _git("init", "-q", "-b", "main", str(pubrepo))
    _git("-C", str(pubrepo), "commit", "-q", "--allow-empty", "-m", "publication")
    _git("-C", str(pubrepo), "remote", "add", "origin", str(origin))
    _git("-C", str(pubrepo), "push", "-q", "origin", "main")
    _git("clone", "-q", str(origin), str(clone))

    pub = Workspace.open(Config.from_env(tmp_path / "pubws", env=HASH), HashEmbedder())
    rws = Workspace(replica_config(tmp_path / "rws", clone, env=HASH), HashEmbedder())
    follower = Follower(rws, [G])
    commit_at: dict[int, float] = {}
    applied_at: dict[int, float] = {}
    pulls: list[tuple[float, int]] = []  # (pull finished, head seq published in it)
    last_applied = [-1]
    guard = threading.Lock()

    def on_sync(statuses: dict[str, ReplicaStatus]) -> None:
        status = statuses.get(G)
        now = time.monotonic()
        if status is None or status.applied_seq is None:
            return
        with guard:
            for seq in range(last_applied[0] + 1, status.applied_seq + 1):
                applied_at[seq] = now
            last_applied[0] = max(last_applied[0], status.applied_seq)

    follower.on_sync = on_sync
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            assert_entity(pub, name=f"Entity {i}", group_id=G, summary=f"entity {i} of the bench")
            if i % 5 == 0:
                process_chunk(
                    pub, chunk_text=f"note {i} about entity {i}", chunk_id=f"c{i}",
                    source_file="bench.md", group_id=G,
                )  # fmt: skip
            head = pub.projector.applied_seq(G)
            now = time.monotonic()
            if head is not None:
                with guard:
                    for seq in range(len(commit_at), head + 1):
                        commit_at[seq] = now
            i += 1

    event_lag: list[int] = []
    cycles: list[float] = []
    writer = threading.Thread(target=write, name="bench-writer", daemon=True)
    follower.start(step_ms=50, rescan_ms=1000)
    started = time.monotonic()
    writer.start()
    try:
        next_publish = started + 1.0
        while time.monotonic() - started < seconds:
            now = time.monotonic()
            with guard:
                head = len(commit_at) - 1
                event_lag.append(max(0, head - last_applied[0]))
            if now >= next_publish:
                next_publish += 1.0
                t0 = time.monotonic()
                result = publish_group(pub.config.wal_dir, G, pubrepo)
                _git("-C", str(pubrepo), "push", "-q", "origin", "main")
                _git("-C", str(clone), "pull", "-q", "--ff-only")
                t1 = time.monotonic()
                cycles.append(t1 - t0)
                if result.max_seq is not None:
                    pulls.append((t1, result.max_seq))
            time.sleep(0.1)
    finally:
        stop.set()
        writer.join(30)
    # A last publish and pull, then wait for the follower to drain it.
    final = publish_group(pub.config.wal_dir, G, pubrepo)
    _git("-C", str(pubrepo), "push", "-q", "origin", "main")
    _git("-C", str(clone), "pull", "-q", "--ff-only")
    deadline = time.monotonic() + 60
    while last_applied[0] < (final.max_seq or -1) and time.monotonic() < deadline:
        time.sleep(0.05)
    follower.stop()
    status = follower.replica_status(G)
    converged = rws.digests(G) == pub.digests(G)
    pub.close()
    rws.close()

    seconds_lag = [applied_at[s] - commit_at[s] for s in applied_at if s in commit_at]
    after_pull: list[float] = []
    for done, head in pulls:
        if head in applied_at:
            after_pull.append(max(0.0, applied_at[head] - done))
    floor = 1.0 + statistics.median(cycles) if cycles else float("nan")
    rows = [
        ("lag behind publisher (events)", statistics.median(event_lag), _pct(event_lag, 0.99)),
        ("lag behind publisher (s)", statistics.median(seconds_lag), _pct(seconds_lag, 0.99)),
        ("apply after pull (s)", statistics.median(after_pull), _pct(after_pull, 0.99)),
        ("publish+push+pull cycle (s)", statistics.median(cycles), _pct(cycles, 0.99)),
        ("lag (s) / (1 s + cycle) ratio", statistics.median(seconds_lag) / floor,
         _pct(seconds_lag, 0.99) / floor),
    ]  # fmt: skip
    print(
        f"\nreplica lag: {seconds:g} s of continuous writes, publish+pull every 1 s; "
        f"{len(commit_at)} events, {len(cycles)} publishes, final state {status.state}, "
        f"digests equal: {converged}"
    )
    print(f"{'metric':<34}{'median':>12}{'p99':>12}")
    for name, med, p99 in rows:
        print(f"{name:<34}{med:>12.3f}{p99:>12.3f}")
    assert status.state == "following", status.reason
    assert converged
    assert len(applied_at) == len(commit_at)
