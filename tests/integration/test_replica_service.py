"""The replica service: real socket, real watcher; reads served, writes refused by name."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

# Test helpers are imported as plain modules from their folders (as the other suites do).
from _service_fixtures import short_tmp
from lcg.extract.embedders import HashEmbedder
from lcg.replication import replica_config
from lcg.rpc.client import Client
from lcg.rpc.replica import ReplicaApp
from lcg.rpc.server import Server, serve
from replica_support import (
    GIT_ENV,
    HASH,
    git,
    make_repos,
    open_publisher,
    publish,
    write_batch,
)

G = "team"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@contextmanager
def replica_service(workspace: Path, source: Path) -> Iterator[tuple[ReplicaApp, Client]]:
    """A ``ReplicaApp`` behind the real socket server in a thread; yields once healthy."""
    config = replica_config(workspace, source, env=HASH)
    app = ReplicaApp(config, source_label=str(source), embedder_factory=HashEmbedder)
    bound = threading.Event()
    holder: dict[str, Server] = {}

    def started(server: Server) -> None:
        holder["server"] = server
        bound.set()

    thread = threading.Thread(
        target=lambda: asyncio.run(serve(app, config.socket_path, 5000, started=started)),
        daemon=True,
    )
    thread.start()
    assert bound.wait(60)
    client = Client(config.socket_path, timeout=60)
    try:
        client.wait_ready(60)
        yield app, client
    finally:
        # knowledge_close asks for the shutdown from inside the server's loop (an
        # asyncio.Event set from this thread would not wake it).
        client.call("knowledge_close", {})
        client.close()
        thread.join(60)
        assert not thread.is_alive()


def wait_applied(client: Client, seq: int, timeout: float = 30) -> dict[str, Any]:
    """Poll ``knowledge_replica_status`` until the group has applied ``seq``."""
    deadline = time.monotonic() + timeout
    while True:
        status = client.call("knowledge_replica_status", {"group_id": G})["groups"][G]
        if status["applied_seq"] == seq or status["state"] == "stopped":
            return dict(status)
        assert time.monotonic() < deadline, f"replica stuck at {status}"
        time.sleep(0.02)


def test_replica_service_follows_pulls_and_refuses_writes(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    rws = short_tmp("lcg-rep-")
    try:
        write_batch(pub, G, 3)
        publish(pub, G, repos)
        repos.pull()
        with replica_service(rws, repos.replica) as (app, client):
            status = wait_applied(client, pub.projector.applied_seq(G) or 0)
            assert status["state"] == "following"
            # Writes are refused, naming the publisher.
            for method, params in (
                ("knowledge_assert_entity", {"name": "X", "group_id": G}),
                ("knowledge_clear_all", {"confirm": True}),
                ("knowledge_wal_mark_create", {"name": "m", "group_id": G}),
                ("knowledge_rebuild_from_wal", {"group_id": G, "force_clear": True}),
            ):
                with pytest.raises(Exception, match="read-only replica of .*to the publisher"):
                    client.call(method, params)
            # Reads work.
            found = client.call("knowledge_find_entities", {"query": "Entity 2", "group_ids": [G]})
            assert found["count"] > 0
            # A new publish lands through git pull; the watcher applies it.
            write_batch(pub, G, 3, start=3)
            publish(pub, G, repos)
            repos.pull()
            target = pub.projector.applied_seq(G)
            status = wait_applied(client, target or 0)
            assert status["state"] == "following", status
            assert status["lag_events"] == 0 and status["source_max_seq"] == target
            assert app.ws.digests(G) == pub.digests(G)
            full = client.call("knowledge_status", {})
            replica = full["wal_groups"][G]["replica"]
            assert replica["applied_seq"] == target and replica["source"] == str(repos.replica)
            assert full["replica_of"] == str(repos.replica)
            assert full["wal_groups"][G]["hydration_status"] == "hydrated"
        # Nothing the replica wrote is tracked: the clone stays clean for the next pull.
        assert git(repos.replica, "status", "--porcelain") == ""
    finally:
        pub.close()
        import shutil

        shutil.rmtree(rws, ignore_errors=True)
