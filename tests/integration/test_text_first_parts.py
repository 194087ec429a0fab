"""A sync's text path while its vectors follow (ADR 0206, after ADR 0201): real workspaces.

While a background drainer makes the vectors, the vector projection lags the group's stream.
Each later part of a sync used to find it lagging and catch the group up before its own
apply — a replay of the whole backlog read from the stream, once per part, so a 5,000-chunk
sync read about 200,000 events. Now a part whose vectors are deferred applies to the graph
and BM25 at once and leaves the vector projection where it is; parts are larger
(``DEFERRED_PART_CHUNKS``) and the client's batches grow once the service says it defers.

In process: a real workspace (Kuzu, BM25, hnswlib, the stream) with the hash embedder (TEST
DOUBLE). Through the CLI: a real ``lcg serve`` and ``lcg ingest``, the vectors held back by
the gated ``FakeEmbeddingsServer`` (TEST DOUBLE, ``tests/fake_embeddings.py``), SIGKILL.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from fake_embeddings import FakeEmbeddingsServer, free_port
from lcg import telemetry
from lcg.config import Config
from lcg.ingest.sources import ChunkIn, DirectBackend, SyncProgress, sync_chunks, sync_tree
from lcg.ingest.sources.sync import ADD_BATCH_CHUNKS, DEFERRED_BATCH_CHUNKS
from lcg.query import Searcher
from lcg.rpc.client import Client
from lcg.workspace import Workspace
from lcg.workspace.vector_drain import drain_group

G = "parts"
WHEN = "2024-05-01T12:00:00Z"
PROBE = "zyxwvutsrq"
ENV = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off", "LCG_WAL_FSYNC": "off"}


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    """A real workspace served as a service serves it: vectors left to a drainer."""
    root = tmp_path / "ws"
    root.mkdir()
    w = Workspace.open(Config.from_env(root, env={**ENV, "LIMINIS_WORKSPACE_ROOT": str(root)}))
    w.vectors.backlog.drained_in_background = True
    yield w
    w.close()


def _chunks(n: int) -> list[ChunkIn]:
    return [
        ChunkIn(
            chunk_id=f"t/{i}.md#{i:012x}",
            source_file=f"t/{i}.md",
            chunk_text=f"note {i} about orbit {i % 7}" + (f" {PROBE}" if i == n - 1 else ""),
            reference_time=WHEN,
        )
        for i in range(n)
    ]


def _episodes(ws: Workspace) -> int:
    with ws.reading():
        rows = ws.graph.query("MATCH (p:Episodic) WHERE p.group_id = $g RETURN count(p)", {"g": G})
    return int(rows[0][0])


def test_a_deferred_sync_replays_nothing_and_its_text_answers_at_once(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    replays: list[telemetry.WalReplayComplete] = []
    emit = telemetry.emit

    def recording(record: Any) -> None:
        # The workspace holds only G; the record names no group (as the reference's).
        if isinstance(record, telemetry.WalReplayComplete):
            replays.append(record)
        emit(record)

    monkeypatch.setattr(telemetry, "emit", recording)
    n = 3000
    result = sync_chunks(ws, G, _chunks(n), [])
    assert (len(result.added), result.vectors_deferred) == (n, n)
    # Before ADR 0206: every part after the first replayed the backlog (2 here).
    assert replays == [], "a part whose vectors are deferred replays nothing"
    assert _episodes(ws) == n
    assert G in ws.projector.embedder_failures, "the vectors lag, for the drainer"
    searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
    with ws.reading():
        hits = searcher.search_passages(PROBE, [G], min_score=0.0)
    assert [h.content for h in hits][:1] == [f"note {n - 1} about orbit {(n - 1) % 7} {PROBE}"]

    drain_group(ws, G)
    end = ws.store.bounds(G).max_seq
    assert ws.vectors.position(G).seq == end == ws.text.position(G).seq
    assert G not in ws.projector.embedder_failures
    assert G not in ws.vectors.backlog.pending()


def test_the_client_sends_larger_batches_once_the_vectors_are_deferred(
    ws: Workspace, tmp_path: Path
) -> None:
    n = ADD_BATCH_CHUNKS + DEFERRED_BATCH_CHUNKS + 1
    tree = tmp_path / "notes"
    tree.mkdir()
    for i in range(n):
        (tree / f"{i:05}.md").write_text(f"note number {i}\n")
    frames: list[SyncProgress] = []
    report = sync_tree(DirectBackend(ws), tree, G, progress=frames.append)
    assert (report.chunks_added, report.vectors_deferred) == (n, n)
    # The first batch as before; the service said it defers, so the next ones are larger.
    assert [f.chunks_done for f in frames] == [
        ADD_BATCH_CHUNKS,
        ADD_BATCH_CHUNKS + DEFERRED_BATCH_CHUNKS,
        n,
    ]
    assert _episodes(ws) == n


# ---- a crash while the vectors wait ------------------------------------------------------


def _lcg(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(sf.LCG), "-C", str(ws), *args],
        capture_output=True,
        text=True,
        env=sf.serve_env(env),
        cwd=str(ws),
        timeout=120,
        check=False,
    )


def _serve(ws: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = sf.spawn_serve(ws, env=env)
    sf.wait_healthy(ws / ".lcg" / "service.sock", proc)
    return proc


@pytest.fixture
def embedder() -> Iterator[FakeEmbeddingsServer]:
    server = FakeEmbeddingsServer(port=free_port())
    try:
        yield server
    finally:
        server.state.release.set()
        server.stop()


def test_sigkill_after_a_deferred_ingest_loses_nothing_and_the_vectors_follow_on_reopen(
    embedder: FakeEmbeddingsServer,
) -> None:
    env = {"LCG_EMBEDDER": "", "LCG_EMBEDDING_URL": embedder.url}
    n = 1500  # a first batch, then parts of the deferred size
    with sf.temp_workspace("lcg-tfp-") as root:
        tree = root / "notes"
        tree.mkdir()
        for i in range(n):
            # HOLDME: the gated embedder holds every vector of the tree while the gate is shut.
            last = f" {PROBE}" if i == n - 1 else ""
            (tree / f"n{i:05}.md").write_text(f"HOLDME note {i} about lander {i % 31}.{last}\n")
        ws = root / "ws"
        ws.mkdir()
        sock = ws / ".lcg" / "service.sock"
        proc = _serve(ws, env)
        try:
            ingest = _lcg(ws, env, "ingest", str(tree), "--group", G)
            assert ingest.returncode == 0, ingest.stderr
            assert f"{n} chunks' vectors still to come" in ingest.stdout
        finally:
            proc.kill()  # SIGKILL: no save, no close; the text and vectors never drained
            proc.wait(60)
        embedder.state.release.set()
        proc = _serve(ws, env)
        try:
            with Client(sock, timeout=120) as c:
                hits = c.call(
                    "knowledge_search_passages",
                    {"query": PROBE, "group_ids": [G], "min_score": 0.0},
                )["passages"]
                assert any(PROBE in h["content"] for h in hits)
                manifest = c.call("knowledge_source_manifest", {"prefix": "notes/", "group_id": G})
                assert manifest["count"] == n

                def drained() -> bool:
                    return "vectors_pending" not in c.health_check()

                sf.eventually(drained, "the vectors made after the restart", proc=proc)
        finally:
            assert sf.stop_serve(proc, sock) == 0, (ws / "serve.log").read_text()
        verify = _lcg(ws, env, "verify")
        assert verify.returncode == 0, verify.stdout + verify.stderr
