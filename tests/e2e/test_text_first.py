"""Text first, vectors follow (issue 28 item 4, ADR 0201), through the real CLI and service.

The embedder is ``FakeEmbeddingsServer`` (``tests/fake_embeddings.py``), a TEST DOUBLE at the
embedder boundary serving deterministic hash vectors over loopback HTTP. Its gate makes it a
slow embedder on demand, with no sleeps: while ``state.release`` is clear, a request with a
text containing ``HOLDME`` waits until the test opens it. Every chunk of the tree carries that
word, so no vector of the tree can be made while the gate is shut — the queries do not, so
their vectors are made at once. Everything else is real: ``lcg serve``, ``lcg ingest``,
``lcg status``, ``lcg verify``, ``lcg replay``, Kuzu, hnswlib and the streams.

Before the change, ``lcg ingest`` waited for the vectors of each part (the model ran inside
the commit, under the group's lock), so with the gate shut it never returned: the 60 s
timeout of the subprocess is the failure signal. The other commands run in this process
(conftest's ``lcg_main``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from fake_embeddings import FakeEmbeddingsServer, free_port
from lcg.rpc.client import Client

G = "textfirst"
WORDS = ["amber", "basalt", "cobalt", "dolomite", "emerald", "feldspar", "garnet", "hematite"]
QUERIES = ["cobalt ore in the northern seam", "garnet polishing notes"]


def _tree(root: Path) -> Path:
    tree = root / "rocks"
    tree.mkdir()
    for i, word in enumerate(WORDS):
        paragraphs = [
            f"# {word.title()} {j}\n\nHOLDME {word} sample {j} from seam {i}: {word} {word} "
            f"lies beside {WORDS[(i + j) % len(WORDS)]} in layer {j}."
            for j in range(12)
        ]
        (tree / f"{word}.md").write_text("\n\n".join(paragraphs) + "\n")
    return tree


def _env(port: int) -> dict[str, str]:
    return {"LCG_EMBEDDER": "", "LCG_EMBEDDING_URL": f"http://127.0.0.1:{port}"}


def _lcg(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(sf.LCG), "-C", str(ws), *args],
        capture_output=True,
        text=True,
        env=sf.serve_env(env),
        cwd=str(ws),
        timeout=60,
        check=False,
    )


def _hits(c: Client, query: str) -> list[tuple[str, float]]:
    result = c.call(
        "knowledge_search_passages", {"query": query, "group_ids": [G], "num_results": 10}
    )
    return [(p["source_description"], round(p["score"], 4)) for p in result["passages"]]


def _result(c: Client, query: str) -> dict[str, Any]:
    return dict(
        c.call("knowledge_search_passages", {"query": query, "group_ids": [G], "num_results": 10})
    )


def _drained(c: Client) -> dict[str, Any]:
    last: dict[str, Any] = {}

    def drained() -> bool:
        last.clear()
        last.update(c.health_check())
        return bool(last.get("healthy")) and "vectors_pending" not in last

    sf.eventually(drained, lambda: f"the vectors made: {last}", step=0.1)
    return last


@pytest.fixture
def embedder() -> Iterator[FakeEmbeddingsServer]:
    server = FakeEmbeddingsServer(port=free_port())
    try:
        yield server
    finally:
        server.state.release.set()
        server.stop()


def _serve(ws: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = sf.spawn_serve(ws, env=env)
    sf.wait_healthy(ws / ".lcg" / "service.sock", proc)
    return proc


def _stop(proc: subprocess.Popen[bytes], ws: Path) -> None:
    assert sf.stop_serve(proc, ws / ".lcg" / "service.sock") == 0, (ws / "serve.log").read_text()


def test_search_answers_by_words_before_the_vectors_then_as_a_sync_that_waited(
    embedder: FakeEmbeddingsServer, lcg_main: sf.LcgMain
) -> None:
    env = _env(int(embedder.url.rsplit(":", 1)[1]))
    with sf.temp_workspace("lcg-tf-") as root:
        tree = _tree(root)
        waited, first = root / "waited", root / "first"
        waited.mkdir()
        first.mkdir()

        # The reference: a sync that waited for its vectors (the gate open).
        proc = _serve(waited, env)
        try:
            done = lcg_main(waited, "ingest", str(tree), "--group", G, env=env)
            assert done.returncode == 0, done.stderr
            with Client(waited / ".lcg" / "service.sock", timeout=60) as c:
                _drained(c)
                expected = {q: _hits(c, q) for q in QUERIES}
        finally:
            _stop(proc, waited)
        assert all(expected[q] for q in QUERIES), expected

        # Text first: the gate shut, so no vector of the tree can be made.
        embedder.state.release.clear()
        proc = _serve(first, env)
        try:
            # A subprocess: its timeout is the hang signal of an ingest that waits for vectors.
            done = _lcg(first, env, "ingest", str(tree), "--group", G)
            assert done.returncode == 0, done.stderr
            assert "vectors still to come" in done.stdout, done.stdout
            with Client(first / ".lcg" / "service.sock", timeout=60) as c:
                # Answered by BM25 while every vector of the tree waits; it says so.
                for q in QUERIES:
                    result = _result(c, q)
                    word = q.split()[0]
                    assert result["passages"], result
                    assert word in result["passages"][0]["content"], result
                    legs = result.get("missing_legs", [])
                    assert any(
                        leg["leg"] == "vector" and G in leg.get("group_ids", []) for leg in legs
                    ), result
                health = c.health_check()
                assert health["healthy"] is True, health
                assert health["vectors_pending"] > 0, health
                status = lcg_main(first, "status", "--json", env=env)
                data = json.loads(status.stdout)
                assert data["vectors_pending"] > 0, data
                assert data["wal_groups"][G]["vectors_pending"] > 0, data
                # Vectors being made by the service are no fault: lcg status says so, exit 0.
                assert status.returncode == 0, status.stdout + status.stderr
                plain = lcg_main(first, "status", env=env)
                assert plain.returncode == 0, plain.stdout + plain.stderr
                assert "searchable by their words" in plain.stdout, plain.stdout

                embedder.state.release.set()
                health = _drained(c)
                got = {q: _hits(c, q) for q in QUERIES}
                assert got == expected
                for q in QUERIES:
                    assert "missing_legs" not in _result(c, q) or not _result(c, q)["missing_legs"]
        finally:
            embedder.state.release.set()
            _stop(proc, first)

        # The vectors are a projection of the stream: verify agrees, a replay gives the same.
        verified = lcg_main(first, "verify", env=env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        replayed = lcg_main(first, "replay", "--group", G, "--force-clear", env=env)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        proc = _serve(first, env)
        try:
            with Client(first / ".lcg" / "service.sock", timeout=60) as c:
                assert {q: _hits(c, q) for q in QUERIES} == expected
        finally:
            _stop(proc, first)
