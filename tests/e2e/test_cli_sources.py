"""``lcg ingest`` and ``lcg search`` on real files in a temporary tree (issue 22): a first
ingest, an unchanged re-ingest that appends nothing, edits, deletes, moves and a renamed
folder, ignore rules and skipped files, replay and ``lcg verify`` after a sync, ingest
through a running service, and a SIGKILL mid-ingest that the same command then repairs.

The CLI runs in this process (``lcg.cli.main.main``) where nothing needs a process of its
own, as a subprocess where it does (the service, the kill). Hash embedder: the test double.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
import lcg.cli.main as cli_main

#: ``lcg -C WS ARGS`` in this process: (exit status, stdout, stderr).
Lcg = Callable[..., tuple[int, str, str]]


@pytest.fixture
def lcg(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Lcg:
    for key in [k for k in os.environ if k.startswith("LCG_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")
    monkeypatch.setenv("LCG_TELEMETRY", "off")

    def call(ws: Path, *args: str) -> tuple[int, str, str]:
        status = cli_main.main(["-C", str(ws), *args])
        out, err = capsys.readouterr()
        return status, out, err

    return call


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body)


MOON = """# Apollo 11

Apollo 11 was the first crewed landing on the Moon, in July 1969.

## Crew

Neil Armstrong and Buzz Aldrin walked on the surface while Michael Collins orbited.

## Return

