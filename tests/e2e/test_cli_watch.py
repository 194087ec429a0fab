"""``lcg watch`` as a real process (issue 22 item 4): it serves the workspace itself when no
service runs, makes a saved file searchable within the 2 s the issue asks (the median of three
saves), handles deletes and moves, lets ``lcg search`` work beside it, catches up after the
service it goes through was restarted, and ends with exit status 0 on SIGTERM and SIGINT."""

from __future__ import annotations

import signal
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import _service_fixtures as sf
from lcg.rpc.client import Client


def _spawn_watch(ws: Path, *paths: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log = ws / "watch.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [str(sf.LCG), "-C", str(ws), "watch", *map(str, paths)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=sf.serve_env(),
        )
    return proc, log


def _wait_for_line(proc: subprocess.Popen[bytes], log: Path, text: str, after: int = 0) -> None:
    deadline = time.monotonic() + 120
    while text not in log.read_text()[after:]:
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.02)


def _passages(c: Client, word: str) -> list[dict[str, Any]]:
    found = c.search_passages(word, group_ids=["liminis"], num_results=10, min_score=0.0)
    return [p for p in found["passages"] if word in p["content"]]


def _until(predicate: Any, timeout: float = 60.0) -> float:
    """Seconds until ``predicate()`` holds (polled every 20 ms)."""
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout, "never happened"
        time.sleep(0.02)
    return time.monotonic() - started


def test_watch_serves_and_syncs_saves_deletes_and_moves(tmp_path: Path) -> None:
    ws = sf.short_tmp()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "first.md").write_text("# First\n\nalpha bravo charlie\n")
    proc, log = _spawn_watch(ws, notes)
    try:
        _wait_for_line(proc, log, "watching 1 tree")
        assert "serving" in log.read_text() and "files 1 new" in log.read_text()
        sock = ws / ".lcg" / "service.sock"
        with Client(sock, timeout=60) as c:
            latencies = []
            for i in range(3):
                word = f"zanzibar{i}"
                path = notes / f"save{i}.md"
                path.write_text(f"# Save {i}\n\nthe word {word} is new\n")
                latencies.append(_until(lambda w=word: bool(_passages(c, w))))
            assert statistics.median(latencies) < 2.0, latencies
            # A command beside the watcher goes through the socket it serves.
            done = sf.run_lcg(ws, "search", "zanzibar1", "--json")
            assert done.returncode == 0 and "notes/save1.md" in done.stdout, done.stderr
            (notes / "save0.md").unlink()
            _until(lambda: not _passages(c, "zanzibar0"))
            (notes / "sub").mkdir()
            (notes / "save1.md").rename(notes / "sub" / "moved.md")
            _until(
                lambda: (
                    [p["source_description"].split(":")[0] for p in _passages(c, "zanzibar1")]
                    == ["notes/sub/moved.md"]
                )
            )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_watch_through_a_service_catches_up_after_its_restart(tmp_path: Path) -> None:
    ws = sf.short_tmp()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("kept text\n")
    sock = ws / ".lcg" / "service.sock"
    serve = sf.spawn_serve(ws)
    watch: subprocess.Popen[bytes] | None = None
    try:
        sf.wait_healthy(sock, serve)
        watch, log = _spawn_watch(ws, notes)
        _wait_for_line(watch, log, "watching 1 tree")
        assert "using the service running" in log.read_text()
        assert sf.stop_serve(serve, sock) == 0
        # Saved while no service runs: the watcher's sync fails, waits, then syncs it all.
        (notes / "b.md").write_text("written while the service was down: quokka\n")
        mark = len(log.read_text())
        _wait_for_line(watch, log, "waiting for the service", after=mark)
        serve = sf.spawn_serve(ws)
        sf.wait_healthy(sock, serve)
        with Client(sock, timeout=60) as c:
            _until(lambda: bool(_passages(c, "quokka")))
        assert "files 1 new" in log.read_text()[mark:]
        watch.send_signal(signal.SIGINT)
        assert watch.wait(60) == 0, log.read_text()
    finally:
        if watch is not None and watch.poll() is None:
            watch.kill()
            watch.wait(10)
        sf.stop_serve(serve, sock)
