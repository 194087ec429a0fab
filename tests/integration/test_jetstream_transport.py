"""The JetStream transport against a real ``nats-server -js``: publisher, puller, follower.

In process (the CLI's end-to-end runs are tests/e2e/test_jetstream_e2e.py): what the server
lacks is published, a republish duplicates nothing, the follower applies what the puller
mirrored, a message that fails its checksum or breaks seq continuity stops the group with the
reason (never applied), a new generation is a reset, and a restarted server loses nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from _nats_fixtures import NatsServer, nats_server
from lcg.events.guarded import ReadLimits
from lcg.ingest.dump import dump_groups
from lcg.replication.follow import Follower
from lcg.replication.jetstream import H_GENERATION, H_SEQ, JetStreamPublisher
from lcg.replication.jetstream_follow import JetStreamPuller, MirrorSource, mirror_root
from lcg.replication.service import replica_config
from lcg.replication.staging import stage_group
from lcg.workspace import Workspace
from replica_support import HASH, open_publisher, write_batch

G = "team"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[NatsServer]:
    with nats_server(tmp_path) as srv:
        yield srv


def _publish(ws: Workspace, url: str, **kw: bool) -> Any:
    pub = JetStreamPublisher(url)
    try:
        return pub.deliver(stage_group(ws.config.wal_dir, G), **kw)
    finally:
        pub.close()


class _Replica:
    """A replica workspace whose follower reads the puller's mirror (no watcher thread)."""

    def __init__(self, path: Path, url: str, **puller: Any) -> None:
        from fake_embeddings import HashEmbedder

        self.puller = JetStreamPuller(url, mirror_root(path, _target(url)), [G], **puller)
        self.puller.root.mkdir(parents=True, exist_ok=True)
        config = replica_config(path, self.puller.root, env=HASH)
        self.ws = Workspace(config, HashEmbedder(), publication=ReadLimits())
        self.follower = Follower(self.ws, [G], source=MirrorSource(self.puller))
        self.puller.start()

    def wait(self, done: Callable[[Any], bool], timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            status = self.follower.sync_group(G)
            if done(status):
                return status
            assert time.monotonic() < deadline, f"replica never got there: {status}"
            time.sleep(0.05)

    def close(self) -> None:
        self.puller.stop()
        self.ws.close()


def _target(url: str) -> Any:
    from lcg.replication.jetstream import JetStreamTarget

    return JetStreamTarget.parse(url)


def _applied(ws: Workspace) -> int | None:
    return ws.projector.applied_seq(G)


def test_publish_follow_republish_and_server_restart(tmp_path: Path, server: NatsServer) -> None:
    pub = open_publisher(tmp_path / "pub")
    rep = _Replica(tmp_path / "rep", server.url)
    try:
        write_batch(pub, G, 3)
        first = _publish(pub, server.url)
        assert first.committed and first.max_seq == pub.projector.applied_seq(G)
        again = _publish(pub, server.url)
        assert not again.committed and again.files_copied == 0  # nothing the server lacks
        rep.wait(lambda s: s.state == "following" and s.applied_seq == first.max_seq)
        # The server restarts (file storage) between two publishes: nothing is lost.
        server.stop()
        server.start()
        write_batch(pub, G, 2, start=3)
        second = _publish(pub, server.url)
        assert second.files_copied == second.max_seq - first.max_seq
        status = rep.wait(lambda s: s.applied_seq == second.max_seq)
        assert status.lag_events == 0 and status.state == "following"
        assert rep.ws.digests(G) == pub.digests(G)
    finally:
        rep.close()
        pub.close()


async def _inject(url: str, subject: str, data: bytes, headers: dict[str, str]) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().publish(subject, data, headers=headers)
    finally:
        await nc.close()


@pytest.mark.parametrize("defect", ["checksum", "gap"])
def test_bad_message_stops_the_group(tmp_path: Path, server: NatsServer, defect: str) -> None:
    import asyncio

    pub = open_publisher(tmp_path / "pub")
    rep = _Replica(tmp_path / "rep", server.url)
    try:
        write_batch(pub, G, 2)
        result = _publish(pub, server.url)
        rep.wait(lambda s: s.applied_seq == result.max_seq)
        line = next(iter(stage_group(pub.config.wal_dir, G).lines(after=result.max_seq - 1)))
        seq = result.max_seq + (1 if defect == "checksum" else 2)
        data = line.data.replace(f'"seq":{result.max_seq}'.encode(), f'"seq":{seq}'.encode())
        if defect == "gap":
            # A valid line with a recomputed checksum, but one seq too far: a hole.
            from lcg.events.codec import decode_line, encode_event

            event = decode_line(line.data).event
            assert event is not None
            import msgspec

            data = encode_event(msgspec.structs.replace(event, seq=seq)).rstrip(b"\n")
        headers = {H_GENERATION: result.generation, H_SEQ: str(seq)}
        asyncio.run(_inject(server.url, f"lcg.{G}", data, headers))
        status = rep.wait(lambda s: s.state == "stopped", timeout=30)
        word = "line check" if defect == "checksum" else "seq gap"
        assert word in (status.reason or ""), status.reason
        assert _applied(rep.ws) == result.max_seq  # never applied, nothing skipped to
    finally:
        rep.close()
        pub.close()


def test_messages_the_client_drops_are_resumed_and_not_called_a_gap(
    tmp_path: Path, server: NatsServer, caplog: pytest.LogCaptureFixture
) -> None:
    # A real slow consumer (issue 27): the subscription may buffer 16 KiB, the server sends a
    # fetch of ~90 lines at once, and the NATS client drops what does not fit (reporting a
    # SlowConsumerError to the error callback). That used to stop the group as a "seq gap".
    caplog.set_level(logging.WARNING, logger="lcg.replication.jetstream_follow")
    pub = open_publisher(tmp_path / "pub")
    rep = _Replica(tmp_path / "rep", server.url, pending_bytes=16 * 1024)
    try:
        write_batch(pub, G, 30)
        result = _publish(pub, server.url)
        states: set[str] = set()

        def caught_up(status: Any) -> bool:
            states.add(status.state)
            assert status.state != "stopped", status.reason
            return bool(status.applied_seq == result.max_seq)

        status = rep.wait(caught_up, timeout=120)
        assert status.state == "following" and status.lag_events == 0
        assert rep.ws.digests(G) == pub.digests(G)  # every line once, nothing skipped
        said = [r.getMessage() for r in caplog.records]
        assert any("dropped" in m and "slow consumer" in m and "resuming" in m for m in said)
        assert not any("seq gap" in m for m in said), said
    finally:
        rep.close()
        pub.close()


def test_new_generation_is_a_reset(tmp_path: Path, server: NatsServer) -> None:
    pub = open_publisher(tmp_path / "pub")
    rep = _Replica(tmp_path / "rep", server.url)
    try:
        write_batch(pub, G, 2)
        first = _publish(pub, server.url)
        rep.wait(lambda s: s.applied_seq == first.max_seq)
        dumped = tmp_path / "dumped"
        dump_groups(pub, dumped, [G])
        staged = stage_group(dumped, G)
        assert staged.generation != first.generation
        p = JetStreamPublisher(server.url)
        try:
            from lcg.errors import GenerationError

            with pytest.raises(GenerationError, match="--reset"):
                p.deliver(staged)
            reset = p.deliver(staged, reset=True)
        finally:
            p.close()
        assert reset.reset
        status = rep.wait(lambda s: s.generation == staged.generation and s.lag_events == 0)
        assert status.reset_detected and status.state == "following"
    finally:
        rep.close()
        pub.close()
