"""A command that holds a workspace by itself serves its socket meanwhile (ADR 0199 addendum).

``lcg replay``, ``dump``, ``verify``, ``mark`` and ``import-reference`` with no service running
do their work in the files; while they do, the socket answers: ``lcg status`` says the
workspace is busy and with what, ``lcg search`` is refused with that reason at once, instead
of both waiting for the lock and then naming the holder. Real CLI subprocesses; the replay is
held mid-way by a FAKE embedder whose answer waits for the test (no sleeps).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import _service_fixtures as sf
from fake_embeddings import FakeEmbeddingsServer, free_port

G = "busy"
#: Generous bound on anything a test waits for (a hang fails the test, never a slow machine).
WAIT_S = 120.0


@pytest.fixture
def embedder() -> Iterator[FakeEmbeddingsServer]:
    server = FakeEmbeddingsServer(port=free_port())
    try:
        yield server
    finally:
        server.state.release.set()
        server.stop()


def _env(server: FakeEmbeddingsServer) -> dict[str, str]:
    # A waiting command waits longer than the test's own bound: before the busy socket, the
    # test fails by its subprocess timeout, never by the wait's plain message.
    return {"LCG_EMBEDDER": "", "LCG_EMBEDDING_URL": server.url, "LCG_HOLDER_WAIT_MS": "600000"}


def _lcg(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(sf.LCG), "-C", str(ws), *args],
        capture_output=True,
        text=True,
        env=sf.serve_env(env),
        cwd=str(ws),
        timeout=60,  # the failure signal of a command that waits for the lock
        check=False,
    )


def _held_texts(server: FakeEmbeddingsServer) -> int:
    return sum("HOLDME" in t for t in server.state.texts())


def test_status_and_search_are_answered_while_a_replay_holds_the_workspace(
    embedder: FakeEmbeddingsServer, tmp_path: Path
) -> None:
    env = _env(embedder)
    with sf.temp_workspace("lcg-busy-") as ws:
        notes = tmp_path / "notes"
        notes.mkdir()
        (notes / "a.md").write_text("# A\n\nThe platypus HOLDME lays eggs.\n")
        done = _lcg(ws, env, "ingest", str(notes), "--group", G)
        assert done.returncode == 0, done.stderr
        # The embedding cache is derived state: without it the replay asks the embedder.
        shutil.rmtree(ws / ".lcg" / "cache" / "embeddings")
        before = _held_texts(embedder)
        embedder.state.release.clear()
        log = (ws / "replay.log").open("ab")
        replay = subprocess.Popen(
            [str(sf.LCG), "-C", str(ws), "replay", "--group", G, "--force-clear", "-s"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=sf.serve_env(env),
            cwd=str(ws),
        )
        try:
            deadline = time.monotonic() + WAIT_S
            while _held_texts(embedder) == before:  # the replay is embedding: held there
                assert replay.poll() is None, (ws / "replay.log").read_text()
                assert time.monotonic() < deadline, "the replay never asked for vectors"
                time.sleep(0.05)
            status = _lcg(ws, env, "status", "--json")
            assert "busy: lcg replay (pid" in status.stdout + status.stderr, status
            assert "held by" not in status.stdout + status.stderr
            search = _lcg(ws, env, "search", "platypus", "--group", G)
            assert search.returncode != 0
            assert f"busy: lcg replay (pid {replay.pid})" in search.stderr, search.stderr
            assert replay.poll() is None, "the replay was to be still running"
            embedder.state.release.set()
            assert replay.wait(WAIT_S) == 0, (ws / "replay.log").read_text()
        finally:
            embedder.state.release.set()
            if replay.poll() is None:
                replay.kill()
                replay.wait(10)
            log.close()
        # The replay gave the workspace back: the next command holds it, and finds the note.
        search = _lcg(ws, env, "search", "platypus", "--group", G, "--json")
        assert search.returncode == 0, search.stderr
        assert [h["source_file"] for h in json.loads(search.stdout)] == ["notes/a.md"]