The crew splashed down in the Pacific Ocean on July 24.
"""

TREE: dict[str, str | bytes] = {
    "moon.md": MOON,
    "rockets/saturn.txt": "The Saturn V rocket stood 110 metres tall.\n\nIt flew 13 times.\n",
    "tools/orbit.py": "import math\n\n\ndef period(a):\n    return 2 * math.pi * a\n",
    "page.html": "<html><body><h1>Gemini</h1><p>Gemini flew ten crews.</p>"
    "<script>var hidden = 'script text';</script></body></html>",
    "log.jsonl": '{"day": 1, "note": "launch pad checks"}\n{"day": 2, "note": "fuelling"}\n',
    ".gitignore": "drafts/\n*.tmp\n",
    "drafts/secret.md": "a draft that must stay out\n",
    "scratch.tmp": "temporary notes\n",
    ".hidden/inside.md": "hidden folder text\n",
    "blob.txt": b"binary\x00content\x00here",
    "big.md": "word " * 4000,
}


def _stream_lines(ws: Path) -> int:
    return sum(len(v) for v in sf.stream_events(ws / ".lcg" / "wal").values())


def _search(lcg: Lcg, ws: Path, query: str, *extra: str) -> list[dict[str, Any]]:
    status, out, err = lcg(ws, "search", query, "--json", "-n", "20", *extra)
    assert status == 0, err
    hits: list[dict[str, Any]] = json.loads(out)
    return hits


def _ingest(lcg: Lcg, ws: Path, *paths: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    status, out, err = lcg(ws, "ingest", *map(str, paths), "--json", "--max-bytes", "10000", *extra)
    assert status == 0, err
    summary: dict[str, Any] = json.loads(out)
    return summary


def _served_texts(lcg: Lcg, ws: Path, query: str) -> dict[str, str]:
    return {h["chunk_id"]: h["text"] for h in _search(lcg, ws, query)}


def test_ingest_sync_search_replay_verify(tmp_path: Path, lcg: Lcg) -> None:
    notes = tmp_path / "notes"
    ws = tmp_path / "ws"
    _write(notes, TREE)
    first = _ingest(lcg, ws, notes)
    tree = first["trees"][0]
    assert tree["source"] == "notes/"
    # moon.md, saturn.txt, orbit.py, page.html, log.jsonl; the ignored and hidden are not read.
    assert first["files_new"] == 5 and first["files_removed"] == 0
    assert {s["path"]: s["reason"] for s in tree["skipped"]} == {
        "notes/blob.txt": "binary content",
        "notes/big.md": "too large: 20,000 bytes (limit 10,000)",
    }
    assert first["chunks_added"] >= 7 and first["pending"] == first["chunks_added"]

    hits = _search(lcg, ws, "who walked on the Moon surface")
    top = hits[0]
    assert top["source_file"] == "notes/moon.md" and top["heading"] == "Apollo 11 › Crew"
    assert "Neil Armstrong" in top["text"] and top["chunk_id"].startswith("notes/moon.md#")
    assert isinstance(top["score"], float)
    served = " ".join(h["text"] for h in _search(lcg, ws, "draft secret temporary hidden script"))
    for kept_out in ("draft that must", "temporary notes", "hidden folder", "script text"):
        assert kept_out not in served
    assert "Gemini flew ten crews" in served or _search(lcg, ws, "Gemini crews")

    # An unchanged tree: nothing appended, nothing added or removed.
    lines = _stream_lines(ws)
    again = _ingest(lcg, ws, notes)
    assert _stream_lines(ws) == lines
    assert (again["chunks_added"], again["chunks_removed"]) == (0, 0)
    assert again["files_unchanged"] == 5 and again["chunks_unchanged"] == first["chunks_added"]

    # One section edited: exactly that chunk is replaced; its old text is served no more.
    (notes / "moon.md").write_text(MOON.replace("Pacific Ocean", "Atlantic waters"))
    edited = _ingest(lcg, ws, notes)
    assert (edited["files_changed"], edited["chunks_added"], edited["chunks_removed"]) == (1, 1, 1)
    texts = " ".join(_served_texts(lcg, ws, "crew splashed down ocean").values())
    assert "Atlantic waters" in texts and "Pacific Ocean" not in texts

    # A deleted file, a moved file and a renamed folder.
    (notes / "log.jsonl").unlink()
    (notes / "tools" / "orbit.py").rename(notes / "orbit.py")
    (notes / "rockets").rename(notes / "launchers")
    synced = _ingest(lcg, ws, notes)
    assert synced["files_removed"] == 3 and synced["files_new"] == 2
    files = {h["source_file"] for h in _search(lcg, ws, "Saturn rocket period math launch")}
    assert {"notes/launchers/saturn.txt", "notes/orbit.py"} <= files
    assert not files & {"notes/rockets/saturn.txt", "notes/tools/orbit.py", "notes/log.jsonl"}

    # What the tree holds is in the stream: a replay from it serves the same, verify agrees.
    before = _search(lcg, ws, "Apollo crew Saturn")
    status, out, err = lcg(ws, "verify")
    assert status == 0 and "verify: ok" in out, out + err
    for sub in ("db", "text", "vectors"):
        shutil.rmtree(ws / ".lcg" / sub)
    status, out, err = lcg(ws, "replay", "--group", "liminis")
    assert status == 0, err
    assert _search(lcg, ws, "Apollo crew Saturn") == before
    assert _ingest(lcg, ws, notes)["chunks_added"] == 0


def test_single_files_and_two_trees_of_one_name(tmp_path: Path, lcg: Lcg) -> None:
    _write(tmp_path, {"a/notes/x.md": "alpha notes\n", "b/notes/y.md": "beta\n", "one.org": ""})
    (tmp_path / "one.org").write_text("* Plans\nLaunch on Friday.\n** Backup\nSaturday.\n")
    ws = tmp_path / "ws"
    both = _ingest(lcg, ws, tmp_path / "a/notes", tmp_path / "b/notes")
    assert [t["source"] for t in both["trees"]] == ["notes/", "notes~2/"]  # two sources (ADR 0200)
    summary = _ingest(lcg, ws, tmp_path / "one.org", extra=("--group", "plans"))
    assert summary["group_id"] == "plans" and summary["chunks_added"] == 2
    hits = _search(lcg, ws, "backup Saturday", "--group", "plans")
    assert hits[0]["source_file"] == "one.org" and hits[0]["heading"] == "Plans › Backup"
    status, out, err = lcg(ws, "ingest", str(tmp_path / "missing"))
    assert status == 1 and "no such file or folder" in err


def test_ingest_and_search_through_a_running_service(tmp_path: Path, lcg_main: sf.LcgMain) -> None:
    ws = sf.short_tmp()
    notes = tmp_path / "notes"
    _write(notes, {"moon.md": MOON})
    proc = sf.spawn_serve(ws)
    sock = ws / ".lcg" / "service.sock"
    try:
        sf.wait_healthy(sock, proc)
        done = lcg_main(ws, "ingest", str(notes))
        assert done.returncode == 0, done.stderr
        assert "through the running service" in done.stderr
        assert "files 1 new" in done.stdout and "lite mode" in done.stdout
        found = lcg_main(ws, "search", "Michael Collins orbited")
        assert found.returncode == 0, found.stderr
        assert found.stdout.startswith("1. notes/moon.md › Apollo 11 › Crew")
        assert "Michael Collins" in found.stdout and "\x1b[" not in found.stdout  # not a tty
    finally:
        assert sf.stop_serve(proc, sock) == 0
        shutil.rmtree(ws, ignore_errors=True)


def test_sigkill_mid_ingest_then_the_same_command_converges(tmp_path: Path, lcg: Lcg) -> None:
    notes = tmp_path / "notes"
    files: dict[str, str | bytes] = {
        f"day{i:03}.md": f"# Day {i}\n\n"
        + "\n\n".join(f"Entry {i}.{j} about item {j * i}." for j in range(12))
        for i in range(150)
    }
    _write(notes, files)
    ws = tmp_path / "ws"
    cmd = [str(sf.LCG), "-C", str(ws), "ingest", str(notes), "--max-chars", "200", "-s"]
    proc = subprocess.Popen(
        cmd, env=sf.serve_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wal = ws / ".lcg" / "wal"
    deadline = time.monotonic() + 120
    while sf.stream_bytes(wal) == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    killed_at = _stream_lines(ws)
    summary = _ingest(lcg, ws, notes, extra=("--max-chars", "200"))
    assert summary["chunks_added"] > 0, "the kill came after the ingest ended"
    events = [e for lines in sf.stream_events(wal).values() for e in lines]
    assert killed_at < len(events)
    added = [e for e in events if e["type"] == "EpisodeAdded"]
    deleted = {u for e in events if e["type"] == "EpisodesDeleted" for u in e["episode_uuids"]}
    live = [e["name"] for e in added if e["uuid"] not in deleted]
    assert len(live) == len(set(live)) == summary["chunks_added"] + summary["chunks_unchanged"]
    assert summary["files_new"] + summary["files_changed"] + summary["files_unchanged"] == 150
    status, out, err = lcg(ws, "verify")
    assert status == 0 and "verify: ok" in out, out + err
    again = _ingest(lcg, ws, notes, extra=("--max-chars", "200"))
    assert (again["chunks_added"], again["chunks_removed"]) == (0, 0)
