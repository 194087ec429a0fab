"""The watcher never dies silently (issue 27 item 4, ADR 0193), in process against a real
service: a sync that raises any error is told and retried and later changes are synced; a
failing watching machinery (watchfiles) is started again and every tree synced; a bug that
ends a run starts it again; a watch thread that ends anyway is named by health. While a part
fails, ``health_check`` and ``knowledge_status`` of the hosting service name the watcher."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import watchfiles

import _service_fixtures as sf
import lcg.ingest
from lcg.cli import watch as watch_cli
from lcg.cli.watch import Watcher, start_watching
from lcg.rpc.client import Client

GROUP = "liminis"


@contextmanager
def _watching(
    svc: sf.InProcessService, notes: Path, lines: list[str]
) -> Iterator[tuple[Watcher, threading.Thread]]:
    """A watcher of ``notes`` hosted by ``svc`` (as a self-serving ``lcg watch`` hosts it)."""
    stop = threading.Event()
    watcher = Watcher(
        svc.socket_path, [notes], GROUP, stop=stop, say=lines.append, warn=lines.append
    )
    thread = start_watching(watcher, svc.app.problems)
    try:
        yield watcher, thread
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive()


def _until(predicate: Any, lines: list[str]) -> None:
    """Poll ``predicate()`` every 20 ms; the watcher's lines are shown if it never holds."""
    sf.eventually(predicate, lambda: "\n".join(lines))


def _found(c: Client, word: str) -> bool:
    hits = c.search_passages(word, group_ids=[GROUP], num_results=10, min_score=0.0)
    return any(word in p["content"] for p in hits["passages"])


def _reason(c: Client) -> str:
    health = c.health_check()
    return "" if health["healthy"] else str(health.get("reason"))


def _notes(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "first.md").write_text("# First\n\nalpha bravo\n")
    return notes


