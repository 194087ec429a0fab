"""Issue 23 item 6: projection files are checked, not believed (ADR 0155).

Two groups are written through a real ``Workspace`` (real Kuzu, BM25, hnswlib; the hash test
embedder): ``a`` with enough episodes that its ``episode.content`` field has an hnswlib graph,
``b`` small. Then one of a's files is damaged as a disk would: zeroed bytes inside its ``.npy``,
flipped bytes inside its ``.hnsw``, a truncated or garbled ``text/a.bm25``, a garbled vector
``meta.msgpack``. Before, zeroed or flipped bytes were served while health said healthy, and a
damaged ``.bm25`` or meta took every group down (a raw ``UnicodeDecodeError`` for the meta).

Now, per case: ``lcg status`` on the closed workspace exits 1 naming the file and the remedy
while b is shown as it is; a real ``lcg serve`` rebuilds a's projection from its stream on
open, says so in its log and in ``knowledge_status``, is healthy, serves a's and b's searches,
and ``lcg verify`` then finds every projection equal to a fresh replay. When a's stream is
gone too (nothing to rebuild from), the service is degraded naming the path and the remedy,
a's writes are refused, and b stays fully available.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import lcg.cli.main as cli_main
from _service_fixtures import short_tmp, spawn_serve, stop_serve, wait_healthy
from event_samples import added
from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.rpc.client import Client
from lcg.rpc.errors import DEGRADED, RemoteError, TransportError
from lcg.workspace import Workspace
from lcg.workspace.verify import verify_workspace

#: Past the hnswlib threshold (``EXACT_BELOW``): a's ``episode.content`` has a graph file.
BIG = 2100
Damage = Callable[[Path], Path]
#: ``lcg -C WS ARGS`` in this process: (exit status, stdout, stderr).
Lcg = Callable[..., tuple[int, str, str]]


@pytest.fixture
def lcg(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Lcg:
    for key in [k for k in os.environ if k.startswith("LCG_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")  # the test double, as the service's
    monkeypatch.setenv("LCG_TELEMETRY", "off")

    def call(ws: Path, *args: str) -> tuple[int, str, str]:
        status = cli_main.main(["-C", str(ws), *args])
        out, err = capsys.readouterr()
        return status, out, err

    return call


def _config(root: Path) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"})


@pytest.fixture(scope="module")
def built() -> Iterator[Path]:
    """A closed workspace holding groups a (BIG episodes) and b (3)."""
    root = short_tmp("lcg-h6-")
    try:
        with Workspace.open(_config(root), HashEmbedder()) as ws:
            episodes = [added(f"a{i}", group="a", content=f"word{i} apple") for i in range(BIG)]
            for start in range(0, BIG, 700):
                ws.commit("a", episodes[start : start + 700])
            ws.commit(
                "b",
                [
                    added("b0", group="b", content="the lighthouse keeper wrote a letter"),
                    added("b1", group="b", content="a storm came over the harbour"),
                    added("b2", group="b", content="rowing boats at dawn"),
                ],
            )
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def ws(built: Path) -> Iterator[Path]:
    """A fresh copy of the built workspace."""
    root = short_tmp("lcg-h6-")
    shutil.rmtree(root)
    shutil.copytree(built, root, symlinks=True)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _one(directory: Path, pattern: str) -> Path:
    (path,) = sorted(directory.glob(pattern))
    return path


def zero_npy(ws: Path) -> Path:
    path = _one(ws / ".lcg" / "vectors" / "a", "episode.content.*.npy")
    data = bytearray(path.read_bytes())
    data[4096:12288] = bytes(8192)  # two pages of vectors zeroed
    path.write_bytes(bytes(data))
    return path


def flip_hnsw(ws: Path) -> Path:
    path = _one(ws / ".lcg" / "vectors" / "a", "episode.content.*.hnsw")
    data = bytearray(path.read_bytes())
    for i in range(1000, len(data), 4099):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def truncate_bm25(ws: Path) -> Path:
    path = ws / ".lcg" / "text" / "a.bm25"
    path.write_bytes(path.read_bytes()[:5000])
    return path


def garble_bm25(ws: Path) -> Path:
    path = ws / ".lcg" / "text" / "a.bm25"
    data = bytearray(path.read_bytes())
    data[3000:3400] = b"\xff" * 400
    path.write_bytes(bytes(data))
    return path


def garble_meta(ws: Path) -> Path:
    path = ws / ".lcg" / "vectors" / "a" / "meta.msgpack"
    data = bytearray(path.read_bytes())
    data[200:260] = b"\xfe" * 60  # the bytes that made a raw UnicodeDecodeError
    path.write_bytes(bytes(data))
    return path


CASES = [zero_npy, flip_hnsw, truncate_bm25, garble_bm25, garble_meta]


def _settled(sock: Path, proc: Any) -> dict[str, Any]:
    """``health_check`` once the service is past ``initializing`` (polled, no fixed sleep)."""
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, "lcg serve exited"
        assert time.monotonic() < deadline, "lcg serve never settled"
        try:
            with Client(sock, timeout=60) as c:
                health = dict(c.health_check())
        except TransportError:
            health = {"state": "initializing"}
        if health["state"] != "initializing":
            return health
        time.sleep(0.05)


def _passages(c: Client, group: str, query: str) -> list[str]:
    found = c.call(
        "knowledge_search_passages", {"query": query, "group_ids": [group], "min_score": 0.0}
    )
    assert not found.get("failed_groups"), found
    return [p["uuid"] for p in found["passages"]]


@pytest.mark.parametrize("damage", CASES, ids=[c.__name__ for c in CASES])
def test_a_damaged_projection_file_is_rebuilt_and_never_takes_b_down(
    ws: Path, damage: Damage, lcg: Lcg
) -> None:
    path = damage(ws)

    # Looking at the closed workspace: a is degraded with the file and the remedy, b is fine.
    code, out, err = lcg(ws, "status")
    assert code == 1, out + err
    assert "Traceback" not in err and "Error" not in err, err
    assert f"degraded: group 'a': {_kind(path)} {path} is damaged" in out, out
    assert "lcg replay --group a --force-clear" in out
    assert any(line.split()[:1] == ["b"] for line in out.splitlines()), out

    sock = ws / ".lcg" / "service.sock"
    proc = spawn_serve(ws)
    try:
        wait_healthy(sock, proc, timeout=180)
        with Client(sock, timeout=120) as c:
            assert c.health_check()["state"] == "healthy"
            status = c.call("knowledge_status", {})
            a, b = status["wal_groups"]["a"], status["wal_groups"]["b"]
            assert a["degraded_reason"] is None and a["hydration_status"] == "hydrated"
            (repair,) = a["projection_repairs"]
            assert str(path) in repair and "rebuilt from the stream through seq" in repair
            assert b["projection_repairs"] == [] and b["degraded_reason"] is None
            # Both groups answer, a's from its rebuilt projections.
            assert _passages(c, "a", "word1234 apple")[0] == "a1234"
            assert _passages(c, "a", "word5 apple")[0] == "a5"
            assert _passages(c, "b", "lighthouse letter")[0] == "b0"
            assert c.call(
                "knowledge_add_episode", {"name": "n", "episode_body": "x", "group_id": "a"}
            )
        code, out, err = lcg(ws, "status")  # answered by the service
        assert code == 0, out + err
        assert f"snapshot: {_kind(path)} {path} is damaged" in out, out
    finally:
        assert stop_serve(proc, sock) == 0
    log = (ws / "serve.log").read_text()
    assert '"kind":"projection_rebuilt"' in log and str(path) in log

    # The rebuilt projections are what a fresh replay of the streams makes.
    with Workspace.open(_config(ws), HashEmbedder(), inspect=True) as looking:
        report = verify_workspace(looking)
    assert report.ok, report


def test_with_nothing_to_rebuild_from_the_group_is_degraded_and_b_carries_on(ws: Path) -> None:
    path = garble_bm25(ws)
    shutil.rmtree(ws / ".lcg" / "wal" / "a")  # a's stream is gone as well
    sock = ws / ".lcg" / "service.sock"
    proc = spawn_serve(ws)
    try:
        health = _settled(sock, proc)
        assert health["state"] == "degraded", health
        assert f"group 'a': text snapshot {path} is damaged" in health["reason"]
        assert "could not be rebuilt" in health["reason"]
        assert "lcg replay --group a --force-clear" in health["reason"]
        with Client(sock, timeout=120) as c:
            status = c.call("knowledge_status", {})
            assert str(path) in status["wal_groups"]["a"]["degraded_reason"]
            assert status["wal_groups"]["b"]["degraded_reason"] is None
            assert _passages(c, "b", "storm harbour")[0] == "b1"
            written = c.call(
                "knowledge_add_episode", {"name": "n", "episode_body": "more", "group_id": "b"}
            )
            assert written
            with pytest.raises(RemoteError) as refused:
                c.call("knowledge_add_episode", {"name": "n", "episode_body": "x", "group_id": "a"})
            assert refused.value.code == DEGRADED
    finally:
        stop_serve(proc, sock)


def test_the_remedy_rebuilds_the_group_with_no_service_running(ws: Path, lcg: Lcg) -> None:
    path = garble_meta(ws)
    code, out, _ = lcg(ws, "status")
    assert code == 1 and f"{path} is damaged" in out, out
    code, out, err = lcg(ws, "replay", "--group", "a", "--force-clear")
    assert code == 0, out + err
    code, out, err = lcg(ws, "status")
    assert code == 0, out + err
    assert "damaged" not in out
    code, out, err = lcg(ws, "verify")
    assert code == 0, out + err


def _kind(path: Path) -> str:
    """How the messages name a projection file."""
    if path.suffix == ".bm25":
        return "text snapshot"
    if path.suffix == ".hnsw":
        return "hnswlib index"
    if path.suffix == ".npy":
        return "vector snapshot"
    return "vector snapshot meta"
