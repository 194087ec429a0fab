"""``ComponentProblems`` (ADR 0193): what background parts report, and what probes find,
read as one sorted set of named problems; a probe that raises is itself a problem."""

from __future__ import annotations

from lcg.rpc import ComponentProblems


def test_reported_problems_are_named_and_cleared() -> None:
    problems = ComponentProblems()
    assert problems.current() == {} and problems.lines() == []
    problems.report("watcher", "syncing /a failed")
    problems.report("archiver", "disk full")
    assert problems.lines() == ["archiver: disk full", "watcher: syncing /a failed"]
    problems.report("watcher", None)
    assert problems.current() == {"archiver": "disk full"}


def test_a_probe_is_asked_on_every_read_and_comes_before_a_report() -> None:
    problems = ComponentProblems()
    alive = [True]
    problems.probe("watcher", lambda: None if alive[0] else "its thread has ended")
    problems.report("watcher", "syncing /a failed")
    assert problems.current() == {"watcher": "syncing /a failed"}
    alive[0] = False
    assert problems.current() == {"watcher": "its thread has ended"}
    problems.probe("watcher", None)
    assert problems.current() == {"watcher": "syncing /a failed"}


def test_a_probe_that_raises_is_a_problem_not_an_error() -> None:
    def broken() -> str | None:
        raise ValueError("no")

    problems = ComponentProblems()
    problems.probe("part", broken)
    assert problems.current() == {"part": "its health probe failed: ValueError: no"}