def test_a_sync_that_raises_is_told_retried_and_named_by_health(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = threading.Event()
    # The watcher imports the sync from the ingest face when it syncs (its parser stays light).
    real_sync = lcg.ingest.sync_tree

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if failing.is_set():
            raise RuntimeError("injected failure")
        return real_sync(*args, **kwargs)

    monkeypatch.setattr(lcg.ingest, "sync_tree", flaky)
    notes = _notes(tmp_path)
    lines: list[str] = []
    with sf.in_process_service() as svc, _watching(svc, notes, lines) as (_, thread):
        c = svc.client()
        _until(lambda: any("watching 1 tree" in line for line in lines), lines)
        failing.set()
        (notes / "a.md").write_text("# A\n\nthe aardvark\n")
        _until(lambda: "watcher: syncing" in _reason(c), lines)
        assert "injected failure" in _reason(c)
        assert any("sync failed (RuntimeError: injected failure)" in line for line in lines)
        status = c.status()
        assert any("injected failure" in p for p in status["problems"]), status["problems"]
        assert thread.is_alive()
        # Degraded by its watcher, the service still serves the commands beside it.
        found = sf.run_lcg(svc.workspace, "search", "alpha")
        assert found.returncode == 0 and "notes/first.md" in found.stdout, found
        status_cli = sf.run_lcg(svc.workspace, "status")
        assert status_cli.returncode == 1 and "degraded: watcher: syncing" in status_cli.stdout
        failing.clear()
        (notes / "b.md").write_text("# B\n\nthe badger\n")
        _until(lambda: _found(c, "aardvark") and _found(c, "badger"), lines)
        _until(lambda: bool(c.health_check()["healthy"]), lines)
        assert "problems" not in c.status()
        assert any("synced again after" in line for line in lines)


def test_a_failing_watch_machinery_is_started_again_and_every_tree_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    go, seen = threading.Event(), threading.Event()
    calls: list[int] = []
    real_watch = watchfiles.watch

    def broken_once(*args: Any, **kwargs: Any) -> Iterator[set[tuple[Any, str]]]:
        calls.append(1)
        if len(calls) == 1:
            go.wait(60)
            raise RuntimeError("watch broke")
        seen.wait(60)  # held until the test has seen health name the restart
        yield from real_watch(*args, **kwargs)

    monkeypatch.setattr(watchfiles, "watch", broken_once)
    notes = _notes(tmp_path)
    lines: list[str] = []
    with sf.in_process_service() as svc, _watching(svc, notes, lines):
        c = svc.client()
        _until(lambda: bool(calls), lines)  # the first sync done, the machinery being started
        # Written while the broken machinery reports nothing: only the resync can find it.
        (notes / "gap.md").write_text("# Gap\n\nthe gecko\n")
        go.set()
        _until(lambda: "watcher: watching for changes failed" in _reason(c), lines)
        assert "RuntimeError: watch broke" in _reason(c)
        seen.set()
        _until(lambda: _found(c, "gecko"), lines)
        _until(lambda: bool(c.health_check()["healthy"]), lines)
        (notes / "later.md").write_text("# Later\n\nthe lemur\n")
        _until(lambda: _found(c, "lemur"), lines)
        assert any("watching again" in line for line in lines)


def test_a_bug_that_ends_a_run_starts_the_watcher_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_warm_up = Watcher._warm_up
    calls: list[int] = []

    def buggy(self: Watcher) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise KeyError("a bug")
        real_warm_up(self)

    monkeypatch.setattr(Watcher, "_warm_up", buggy)
    notes = _notes(tmp_path)
    lines: list[str] = []
    with sf.in_process_service() as svc, _watching(svc, notes, lines) as (_, thread):
        c = svc.client()
        _until(lambda: any("watching 1 tree" in line for line in lines), lines)
        assert any("the watcher failed (KeyError: 'a bug')" in line for line in lines)
        assert any("Traceback" in line for line in lines)
        (notes / "after.md").write_text("# After\n\nthe aye-aye\n")
        _until(lambda: _found(c, "aye-aye"), lines)
        _until(lambda: bool(c.health_check()["healthy"]), lines)
        assert thread.is_alive()


def test_a_watch_thread_that_ended_is_named_by_health(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A thread that ends past every guard: health must not stay healthy while nothing syncs.
    monkeypatch.setattr(Watcher, "run", lambda self: None)
    notes = _notes(tmp_path)
    lines: list[str] = []
    with sf.in_process_service() as svc:
        c = svc.client()
        with _watching(svc, notes, lines) as (watcher, thread):
            thread.join(60)
            assert "watcher: the watch thread has ended" in _reason(c)
            assert sf.run_lcg(svc.workspace, "status").returncode == 1
            watcher.stop.set()
            # Asked to stop, an ended thread is no problem.
            assert c.health_check()["healthy"]


def test_a_save_between_the_first_sync_and_the_first_event_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file saved after the sync on start but before the watches were set makes no event:
    the sync once they are set finds it (ADR 0202). Before, it waited for a later save."""
    entered, saved = threading.Event(), threading.Event()
    real_watch = watchfiles.watch

    def late(*args: Any, **kwargs: Any) -> Iterator[set[tuple[Any, str]]]:
        entered.set()
        saved.wait(60)  # the save happens before the watches exist
        yield from real_watch(*args, **kwargs)

    monkeypatch.setattr(watchfiles, "watch", late)
    notes = _notes(tmp_path)
    lines: list[str] = []
    with sf.in_process_service() as svc, _watching(svc, notes, lines):
        c = svc.client()
        _until(entered.is_set, lines)
        assert not any("watching 1 tree" in line for line in lines)  # said once watches are set
        (notes / "gap.md").write_text("# Gap\n\nthe galago\n")
        saved.set()
        _until(lambda: _found(c, "galago"), lines)
        _until(lambda: any("watching 1 tree" in line for line in lines), lines)


def test_a_change_whose_event_is_lost_is_found_by_the_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Watching machinery that tells nothing (events lost: an overflow, a tree too deep to
    watch) still has every tree synced every ``SWEEP_S`` (ADR 0202)."""

    def deaf(*args: Any, **kwargs: Any) -> Iterator[set[tuple[Any, str]]]:
        stop = kwargs["stop_event"]
        while not stop.wait(0.05):
            yield set()  # a timeout: nothing was told

    monkeypatch.setattr(watchfiles, "watch", deaf)
    monkeypatch.setattr(watch_cli, "SWEEP_S", 0.5)
    notes = _notes(tmp_path)
    lines: list[str] = []
    with sf.in_process_service() as svc, _watching(svc, notes, lines):
        c = svc.client()
        _until(lambda: any("watching 1 tree" in line for line in lines), lines)
        (notes / "lost.md").write_text("# Lost\n\nthe lost loris\n")
        _until(lambda: _found(c, "loris"), lines)
        (notes / "lost.md").unlink()
        _until(lambda: not _found(c, "loris"), lines)
