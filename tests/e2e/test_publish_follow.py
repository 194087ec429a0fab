"""End to end: ``lcg publish`` commits, a real ``lcg follow`` process pulls and serves reads.

The follower pulls by itself (``--pull-every``); a client reads through the replica's socket;
a reset (dump, publish --reset) is rebuilt on the replica and reported in its telemetry.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from _service_fixtures import LCG, serve_env, short_tmp, stop_serve, wait_healthy
from lcg.cli import main as cli_main
from lcg.ingest.dump import dump_groups
from lcg.replication import publish_group
from lcg.rpc.client import Client
from replica_support import (
    GIT_ENV,
    make_repos,
    open_publisher,
    publish,
    write_batch,
)

G = "team"


def _follow_argv(workspace: Path, source: Path) -> list[str]:
    args = ["-C", str(workspace), "follow", str(source), "--pull-every", "0.2"]
    if "lcg.cli.follow" in cli_main.COMMAND_MODULES:
        return [str(LCG), *args]
    # Until lcg.cli.main lists the module, run the same entry point with it appended.
    launcher = (
        "import sys; from lcg.cli import main as m; "
        "m.COMMAND_MODULES.append('lcg.cli.follow'); sys.exit(m.main())"
    )
    return [sys.executable, "-c", launcher, *args]


def _wait(client: Client, done: Any, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        groups = client.call("knowledge_replica_status", {})["groups"]
        status = groups.get(G)
        if status is not None and done(status):
            return dict(status)
        assert time.monotonic() < deadline, f"replica never got there: {status}"
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


def test_publish_then_follow_in_another_process(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    rws = short_tmp("lcg-e2e-rep-")
    proc: subprocess.Popen[bytes] | None = None
    sock = rws / ".lcg" / "service.sock"
    try:
        write_batch(pub, G, 3)
        first = publish(pub, G, repos)
        log = (rws / "follow.log").open("ab")
        proc = subprocess.Popen(
            _follow_argv(rws, repos.replica),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={**serve_env(), **GIT_ENV},
            cwd=str(rws),
        )
        log.close()
        wait_healthy(sock, proc)
        with Client(sock, timeout=60) as c:
            target = pub.projector.applied_seq(G)
            status = _wait(c, lambda s: s["applied_seq"] == target)
            assert status["state"] == "following" and status["generation"] == first.generation
            rows = c.call("knowledge_get_nodes_by_group", {"group_ids": [G]})
            assert sorted(n["name"] for n in rows["nodes"]) == ["Entity 0", "Entity 1", "Entity 2"]
            with pytest.raises(Exception, match="read-only replica of .*publisher"):
                c.call("knowledge_assert_entity", {"name": "Nope", "group_id": G})

            # More events: published and pushed; the follower pulls and applies them.
            write_batch(pub, G, 2, start=3)
            publish(pub, G, repos)
            target = pub.projector.applied_seq(G)
            status = _wait(c, lambda s: s["applied_seq"] == target)
            assert status["lag_events"] == 0

            # Reset: dump, republish as a new generation; the replica rebuilds.
            dump_root = tmp_path / "dump"
            dump_groups(pub, dump_root, [G])
            reset = publish_group(dump_root, G, repos.pub, reset=True)
            repos.push()
            status = _wait(c, lambda s: s["generation"] == reset.generation)
            assert status["state"] == "following", status
            assert status["reset_detected"] and status["previous_generation"] == first.generation
            full = c.call("knowledge_status", {})
            assert full["wal_groups"][G]["replica"]["resets"] == 1
            assert full["wal_groups"][G]["generation"] == reset.generation
        assert stop_serve(proc, sock) == 0
        text = (rws / "follow.log").read_text()
        assert '"type":"reset_detected"' in text and f'"generation":"{reset.generation}"' in text
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        pub.close()
        shutil.rmtree(rws, ignore_errors=True)
