"""A publication is untrusted input: a real ``lcg follow`` process against a hostile git repo.

One publisher publishes several groups into a real git repository; a real ``lcg follow``
process pulls it (``--pull-every``). Then one commit turns most of the groups hostile - a
segment that is a symlink to ``/dev/zero``, a group directory that is a symlink out of the
publication, a segment larger than the follower's limit, ``.wal-generation.json`` as a
symlink, huge or malformed, a directory whose name is no group - and a FIFO is planted in
the replica's clone (git cannot carry one). Each hostile group must stop with its reason
(rather than hang the follower), the follower's memory must stay bounded,
``knowledge_status``, ``lcg status`` and ``health_check`` must answer and name the stopped
groups, the one healthy group must go on following and updating, and a restarted follower
must come up with the same verdicts rather than "DB unavailable".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from _service_fixtures import LCG, serve_env, short_tmp, stop_serve
from lcg.events.layout import GENERATION_FILE, segment_name
from lcg.replication import publish_group
from lcg.rpc.client import Client
from lcg.workspace import Workspace
from replica_support import GIT_ENV, Repos, git, make_repos, open_publisher, write_batch

GOOD = "good"
ZERO = "zero"  # a new segment committed as a symlink to /dev/zero
LINKDIR = "linkdir"  # the group directory committed as a symlink out of the publication
BIG = "big"  # a segment larger than --max-segment-bytes
FIFO = "fifo"  # a FIFO planted in the replica's clone as the next segment
GENLINK = "genlink"  # .wal-generation.json committed as a symlink to /dev/zero
GENHUGE = "genhuge"  # .wal-generation.json of 100 KB (valid JSON padded with spaces)
GENBAD = "genbad"  # .wal-generation.json that is not JSON
HOSTILE = [ZERO, LINKDIR, BIG, FIFO, GENLINK, GENHUGE, GENBAD]
NOT_A_GROUP = "not a group!"  # no group id encodes to this name: never opened
MAX_SEGMENT = 64 * 1024
#: The follower is killed (and the test fails) if its resident memory grows past this.
RSS_KILL = 2 * 1024**3


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass
class Watchdog:
    """Samples the follower's RSS; kills it past ``RSS_KILL`` (a follower reading /dev/zero)."""

    proc: subprocess.Popen[bytes]
    peak: int = 0
    killed: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.wait(0.05) and self.proc.poll() is None:
            try:
                rss = _rss(self.proc.pid)
            except OSError:
                return
            self.peak = max(self.peak, rss)
            if rss > RSS_KILL:
                self.killed = True
                self.proc.kill()
                return

    def stop(self) -> None:
        self._stop.set()


@dataclass
class Follow:
    """The running follower, its socket, and what the test measured."""

    workspace: Path
    proc: subprocess.Popen[bytes]
    watchdog: Watchdog
    baseline_rss: int = 0

    @property
    def sock(self) -> Path:
        return self.workspace / ".lcg" / "service.sock"

    def client(self, timeout: float = 30) -> Client:
        return Client(self.sock, timeout=timeout)


