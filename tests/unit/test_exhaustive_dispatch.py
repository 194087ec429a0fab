"""Event dispatch is exhaustive (issue 20 item 2, ADR 0180): a forgotten event type fails mypy.

Every place that does something per event type is a ``match event:`` ending in
``case _: assert_never(event)``, so strict mypy rejects a dispatch that misses a member of the
``Event`` union. The first test proves that with the project's own mypy configuration: a
small module dispatching over the real union passes with every type handled and fails,
naming the type, with one left out. The second keeps the ``isinstance`` chains (which mypy
cannot check for completeness) from coming back in ``src/lcg``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from lcg.events.model import EVENT_TYPES

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "lcg"


def _dispatcher(names: list[str]) -> str:
    """A module that dispatches over ``Event`` with one case per name, as lcg's code does."""
    cases = "".join(f"        case {n}():\n            return {n!r}\n" for n in names)
    return (
        "from typing import assert_never\n\n"
        f"from lcg.events.model import Event, {', '.join(names)}\n\n\n"
        "def kind_of(event: Event) -> str:\n"
        '    """The tag of ``event``."""\n'
        "    match event:\n"
        f"{cases}"
        "        case _:\n"
        "            assert_never(event)\n"
    )


def test_strict_mypy_fails_on_a_dispatch_that_forgets_an_event_type(tmp_path: Path) -> None:
    names = [cls.__name__ for cls in EVENT_TYPES]
    forgotten = names[len(names) // 2]
    complete = tmp_path / "complete_dispatch.py"
    complete.write_text(_dispatcher(names))
    missing = tmp_path / "missing_dispatch.py"
    missing.write_text(_dispatcher([n for n in names if n != forgotten]))
    # One run over both (mypy reports each file's errors on its own), with the project's
    # configuration (strict) and a cache of its own, away from anyone else's.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "--no-error-summary",
            "--show-error-codes",
            str(complete),
            str(missing),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert errors, out
    assert not [e for e in errors if complete.name in e], out  # every type handled: clean
    assert len(errors) == 1, out
    (error,) = errors
    assert missing.name in error and "assert_never" in error, out
    assert f'"{forgotten}"' in error and "[arg-type]" in error, out


#: ``isinstance`` on an event class that is not a dispatch, and why.
NOT_A_DISPATCH: dict[tuple[str, str], str] = {
    # A purge is a barrier between segments: the batch is cut there, the rest is dispatched.
    ("projections/graph/_apply.py", "GroupPurged"): "segment barrier",
    # The first event of a list built two lines above: a narrowing for mypy.
    ("ingest/episodes.py", "EpisodeAdded"): "narrowing",
}


def _names(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def test_no_isinstance_chain_dispatches_events() -> None:
    events = {cls.__name__ for cls in EVENT_TYPES}
    found: list[str] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
            ):
                for name in sorted(_names(node.args[1]) & events):
                    seen.add((rel, name))
                    if (rel, name) not in NOT_A_DISPATCH:
                        found.append(f"{rel}:{node.lineno} isinstance(…, {name})")
    assert not found, (
        "dispatch on the event type with `match event:` and `case _: assert_never(event)` "
        "(strict mypy then fails on a forgotten type):\n  " + "\n  ".join(found)
    )
    assert set(NOT_A_DISPATCH) <= seen, f"stale entries: {set(NOT_A_DISPATCH) - seen}"
