"""End to end through the CLI against real ``nats-server -js`` processes (issue 21).

A publisher workspace writes; a real ``lcg publish --to nats://… --live`` process publishes
what becomes durable; a real ``lcg follow nats://…`` process serves the replica. Faults: the
follower SIGKILLed and restarted, the live publisher SIGKILLed mid-stream and restarted, the
server restarted (file storage), and, on a three-node loopback cluster with replicas 3, one
node killed mid-stream. After each, the replica converges to the publisher's events and the
JetStream stream holds every seq exactly once, in order (no gap, no duplicate).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats

from _nats_fixtures import NatsServer, nats_cluster, nats_server
from _service_fixtures import LCG, serve_env, short_tmp, wait_healthy
from lcg.query.reads import nodes_by_group
from lcg.rpc.client import Client
from lcg.workspace import Workspace
from replica_support import open_publisher, write_batch

G = "team"


def _spawn(workspace: Path, log_name: str, *args: str) -> subprocess.Popen[bytes]:
    log = (workspace / log_name).open("ab")
    try:
        return subprocess.Popen(
            [str(LCG), "-C", str(workspace), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=serve_env(),
            cwd=str(workspace),
        )
    finally:
        log.close()


def _kill(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait(10)


class _Follower:
    """A ``lcg follow nats://…`` process and a client on its socket."""

    def __init__(self, workspace: Path, url: str) -> None:
        self.workspace = workspace
        self.url = url
        self.sock = workspace / ".lcg" / "service.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.sock.unlink(missing_ok=True)
        self.proc = _spawn(self.workspace, "follow.log", "follow", self.url, "--group", G)
        wait_healthy(self.sock, self.proc)

    def sigkill(self) -> None:
        _kill(self.proc)

    def wait(self, done: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        status: dict[str, Any] | None = None
        with Client(self.sock, timeout=30) as c:
            while time.monotonic() < deadline:
                status = c.call("knowledge_replica_status", {})["groups"].get(G)
                if status is not None and done(status):
                    return dict(status)
                time.sleep(0.05)
        log = (self.workspace / "follow.log").read_text()[-3000:]
        raise AssertionError(f"replica never got there: {status}\n{log}")

    def names(self) -> list[str]:
        with Client(self.sock, timeout=30) as c:
            rows = c.call("knowledge_get_nodes_by_group", {"group_ids": [G]})
        return sorted(n["name"] for n in rows["nodes"])


async def _stream_seqs(url: str) -> list[int]:
    """Every ``Lcg-Seq`` the group's JetStream stream holds, in stream order."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        info = await js.stream_info(f"lcg_{G}")
        out = []
        for sseq in range(info.state.first_seq, info.state.last_seq + 1):
            msg = await js.get_msg(f"lcg_{G}", sseq)
            out.append(int((msg.headers or {})["Lcg-Seq"]))
        return out
    finally:
        await nc.close()


def _assert_once_in_order(url: str, pub: Workspace) -> None:
    seqs = asyncio.run(_stream_seqs(url))
    top = pub.projector.applied_seq(G)
    assert top is not None
    assert seqs == list(range(top + 1)), f"stream holds {seqs}, expected 0..{top}"


def _names(pub: Workspace) -> list[str]:
    return sorted(n.name for n in nodes_by_group(pub.graph, [G]))


def test_live_publish_and_follow_through_faults(tmp_path: Path) -> None:
    rws = short_tmp("lcg-js-rep-")
    pws = tmp_path / "pub"
    pub = open_publisher(pws)
    live: subprocess.Popen[bytes] | None = None
    with nats_server(tmp_path) as server:
        follower = _Follower(rws, server.url)
        argv = ["publish", "--to", server.url, "--group", G, "--live"]
        try:
            write_batch(pub, G, 2)
            live = _spawn(pws, "live.log", *argv)
            follower.start()
            status = follower.wait(lambda s: s["applied_seq"] == pub.projector.applied_seq(G))
            assert status["state"] == "following" and status["source"] == f"{server.url}/lcg"

            # The follower SIGKILLed mid-stream and restarted: no gap, no duplicate.
            write_batch(pub, G, 2, start=2)
            follower.sigkill()
            write_batch(pub, G, 2, start=4)
            follower.start()
            top = pub.projector.applied_seq(G)
            status = follower.wait(lambda s: s["applied_seq"] == top and s["lag_events"] == 0)
            assert status["state"] == "following", status

            # The live publisher SIGKILLed while writes go on, then restarted: it republishes
            # from the server's last message - nothing twice, nothing missing.
            write_batch(pub, G, 1, start=6)
            _kill(live)
            write_batch(pub, G, 2, start=7)
            live = _spawn(pws, "live.log", *argv)
            top = pub.projector.applied_seq(G)
            follower.wait(lambda s: s["applied_seq"] == top)
            _assert_once_in_order(server.url, pub)

            # The server restarted (file storage) mid-stream: nothing lost.
            write_batch(pub, G, 1, start=9)
            server.stop()
            write_batch(pub, G, 2, start=10)  # local writes do not wait for the server
            server.start()
            top = pub.projector.applied_seq(G)
            status = follower.wait(lambda s: s["applied_seq"] == top, timeout=90)
            assert status["state"] == "following" and status["lag_events"] == 0
            _assert_once_in_order(server.url, pub)
            assert follower.names() == _names(pub)

            # The publisher's status shows what the server acknowledged.
            shown = subprocess.run(
                [str(LCG), "-C", str(pws), "publish", "--to", server.url, "--all", "--status"],
                capture_output=True,
                text=True,
                env=serve_env(),
                timeout=60,
                check=True,
            ).stdout
            assert f"{G} " in shown and f"  {top}  " in shown, shown
        finally:
            _kill(live)
            follower.sigkill()
            pub.close()


def test_cluster_loses_a_node_mid_stream(tmp_path: Path) -> None:
    rws = short_tmp("lcg-js-rep-")
    pws = tmp_path / "pub"
    pub = open_publisher(pws)
    live: subprocess.Popen[bytes] | None = None
    with nats_cluster(tmp_path) as nodes:
        url = "nats://" + ",".join(f"127.0.0.1:{n.port}" for n in nodes)
        follower = _Follower(rws, url)
        try:
            write_batch(pub, G, 2)
            live = _spawn(
                pws, "live.log", "publish", "--to", url, "--group", G, "--live", "--replicas", "3"
            )
            follower.start()
            follower.wait(lambda s: s["applied_seq"] == pub.projector.applied_seq(G), timeout=90)
            write_batch(pub, G, 1, start=2)
            victim: NatsServer = nodes[0]
            victim.kill()
            write_batch(pub, G, 3, start=3)
            top = pub.projector.applied_seq(G)
            status = follower.wait(lambda s: s["applied_seq"] == top, timeout=90)
            assert status["state"] == "following" and status["lag_events"] == 0
            _assert_once_in_order(nodes[1].url, pub)
            assert follower.names() == _names(pub)
        finally:
            _kill(live)
            follower.sigkill()
            pub.close()
