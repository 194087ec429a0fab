"""The embedder may be away (issue 19 item 2, ADR 0171), against a real ``lcg serve``.

Written from the reference's documentation: lcg-api.md §6.1 (the embedder is probed with
``"probe"`` at start; ``LCG_EMBEDDING_DIM`` gives the dimension), §3.1 (``health_check``
is the readiness signal), §3.3 (an assert whose embedding fails still writes, with an
``embedding_warning``), §4 (the BM25 and vector legs of a search), §7.3 and §9 (the request
body and the default model). Where the reference exits at start without its embedder, lcg
serves everything that needs no new vector and says what is down.

The embedder is ``FakeEmbeddingsServer`` (``tests/fake_embeddings.py``), a FAKE at the
embedder boundary: a stdlib http.server on loopback returning deterministic hash vectors,
started on a port chosen beforehand so it can come up after the service. Everything else is
real: the ``lcg`` process, its socket, Kuzu, hnswlib, the streams.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from fake_embeddings import FAKE_DIM, FAKE_MODEL, FakeEmbeddingsServer, free_port
from lcg.rpc.client import Client

G = "liminis"
#: Generous bounds for the service to notice the returned embedder (it probes every 2 s).
RECOVERY_S = 90.0


def _env(port: int, **extra: str) -> dict[str, str]:
    env = {
        "LCG_EMBEDDER": "",  # chosen by the URL: http
        "LCG_EMBEDDING_URL": f"http://127.0.0.1:{port}",
    }
    env.update(extra)
    return env


def _started(ws: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = sf.spawn_serve(ws, env=env)
    sock = ws / ".lcg" / "service.sock"
    deadline = time.monotonic() + 90
    while not sock.exists():
        assert proc.poll() is None, (ws / "serve.log").read_text()
        assert time.monotonic() < deadline, "lcg serve never bound its socket"
        time.sleep(0.02)
    return proc


def _opened(c: Client) -> dict[str, Any]:
    """Poll health_check until the service has finished opening (healthy or degraded)."""
    deadline = time.monotonic() + 90
    while True:
        health = c.health_check()
        if health["state"] != "initializing":
            return dict(health)
        assert time.monotonic() < deadline, health
        time.sleep(0.05)


def _healthy(c: Client) -> dict[str, Any]:
    deadline = time.monotonic() + RECOVERY_S
    while True:
        health = c.health_check()
        if health["state"] == "healthy":
            return dict(health)
        assert time.monotonic() < deadline, health
        time.sleep(0.1)


def _vectors_caught_up(c: Client) -> dict[str, Any]:
    deadline = time.monotonic() + RECOVERY_S
    while True:
        group = c.status()["wal_groups"][G]
        if group["projections"]["vectors"] == group["max_seq"]:
            return dict(group)
        assert time.monotonic() < deadline, group
        time.sleep(0.1)


@pytest.fixture
def workspace() -> Iterator[Path]:
    with sf.temp_workspace("lcg-away-") as ws:
        yield ws


@pytest.fixture
def port() -> int:
    return free_port()


def _stop(proc: subprocess.Popen[bytes], ws: Path) -> None:
    assert sf.stop_serve(proc, ws / ".lcg" / "service.sock") == 0, (ws / "serve.log").read_text()


def test_sidecar_away_at_start_then_back_without_restart(workspace: Path, port: int) -> None:
    ws = workspace
    # A workspace built while the embedder ran: an entity and a passage.
    server = FakeEmbeddingsServer(port=port)
    proc = _started(ws, _env(port))
    try:
        with Client(ws / ".lcg" / "service.sock", timeout=60) as c:
            assert _opened(c)["state"] == "healthy"
            c.call("knowledge_assert_entity", {"name": "Grace Hopper", "summary": "COBOL"})
            c.call(
                "knowledge_add_episode",
                {"name": "e1", "episode_body": "Grace Hopper found the first computer bug."},
            )
    finally:
        _stop(proc, ws)
        server.stop()
    # The vector snapshots and the embedding cache go: opening must embed the stream again.
    shutil.rmtree(ws / ".lcg" / "vectors")
    shutil.rmtree(ws / ".lcg" / "cache", ignore_errors=True)

    # The sidecar starts after the service (an extractor is configured: writes that need
    # vectors to be decided are the extraction's; its endpoint is never reached).
    dead_llm = f"http://127.0.0.1:{free_port()}/v1/chat/completions"
    proc = _started(ws, _env(port, LCG_EXTRACTION_URL=dead_llm))
    try:
        with Client(ws / ".lcg" / "service.sock", timeout=60) as c:
            health = _opened(c)
            # Health says what is down: the embedder, by its URL, and what to do.
            assert health["state"] == "degraded" and health["healthy"] is False
            assert f"127.0.0.1:{port}/v1/embeddings is unreachable" in health["reason"]
            assert "LCG_EMBEDDING_URL" in health["reason"]

            # Every read that needs no new vector works.
            names = [n["name"] for n in c.call("knowledge_list_entities", {})["nodes"]]
            assert names == ["Grace Hopper"]
            episodes = c.call("knowledge_get_episodes", {"group_id": G})["episodes"]
            assert [e["name"] for e in episodes] == ["e1"]
            by_group = c.call("knowledge_get_nodes_by_group", {"group_ids": [G]})["nodes"]
            assert [n["name"] for n in by_group] == ["Grace Hopper"]
            rows = c.call(
                "knowledge_query_cypher", {"query": "MATCH (e:Entity) RETURN e.name AS n"}
            )
            assert "Grace Hopper" in json.dumps(rows)
            status = c.status()
            # The graph and text are applied; the vectors are not marked applied without
            # their vectors: the group lags for vectors only, and says why.
            group = status["wal_groups"][G]
            assert group["projections"]["graph"] == group["max_seq"]
            assert group["projections"]["text"] == group["max_seq"]
            assert group["projections"]["vectors"] is None
            assert f"127.0.0.1:{port}" in group["vectors_lagging_reason"]

            # The searches answer from their BM25 legs and say the vector leg is missing.
            found = c.call("knowledge_find_entities", {"query": "Grace Hopper"})
            assert [n["name"] for n in found["nodes"]] == ["Grace Hopper"]
            assert [leg["leg"] for leg in found["missing_legs"]] == ["vector"]
            assert f"127.0.0.1:{port}" in found["missing_legs"][0]["reason"]
            passages = c.call("knowledge_search_passages", {"query": "computer bug"})
            assert [p["name"] for p in passages["passages"]] == ["e1"]
            assert [leg["leg"] for leg in passages["missing_legs"]] == ["vector"]

            # A write that needs vectors to be decided fails with the reason (the episode's
            # text is kept, pending); an assert is written and its vectors wait (§3.3's
            # embedding_warning).
            added = c.call(
                "knowledge_add_episode",
                {"name": "e2", "episode_body": "Ada Lovelace wrote the first program."},
            )
            assert added["extraction"]["status"] == "failed"
            reason = added["extraction"]["reason"]
            assert f"127.0.0.1:{port}/v1/embeddings is unreachable" in reason
            asserted = c.call("knowledge_assert_entity", {"name": "Ada Lovelace"})
            assert asserted["created"] is True
            assert f"127.0.0.1:{port}" in asserted["embedding_warning"]

            # The sidecar starts: no restart, and the service recovers by itself.
            server = FakeEmbeddingsServer(port=port)
            try:
                _healthy(c)
                group = _vectors_caught_up(c)
                assert group["vectors_lagging_reason"] is None
                # The vectors of what was written before the embedder came back are there:
                # their texts were embedded on its return.
                embedded = set(server.state.texts())
                assert {"Grace Hopper", "Ada Lovelace"} <= embedded
                assert "Grace Hopper found the first computer bug." in embedded
                # Vector search works: no leg is missing, passages carry their cosine.
                found = c.call("knowledge_find_entities", {"query": "Ada Lovelace"})
                assert "missing_legs" not in found
                assert "Ada Lovelace" in [n["name"] for n in found["nodes"]]
                passages = c.call("knowledge_search_passages", {"query": "computer bug"})
                assert "missing_legs" not in passages
                assert passages["passages"][0]["name"] == "e1"
                assert passages["passages"][0]["score"] > 0.0
                # Writes work again.
                asserted = c.call("knowledge_assert_entity", {"name": "Alan Turing"})
                assert asserted["embedding_warning"] is None
                # Every request is the reference's: the default model, one string per text
                # except lists for batches (ADR 0171).
                bodies = server.state.requests
                assert {b["model"] for b in bodies} == {"bge-base-en-v1.5"}
                assert {"input": "probe", "model": "bge-base-en-v1.5"} in bodies
                assert {"input": "Alan Turing", "model": "bge-base-en-v1.5"} in bodies
            finally:
                server.stop()
    finally:
        _stop(proc, ws)
    # The line a person reads at start says the same.
    log = (ws / "serve.log").read_text()
    assert f"lcg serve: ready but for vectors (embedder at http://127.0.0.1:{port}/" in log


def test_fresh_workspace_adopts_the_embedder_that_arrives(workspace: Path, port: int) -> None:
    # Nothing recorded, no LCG_EMBEDDING_DIM: the service opens on a provisional identity
    # and takes the one the embedder reports when it arrives.
    ws = workspace
    proc = _started(ws, _env(port))
    try:
        with Client(ws / ".lcg" / "service.sock", timeout=60) as c:
            assert _opened(c)["state"] == "degraded"
            c.call("knowledge_assert_entity", {"name": "Ada Lovelace", "summary": "analyst"})
            server = FakeEmbeddingsServer(port=port)
            try:
                _healthy(c)
                _vectors_caught_up(c)
                status = c.status()
                assert (status["embedding_model"], status["embedding_dim"]) == (
                    FAKE_MODEL,
                    FAKE_DIM,
                )
                found = c.call("knowledge_find_entities", {"query": "Ada"})
                assert "missing_legs" not in found
                assert [n["name"] for n in found["nodes"]] == ["Ada Lovelace"]
                assert "Ada Lovelace" in server.state.texts()
            finally:
                server.stop()
    finally:
        _stop(proc, ws)
    sidecar = json.loads((ws / ".lcg" / "wal" / G / ".wal-embedding-model.json").read_text())
    assert (sidecar["model"], sidecar["dim"]) == (FAKE_MODEL, FAKE_DIM)


def test_embedding_dim_skips_the_probe_at_start(workspace: Path, port: int) -> None:
    # §6.1/§9: LCG_EMBEDDING_DIM gives the dimension; lcg then starts without the probe.
    ws = workspace
    server = FakeEmbeddingsServer(port=port)
    try:
        env = _env(port, LCG_EMBEDDING_DIM=str(FAKE_DIM), LCG_EMBEDDING_MODEL=FAKE_MODEL)
        proc = _started(ws, env)
        try:
            with Client(ws / ".lcg" / "service.sock", timeout=60) as c:
                assert _opened(c)["state"] == "healthy"
                status = c.status()
                assert (status["embedding_model"], status["embedding_dim"]) == (
                    FAKE_MODEL,
                    FAKE_DIM,
                )
                assert server.state.requests == []  # opened without asking the embedder
                c.call("knowledge_assert_entity", {"name": "Ada Lovelace"})
                found = c.call("knowledge_find_entities", {"query": "Ada Lovelace"})
                assert "missing_legs" not in found
                assert [n["name"] for n in found["nodes"]] == ["Ada Lovelace"]
                # The first vector asked for probes first, with the configured model.
                assert server.state.requests[0] == {"input": "probe", "model": FAKE_MODEL}
        finally:
            _stop(proc, ws)
    finally:
        server.stop()
