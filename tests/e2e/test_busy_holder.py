"""A command that holds a workspace by itself serves its socket meanwhile (ADR 0199 addendum).

``lcg replay``, ``dump``, ``verify``, ``mark`` and ``import-reference`` with no service running
do their work in the files; while they do, the socket answers: ``lcg status`` says the
workspace is busy and with what, ``lcg search`` is refused with that reason at once, instead
of both waiting for the lock and then naming the holder. Real CLI subprocesses for the holder
and the commands asked meanwhile (a subprocess timeout is their hang signal); the setup's
ingest and the search after run in this process (``lcg_main``). The replay is held mid-way by
a FAKE embedder whose answer waits for the test (no sleeps).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import _service_fixtures as sf
from fake_embeddings import FakeEmbeddingsServer, free_port

G = "busy"
T0 = "2024-05-01T09:00:00.000000+00:00"
#: A reference stream's entity line (the shape of its Cypher, as tests/e2e's import tests).
ENTITY = (
    "CREATE (:Entity {uuid: $uuid, name: $name, group_id: $group_id, labels: $labels, "
    "created_at: $created_at, name_embedding: $name_embedding, summary: $summary, "
    "attributes: $attributes})"
)
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


def _spawn(ws: Path, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    with (ws.parent / f"{ws.name}.log").open("ab") as log:
        return subprocess.Popen(
            [str(sf.LCG), "-C", str(ws), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=sf.serve_env(env),
            cwd=str(ws.parent),
        )


def _answered_while_held(
    embedder: FakeEmbeddingsServer, ws: Path, env: dict[str, str], command: str, *args: str
) -> None:
    """Run ``lcg COMMAND ARGS`` with the embedder holding every text with HOLDME: once it
    asks for one, ``lcg status`` and ``lcg search`` are answered with the busy reason; then
    the embedder answers and the command succeeds."""
    log = ws.parent / f"{ws.name}.log"
    before = _held_texts(embedder)
    embedder.state.release.clear()
    proc = _spawn(ws, env, command, *args)
    try:
        # The command is embedding: held there.
        sf.eventually(
            lambda: _held_texts(embedder) != before,
            lambda: f"lcg {command} asking for vectors: {log.read_text()}",
            proc=proc,
        )
        busy = f"busy: lcg {command} (pid {proc.pid})"
        status = _lcg(ws, env, "status", "--json")
        assert busy in status.stdout + status.stderr, status
        assert "held by" not in status.stdout + status.stderr
        search = _lcg(ws, env, "search", "platypus")
        assert search.returncode != 0 and busy in search.stderr, search.stderr
        assert proc.poll() is None, f"lcg {command} was to be still running"
        embedder.state.release.set()
        assert proc.wait(WAIT_S) == 0, log.read_text()
    finally:
        embedder.state.release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_an_import_of_a_reference_workspace_answers_status_while_it_runs(
    embedder: FakeEmbeddingsServer, tmp_path: Path
) -> None:
    gdir = tmp_path / "ref" / "wal" / G
    gdir.mkdir(parents=True)
    params = {
        "uuid": "00000000-0000-4000-8000-000000000001",
        "name": "platypus HOLDME",
        "group_id": G,
        "labels": ["Entity"],
        "created_at": T0,
        "name_embedding": [0.5, 0.25],
        "summary": "The platypus HOLDME lays eggs.",
        "attributes": "{}",
    }
    line = {"seq": 0, "ts": T0, "db": "", "cypher": ENTITY, "params": params}
    (gdir / "20240501_090000_aaaaaa_0000.jsonl").write_text(json.dumps(line) + "\n")
    with sf.temp_workspace("lcg-busy-") as ws:
        _answered_while_held(
            embedder, ws, _env(embedder), "import-reference", str(tmp_path / "ref" / "wal"), "-s"
        )


def _ingested(lcg_main: sf.LcgMain, ws: Path, env: dict[str, str], tmp_path: Path) -> None:
    """A note with HOLDME ingested into group G, and the embedding cache (derived state)
    removed, so whatever builds vectors next asks the embedder."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nThe platypus HOLDME lays eggs.\n")
    done = lcg_main(ws, "ingest", str(notes), "--group", G, env=env)
    assert done.returncode == 0, done.stderr
    shutil.rmtree(ws / ".lcg" / "cache" / "embeddings")


def _found_after(lcg_main: sf.LcgMain, ws: Path, env: dict[str, str]) -> None:
    """The command gave the workspace back: the next command holds it and finds the note."""
    search = lcg_main(ws, "search", "platypus", "--group", G, "--json", env=env)
    assert search.returncode == 0, search.stderr
    assert [h["source_file"] for h in json.loads(search.stdout)] == ["notes/a.md"]


def test_status_and_search_are_answered_while_a_replay_holds_the_workspace(
    embedder: FakeEmbeddingsServer, tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    env = _env(embedder)
    with sf.temp_workspace("lcg-busy-") as ws:
        _ingested(lcg_main, ws, env, tmp_path)
        _answered_while_held(embedder, ws, env, "replay", "--group", G, "--force-clear", "-s")
        _found_after(lcg_main, ws, env)


def test_status_and_search_are_answered_while_verify_holds_the_workspace(
    embedder: FakeEmbeddingsServer, tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    env = _env(embedder)
    with sf.temp_workspace("lcg-busy-") as ws:
        _ingested(lcg_main, ws, env, tmp_path)
        _answered_while_held(embedder, ws, env, "verify", "--group", G)
        _found_after(lcg_main, ws, env)


def test_status_and_search_are_answered_while_dump_holds_the_workspace(
    embedder: FakeEmbeddingsServer, tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    env = _env(embedder)
    with sf.temp_workspace("lcg-busy-") as ws:
        _ingested(lcg_main, ws, env, tmp_path)
        for derived in ("db", "text", "vectors"):  # the dump's open catches them up: embeds
            shutil.rmtree(ws / ".lcg" / derived)
        _answered_while_held(embedder, ws, env, "dump", "--group", G, "--to", str(tmp_path / "d"))
        assert (tmp_path / "d" / G).is_dir()
        _found_after(lcg_main, ws, env)


def test_search_goes_through_an_eval_check_that_serves_the_workspace(
    embedder: FakeEmbeddingsServer, tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    """``lcg eval check`` with no service serves the workspace while it reads (the holder
    rule, as ``lcg search``): a search meanwhile is answered through it, with hits."""
    env = _env(embedder)
    with sf.temp_workspace("lcg-busy-") as ws:
        _ingested(lcg_main, ws, env, tmp_path)
        golden = tmp_path / "golden.json"
        question = {"read": "passages", "query": "HOLDME platypus"}
        golden.write_text(json.dumps([{**question, "expect": {"relevant": ["notes/a.md"]}}]))
        before = _held_texts(embedder)
        embedder.state.release.clear()
        proc = _spawn(ws, env, "eval", "check", "--golden", str(golden), "--json")
        log = ws.parent / f"{ws.name}.log"
        try:
            # The check's query waits on the embedder.
            sf.eventually(
                lambda: _held_texts(embedder) != before,
                lambda: f"the check asking for vectors: {log.read_text()}",
                proc=proc,
            )
            search = _lcg(ws, env, "search", "platypus", "--group", G, "--json")
            assert search.returncode == 0, search.stderr
            assert [h["source_file"] for h in json.loads(search.stdout)] == ["notes/a.md"]
            assert proc.poll() is None, "the check was to be still running"
            embedder.state.release.set()
            assert proc.wait(WAIT_S) == 0, log.read_text()
        finally:
            embedder.state.release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
