"""What the background parts of a serving process say is wrong right now (ADR 0193).

A part that runs beside the service — the watcher of ``lcg watch``, or any later one — cannot
answer a client itself; it tells the app's ``ComponentProblems`` instead, and ``health_check``
and ``knowledge_status`` read it. Two ways in, one per kind of part:

* ``report(name, problem)`` — pushed by the part while something fails (``None`` once it
  works again);
* ``probe(name, check)`` — pulled on every read, for what a part cannot say itself (a thread
  that has ended cannot report its own end): ``check()`` returns the problem or ``None``.

Safe from any thread. A probe that raises is itself reported, never passed on to the reader.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["ComponentProblems"]


class ComponentProblems:
    """Named problems of a process's background parts; empty when all is well."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reported: dict[str, str] = {}
        self._probes: dict[str, Callable[[], str | None]] = {}

    def report(self, name: str, problem: str | None) -> None:
        """Say what is wrong with part ``name`` now, or ``None`` when nothing is."""
        with self._lock:
            if problem is None:
                self._reported.pop(name, None)
            else:
                self._reported[name] = problem

    def probe(self, name: str, check: Callable[[], str | None] | None) -> None:
        """Ask ``check()`` about part ``name`` on every read (``None`` removes the probe)."""
        with self._lock:
            if check is None:
                self._probes.pop(name, None)
            else:
                self._probes[name] = check

    def current(self) -> dict[str, str]:
        """Each part's problem by name, sorted by name. A probe's answer comes before what
        the part reported (a part whose thread has ended may have reported something else
        last)."""
        with self._lock:
            found = dict(self._reported)
            probes = list(self._probes.items())
        for name, check in probes:
            try:
                problem = check()
            except Exception as exc:  # noqa: BLE001 - a broken probe is a problem to show
                problem = f"its health probe failed: {type(exc).__name__}: {exc}"
            if problem is not None:
                found[name] = problem
        return dict(sorted(found.items()))

    def lines(self) -> list[str]:
        """``"<name>: <problem>"`` for each part that has one."""
        return [f"{name}: {problem}" for name, problem in self.current().items()]