def _start_follow(rws: Path, source: Path) -> Follow:
    log = (rws / "follow.log").open("ab")
    proc = subprocess.Popen(
        [
            str(LCG),
            "-C",
            str(rws),
            "follow",
            str(source),
            "--pull-every",
            "0.2",
            "--max-segment-bytes",
            str(MAX_SEGMENT),
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        env={**serve_env(), **GIT_ENV},
        cwd=str(rws),
    )
    log.close()
    watchdog = Watchdog(proc)
    watchdog.start()
    follow = Follow(workspace=rws, proc=proc, watchdog=watchdog)
    _wait_ready(follow)
    return follow


def _wait_ready(follow: Follow, timeout: float = 90) -> None:
    """Until the service answers (a replica with stopped groups reports them as degraded)."""
    deadline = time.monotonic() + timeout
    while not follow.sock.exists():
        assert follow.proc.poll() is None, f"lcg follow exited: {_log(follow)}"
        assert time.monotonic() < deadline, "lcg follow never bound its socket"
        time.sleep(0.05)
    with follow.client() as c:
        while c.call("health_check", {})["state"] == "initializing":
            assert time.monotonic() < deadline, "lcg follow never finished opening"
            time.sleep(0.05)


def _log(follow: Follow) -> str:
    return (follow.workspace / "follow.log").read_text()[-4000:]


def _groups(follow: Follow) -> dict[str, dict[str, Any]]:
    with follow.client() as c:
        return dict(c.call("knowledge_replica_status", {})["groups"])


def _wait_groups(follow: Follow, done: Any, what: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        assert not follow.watchdog.killed, (
            f"the follower grew past {RSS_KILL} bytes of memory and was killed"
        )
        assert follow.proc.poll() is None, f"lcg follow died: {_log(follow)}"
        groups = _groups(follow)
        if done(groups):
            return groups
        assert time.monotonic() < deadline, f"replica never got to {what}: {groups}"
        time.sleep(0.05)


def _commit_push(repos: Repos, message: str) -> None:
    git(repos.pub, "add", "-A")
    git(repos.pub, "commit", "-q", "-m", message)
    repos.push()


def _make_hostile(pub: Workspace, repos: Repos, outside: Path) -> None:
    """One commit that turns every group but ``GOOD`` hostile (see the module docstring)."""
    root = repos.pub

    def next_segment(group: str) -> Path:
        applied = pub.projector.applied_seq(group)
        return root / group / segment_name((applied or 0) + 1)

    next_segment(ZERO).symlink_to("/dev/zero")
    # The group directory leaves the publication: a copy of its stream elsewhere, linked.
    shutil.copytree(root / LINKDIR, outside / LINKDIR)
    git(root, "rm", "-q", "-r", LINKDIR)
    shutil.rmtree(root / LINKDIR, ignore_errors=True)
    (root / LINKDIR).symlink_to(outside / LINKDIR, target_is_directory=True)
    # Valid-looking bytes but more of them than the follower accepts in one segment.
    next_segment(BIG).write_bytes(b"x" * (MAX_SEGMENT + 1))
    gen = root / GENLINK / GENERATION_FILE
    gen.unlink()
    gen.symlink_to("/dev/zero")
    gen = root / GENHUGE / GENERATION_FILE
    gen.write_bytes(gen.read_bytes() + b" " * 100_000)
    (root / GENBAD / GENERATION_FILE).write_bytes(b'{"generation": ')
    junk = root / NOT_A_GROUP
    junk.mkdir()
    (junk / segment_name(0)).symlink_to("/dev/zero")
    _commit_push(repos, "hostile")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Follow, Workspace, Repos]]:
    saved = {k: os.environ.get(k) for k in GIT_ENV}
    os.environ.update(GIT_ENV)
    tmp = tmp_path_factory.mktemp("hostile")
    repos = make_repos(tmp)
    pub = open_publisher(tmp / "pubws")
    rws = short_tmp("lcg-hostile-")
    outside = tmp / "outside"
    outside.mkdir()
    follow: Follow | None = None
    try:
        for group in [GOOD, *HOSTILE]:
            write_batch(pub, group, 2)
            publish_group(pub.config.wal_dir, group, repos.pub)
        repos.push()
        repos.pull()
        follow = _start_follow(rws, repos.replica)
        groups = _wait_groups(
            follow,
            lambda gs: all(
                gs.get(g, {}).get("applied_seq") == pub.projector.applied_seq(g)
                for g in [GOOD, *HOSTILE]
            ),
            "every group applied",
        )
        assert all(s["state"] == "following" for s in groups.values()), groups
        follow.baseline_rss = _rss(follow.proc.pid)
        _make_hostile(pub, repos, outside)
        # Git cannot carry a FIFO: it is planted in the replica's clone, as a local user or a
        # damaged disk could.
        os.mkfifo(repos.replica / FIFO / segment_name((pub.projector.applied_seq(FIFO) or 0) + 1))

        def all_stopped(gs: dict[str, Any]) -> bool:
            return all(gs.get(g, {}).get("state") == "stopped" for g in HOSTILE)

        # A follower that read /dev/zero or waited on the FIFO would never get there: the
        # wait's own deadline is the hang signal (how soon it stops is not timed, ADR 0222).
        _wait_groups(follow, all_stopped, "every hostile group stopped")
        yield follow, pub, repos
    finally:
        if follow is not None:
            follow.watchdog.stop()
            if follow.proc.poll() is None:
                follow.proc.kill()
                follow.proc.wait(10)
        pub.close()
        shutil.rmtree(rws, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


REASONS = {
    ZERO: r"symlink",
    LINKDIR: r"symlink",
    BIG: rf"larger than the {MAX_SEGMENT:,} bytes allowed",
    FIFO: r"not a regular file \(a FIFO\)",
    GENLINK: r"symlink",
    GENHUGE: r"larger than",
    GENBAD: r"malformed",
}


@pytest.mark.parametrize("group", HOSTILE)
def test_each_hostile_group_stops_with_its_reason(
    hostile: tuple[Follow, Workspace, Repos], group: str
) -> None:
    follow, _pub, _repos = hostile
    status = _groups(follow)[group]
    assert status["state"] == "stopped"
    assert re.search(REASONS[group], status["reason"]), status["reason"]


def test_the_follower_memory_stays_bounded(hostile: tuple[Follow, Workspace, Repos]) -> None:
    follow, _pub, _repos = hostile
    assert not follow.watchdog.killed
    # /dev/zero twice and a 100 KB sidecar: none of it may be read into memory.
    assert follow.watchdog.peak - follow.baseline_rss < 300 * 1024**2, (
        follow.watchdog.peak,
        follow.baseline_rss,
    )


def test_a_name_that_is_no_group_is_never_opened_and_is_reported(
    hostile: tuple[Follow, Workspace, Repos],
) -> None:
    follow, _pub, _repos = hostile
    with follow.client() as c:
        report = c.call("knowledge_replica_status", {})
    assert NOT_A_GROUP not in report["groups"]
    assert "not a valid group directory name" in report["skipped"][NOT_A_GROUP]


def test_the_good_group_keeps_following_and_updating(
    hostile: tuple[Follow, Workspace, Repos],
) -> None:
    follow, pub, repos = hostile
    write_batch(pub, GOOD, 2, start=2)
    publish_group(pub.config.wal_dir, GOOD, repos.pub)
    repos.push()
    target = pub.projector.applied_seq(GOOD)
    groups = _wait_groups(
        follow, lambda gs: gs[GOOD]["applied_seq"] == target, "the good group updated"
    )
    assert groups[GOOD]["state"] == "following" and groups[GOOD]["lag_events"] == 0
    assert all(groups[g]["state"] == "stopped" for g in HOSTILE)
    with follow.client() as c:
        nodes = c.call("knowledge_get_nodes_by_group", {"group_ids": [GOOD]})["nodes"]
    names = {n["name"] for n in nodes}
    assert "Entity 3" in names


def test_status_and_health_answer_and_name_the_stopped_groups(
    hostile: tuple[Follow, Workspace, Repos],
) -> None:
    follow, _pub, _repos = hostile
    with follow.client() as c:
        full = c.call("knowledge_status", {})
        health = c.call("health_check", {})
    # The full shape answers; while health is degraded it is not queryable (ADR 0214).
    assert full["connected"] is True and full["queryable"] is False and full["degraded"] is True
    for group in HOSTILE:
        assert full["wal_groups"][group]["replica"]["state"] == "stopped", group
    assert full["wal_groups"][GOOD]["replica"]["state"] == "following"
    assert health["state"] == "degraded"
    for group in HOSTILE:
        assert repr(group) in health["reason"], health
    proc = subprocess.run(
        [str(LCG), "-C", str(follow.workspace), "status"],
        capture_output=True,
        text=True,
        timeout=60,
        env=serve_env(),
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for group in HOSTILE:
        assert f"replica stopped: group {group!r}" in proc.stdout, proc.stdout


def test_a_restarted_follower_is_available_with_the_same_verdicts(
    hostile: tuple[Follow, Workspace, Repos],
) -> None:
    follow, pub, repos = hostile
    follow.watchdog.stop()
    assert stop_serve(follow.proc, follow.sock) == 0
    again = _start_follow(follow.workspace, repos.replica)
    try:
        groups = _wait_groups(
            again,
            lambda gs: all(gs.get(g, {}).get("state") == "stopped" for g in HOSTILE),
            "the hostile groups stopped again",
        )
        assert groups[GOOD]["state"] == "following"
        assert groups[GOOD]["applied_seq"] == pub.projector.applied_seq(GOOD)
        with again.client() as c:
            # Open and answering reads; degraded (stopped groups), so not ready (ADR 0214).
            assert c.call("knowledge_status", {})["connected"] is True
            found = c.call("knowledge_find_entities", {"query": "Entity 1", "group_ids": [GOOD]})
        assert found["count"] > 0
        assert not again.watchdog.killed
    finally:
        again.watchdog.stop()
        if again.proc.poll() is None:
            stop_serve(again.proc, again.sock)
