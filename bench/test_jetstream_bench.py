"""Replication through NATS JetStream (issue 21 item 5), against a real ``nats-server -js``.

Run by ``make bench``; nothing about time is asserted (only that every follower got every
event, digests equal where projections were built). Two benchmarks:

1. **Fan-out at a steady write rate.** A writer appends events to a publisher workspace's
   stream one at a time, fsync per append (``WalStore(fsync="always")``), at
   ``LCG_BENCH_JS_RATE`` events/s (default 100) for ``LCG_BENCH_JS_SECONDS`` (default 15);
   one real ``lcg publish --to nats://… --all --live`` process tails the stream and publishes;
   1, 4 and 16 followers, each a process of its own (``bench/jetstream_follower.py``). With 1
   and 4 the followers are full (what ``lcg follow nats://`` runs in process: puller, mirror,
   follower applying to Kuzu / BM25 / hnswlib, hash embedder); 16 full followers do not fit on
   this 2-core machine, so the 16 are mirror-only (every line fetched, checked and fsynced into
   a replica's mirror, not applied) - and 1 and 4 mirror-only rows are printed to compare.
   *Lag* is per event and per follower: the wall-clock time from the writer's append (after
   its fsync) returning to the follower holding the event (full: the end of the follower pass
   that applied it; mirror: the fsync of the mirror batch holding it). *Events/s* is per
   follower: the events over the time from the first append to that follower's last event.
2. **Catch-up of a fresh follower** on a synthetic stream (``bench/synth_stream.py``), the
   JetStream follower against the git follower on the same stream, in one run: transport only
   on ``LCG_BENCH_JS_CATCHUP_EVENTS`` (default 100,000) events (JetStream: the puller mirrors
   the whole stream; git: ``git clone`` of the publication), and transport plus apply (a fresh
   ``Follower`` on a new workspace until it applied the last seq) on the first
   ``LCG_BENCH_JS_APPLY_EVENTS`` (default 20,000) - applying, not the transport, is what a
   fresh follower spends its time on, and 100k applied twice takes too long for ``make bench``
   on this machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from synth_stream import events as synth_events
from synth_stream import write_stream

from _nats_fixtures import NatsServer, nats_server
from _service_fixtures import LCG, serve_env, short_tmp
from lcg.config import Config
from lcg.events.model import Event
from lcg.events.store import WalStore
from lcg.extract.embedders import HashEmbedder
from lcg.replication import Follower, ReplicaStatus, publish_group, replica_config
from lcg.replication.jetstream import JetStreamPublisher
from lcg.replication.jetstream_follow import JetStreamPuller, MirrorSource, mirror_root
from lcg.replication.staging import stage_group
from lcg.workspace import Workspace

pytestmark = pytest.mark.bench

HASH = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"}
HERE = Path(__file__).parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "lcg bench",
    "GIT_AUTHOR_EMAIL": "bench@lcg.invalid",
    "GIT_COMMITTER_NAME": "lcg bench",
    "GIT_COMMITTER_EMAIL": "bench@lcg.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True, env={**os.environ, **GIT_ENV})


# ---- 1. fan-out ------------------------------------------------------------------------------


def _spawn_followers(
    url: str, base: Path, group: str, count: int, mode: str, n: int
) -> list[tuple[subprocess.Popen[str], Path]]:
    procs = []
    for i in range(n):
        work = base / f"{group}-{mode}-{i}"
        work.mkdir(parents=True)
        out = work / "times.json"
        argv = [sys.executable, str(HERE / "jetstream_follower.py"), url, str(work), group]
        with (work / "stderr.log").open("w") as err:
            proc = subprocess.Popen(
                [*argv, str(count), mode, str(out)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=serve_env(),
            )
        procs.append((proc, out))
    for proc, _ in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", f"a follower did not start: {line!r}"
    return procs


def _write_steady(root: Path, group: str, todo: list[Event], rate: float) -> dict[int, float]:
    """Append ``todo`` one event at a time (fsync each) at ``rate``/s; seq -> durable time."""
    store = WalStore(root, fsync="always")
    durable: dict[int, float] = {}
    start = time.monotonic()
    try:
        for i, event in enumerate(todo):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            (stamped,) = store.append(group, [event])
            durable[stamped.seq] = time.time()
    finally:
        store.close()
    return durable


def _phase(
    server: NatsServer, pub_root: Path, base: Path, n: int, mode: str, rate: float, secs: float
) -> tuple[int, str, float, float, float, float, float]:
    group = f"fan{n}{mode}"
    todo = list(synth_events(group, int(rate * secs), seed=11))
    count = len(todo)
    procs = _spawn_followers(server.url, base, group, count, mode, n)
    durable = _write_steady(pub_root, group, todo, rate)
    first = min(durable.values())
    written = count / (max(durable.values()) - first)
    lags: list[float] = []
    rates: list[float] = []
    for proc, out in procs:
        proc.wait(timeout=120 + secs)
        assert proc.stdout is not None
        proc.stdout.close()
        assert proc.returncode == 0, (out.parent / "stderr.log").read_text()[-3000:]
        held = {int(k): v for k, v in json.loads(out.read_text()).items()}
        assert set(held) >= set(durable), f"a follower missed seqs: {set(durable) - set(held)}"
        lags += [held[s] - durable[s] for s in durable]
        rates.append(count / (max(held[s] for s in durable) - first))
    return (n, mode, written, min(rates), _pct(lags, 0.5), _pct(lags, 0.99), max(lags))


def test_fanout_lag_at_a_steady_rate(tmp_path: Path) -> None:
    rate = float(os.environ.get("LCG_BENCH_JS_RATE", "100"))
    secs = float(os.environ.get("LCG_BENCH_JS_SECONDS", "15"))
    pub_ws = short_tmp("lcg-js-bench-")
    pub_root = Config.from_env(pub_ws, env=HASH).wal_dir
    pub_root.mkdir(parents=True, exist_ok=True)
    rows = []
    with nats_server(tmp_path) as server:
        log = (tmp_path / "live.log").open("w")
        live = subprocess.Popen(
            [str(LCG), "-C", str(pub_ws), "publish", "--to", server.url, "--all", "--live"],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            env=serve_env(),
        )
        try:
            for n, mode in ((1, "full"), (4, "full"), (1, "mirror"), (4, "mirror"), (16, "mirror")):
                rows.append(_phase(server, pub_root, tmp_path / "f", n, mode, rate, secs))
                print(f"  done: {n} {mode}", flush=True)
        finally:
            live.terminate()
            live.wait(30)
            log.close()
    print(
        f"\nJetStream fan-out: 1 publisher (`lcg publish --live`, one process), writes of one "
        f"event each, fsync per append, {rate:g} events/s for {secs:g} s per row; each follower "
        "a process of its own (full = puller + follower applying to Kuzu/BM25/hnswlib, hash "
        "embedder; mirror = puller only, lines checked and fsynced, not applied); lag = append "
        "returned (fsynced) to held by the follower, every event of every follower"
    )
    print(
        f"{'followers':>9} {'kind':>7} {'written/s':>9} {'slowest follower ev/s':>22} "
        f"{'lag p50 ms':>11} {'lag p99 ms':>11} {'lag max ms':>11}"
    )
    for n, mode, wr, slow, p50, p99, top in rows:
        print(
            f"{n:>9} {mode:>7} {wr:>9.1f} {slow:>22.1f} {p50 * 1e3:>11.1f} {p99 * 1e3:>11.1f} "
            f"{top * 1e3:>11.1f}"
        )


# ---- 2. catch-up of a fresh follower --------------------------------------------------------


def _apply_until(follower: Follower, group: str, last: int) -> float:
    """Follow (as ``lcg follow`` does: step 50 ms) until ``last`` is applied; the seconds."""
    reached: list[float] = []

    def on_sync(statuses: dict[str, ReplicaStatus]) -> None:
        status = statuses.get(group)
        if not reached and status is not None and (status.applied_seq or -1) >= last:
            reached.append(time.perf_counter())

    follower.on_sync = on_sync
    t0 = time.perf_counter()
    follower.start(step_ms=50, rescan_ms=2000)
    deadline = t0 + 1800
    while not reached and time.perf_counter() < deadline:
        time.sleep(0.02)
    follower.stop()
    assert reached, f"the follower never applied seq {last}: {follower.replica_status(group)}"
    return reached[0] - t0


def _mirror_until(puller: JetStreamPuller, group: str, count: int) -> float:
    t0 = time.perf_counter()
    puller.start()
    while (g := puller.groups.get(group)) is None or g.next_seq < count:
        time.sleep(0.01)
        assert time.perf_counter() - t0 < 1800, "the puller never mirrored the stream"
    return time.perf_counter() - t0


def test_fresh_follower_catch_up_jetstream_vs_git(tmp_path: Path) -> None:
    total = int(os.environ.get("LCG_BENCH_JS_CATCHUP_EVENTS", "100000"))
    n_apply = int(os.environ.get("LCG_BENCH_JS_APPLY_EVENTS", "20000"))
    group = "synthetic"
    rows: list[tuple[str, int, float]] = []
    # Two publisher streams: the whole one (transport), its own smaller one (transport + apply).
    big, small = tmp_path / "big-wal", tmp_path / "small-wal"
    n = write_stream(big, group, total)
    m = write_stream(small, group, n_apply)
    size_mb = sum(f.stat().st_size for f in (big / group).rglob("*") if f.is_file()) / 2**20
    with nats_server(tmp_path) as server:
        for label, root, prefix in (("big", big, "big"), ("small", small, "small")):
            pub = JetStreamPublisher(f"{server.url}/{prefix}")
            try:
                t0 = time.perf_counter()
                pub.deliver(stage_group(root, group))
                rows.append((f"publish to JetStream ({label})", n if label == "big" else m,
                             time.perf_counter() - t0))  # fmt: skip
            finally:
                pub.close()
        for label, root in (("big", big), ("small", small)):
            repo = tmp_path / f"{label}-pub"
            _git("init", "-q", "-b", "main", str(repo))
            t0 = time.perf_counter()
            publish_group(root, group, repo)
            rows.append((f"publish to git, commit ({label})", n if label == "big" else m,
                         time.perf_counter() - t0))  # fmt: skip

        # Transport only, on the whole stream.
        url = f"{server.url}/big"
        mdir = tmp_path / "mirror-only"
        puller = JetStreamPuller(url, mirror_root(mdir, JetStreamPuller(url, mdir).target), [group])
        try:
            rows.append(("JetStream: mirror (fetch, check, fsync)", n,
                         _mirror_until(puller, group, n)))  # fmt: skip
        finally:
            puller.stop()
        t0 = time.perf_counter()
        _git("clone", "-q", str(tmp_path / "big-pub"), str(tmp_path / "big-clone"))
        rows.append(("git: clone", n, time.perf_counter() - t0))

        # Transport + apply, a fresh follower on a new workspace.
        url = f"{server.url}/small"
        jws_dir = tmp_path / "js-replica"
        puller = JetStreamPuller(url, mirror_root(jws_dir, JetStreamPuller(url, jws_dir).target),
                                 [group])  # fmt: skip
        puller.root.mkdir(parents=True, exist_ok=True)
        jws = Workspace(replica_config(jws_dir, puller.root, env=HASH), HashEmbedder())
        try:
            follower = Follower(jws, [group], source=MirrorSource(puller, limits=jws.store.limits))
            t0 = time.perf_counter()
            puller.start()
            _apply_until(follower, group, m - 1)
            rows.append(("JetStream: fresh follower, mirror + apply", m,
                         time.perf_counter() - t0))  # fmt: skip
            js_digests = jws.digests(group)
        finally:
            puller.stop()
            jws.close()
        clone = tmp_path / "git-replica-src" / "clone"
        clone.parent.mkdir()
        t0 = time.perf_counter()
        _git("clone", "-q", str(tmp_path / "small-pub"), str(clone))
        gws = Workspace(replica_config(tmp_path / "git-replica", clone, env=HASH), HashEmbedder())
        try:
            _apply_until(Follower(gws, [group]), group, m - 1)
            rows.append(("git: fresh follower, clone + apply", m, time.perf_counter() - t0))
            git_digests = gws.digests(group)
        finally:
            gws.close()
    print(
        f"\ncatch-up of a fresh follower: synthetic stream ({n:,} events, {size_mb:.0f} MB; "
        f"its own {m:,}-event stream for the rows that apply), hash embedder, one nats-server "
        "-js on loopback; git: a local working tree, cloned over the filesystem"
    )
    print(f"{'path':<46} {'events':>9} {'seconds':>9} {'events/s':>10}")
    for label, count, secs in rows:
        print(f"{label:<46} {count:>9,} {secs:>9.2f} {count / secs:>10,.0f}")
    js_rate = next(c / s for lab, c, s in rows if lab.startswith("JetStream: fresh"))
    git_rate = next(c / s for lab, c, s in rows if lab.startswith("git: fresh"))
    print(f"fresh follower JetStream / git: {js_rate / git_rate:.2f}x")
    assert js_digests == git_digests
