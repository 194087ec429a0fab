"""``lcg sources`` says which sources a running ``lcg watch`` keeps in sync (issue 28 item 2,
ADR 0207): a watcher serving the workspace and one going through ``lcg serve`` are both seen;
once a watcher stops — or is killed — its sources are no longer marked."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import _service_fixtures as sf


def _watched(lcg_main: sf.LcgMain, ws: Path) -> dict[str, bool]:
    done = lcg_main(ws, "sources", "--json")
    assert done.returncode == 0, done.stderr
    return {row["source"]: row["watching"] for row in json.loads(done.stdout)}


def _spawn_watch(ws: Path, tree: Path) -> tuple[subprocess.Popen[bytes], Path]:
    return sf.spawn_lcg(ws, "watch", str(tree), log_name=f"watch-{tree.name}.log")


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    notes, docs = tmp_path / "notes", tmp_path / "docs"
    for tree in (notes, docs):
        tree.mkdir()
        (tree / "a.md").write_text(f"# {tree.name}\n\ntext of {tree.name}\n")
    return notes, docs


def test_a_self_serving_watch_marks_its_source_until_it_stops(
    tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    ws = sf.short_tmp()
    notes, docs = _trees(tmp_path)
    assert lcg_main(ws, "ingest", str(docs)).returncode == 0
    proc, log = _spawn_watch(ws, notes)
    try:
        sf.eventually(lambda: "watching 1 tree" in log.read_text(), log.read_text, proc=proc)
        assert _watched(lcg_main, ws) == {"notes/": True, "docs/": False}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
        assert _watched(lcg_main, ws) == {"notes/": False, "docs/": False}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_watch_through_a_service_is_seen_and_a_killed_one_is_not(
    tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    ws = sf.short_tmp()
    notes, docs = _trees(tmp_path)
    sock = ws / ".lcg" / "service.sock"
    serve = sf.spawn_serve(ws)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        sf.wait_healthy(sock, serve)
        for tree in (notes, docs):
            proc, log = _spawn_watch(ws, tree)
            procs.append(proc)
            sf.eventually(
                lambda lg=log: "watching 1 tree" in lg.read_text(), log.read_text, proc=proc
            )
        assert _watched(lcg_main, ws) == {"notes/": True, "docs/": True}
        procs[1].kill()  # no clean-up runs: its claim's lock goes with the process
        procs[1].wait(10)
        assert _watched(lcg_main, ws) == {"notes/": True, "docs/": False}
    finally:
        for proc in [*procs, serve]:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
