"""What a new user trips on beside the commands themselves: a foreground ``lcg serve`` on a
terminal, the help examples of commands that take a group, the README's Python lines.

Every test runs the real CLI (or the README's own code) against a real ``lcg serve``.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import _service_fixtures as sf

README = sf.REPO / "README.md"


#: How long the terminal may stay silent and open after ``lcg serve`` exited before the test
#: calls it held (a process left behind on it): the hang signal, not a measurement.
HANG_S = 60.0


def _read_pty(fd: int) -> bytes:
    """Everything the terminal ``fd`` showed, read until its last writer closed it (Linux
    reports the closed terminal as EIO)."""
    out = b""
    while True:
        # A read timeout as on a socket: a terminal that neither writes nor closes is held.
        ready, _, _ = select.select([fd], [], [], HANG_S)
        assert ready, f"the terminal stayed open with nothing written for {HANG_S} s"
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return out
        if not chunk:
            return out
        out += chunk


def _serve_on_a_terminal(ws: Path, telemetry: str | None) -> bytes:
    """Start ``lcg serve`` with stderr on a terminal, make three calls, stop it; what the
    terminal showed."""
    env = sf.serve_env()
    if telemetry is not None:
        env["LCG_TELEMETRY"] = telemetry
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(sf.LCG), "-C", str(ws), "serve"],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=str(ws),
    )
    os.close(slave)
    sock = ws / ".lcg" / "service.sock"
    try:
        sf.wait_healthy(sock, proc)
        with sf.Client(sock, timeout=30) as c:
            for _ in range(3):
                c.call("knowledge_status", {})
        assert sf.stop_serve(proc, sock) == 0
        return _read_pty(master)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        os.close(master)


def test_foreground_serve_on_a_terminal_prints_no_line_per_request() -> None:
    with sf.temp_workspace() as ws:
        shown = _serve_on_a_terminal(ws, None).decode(errors="replace")
    assert "lcg serve: ready" in shown
    assert '"service_state"' in shown  # state changes are still shown
    assert '"ipc_call"' not in shown


def test_foreground_serve_prints_each_request_when_asked() -> None:
    with sf.temp_workspace() as ws:
        shown = _serve_on_a_terminal(ws, "on").decode(errors="replace")
    assert shown.count('"ipc_call"') >= 3


def test_serve_log_file_keeps_every_request_line() -> None:
    """A service whose stderr is a file (a launcher's log) writes every ``ipc_call``."""
    with sf.temp_workspace() as ws:
        proc = sf.spawn_serve(ws)
        sock = ws / ".lcg" / "service.sock"
        try:
            sf.wait_healthy(sock, proc)
            with sf.Client(sock, timeout=30) as c:
                c.call("knowledge_status", {})
        finally:
            assert sf.stop_serve(proc, sock) == 0
        log = (ws / "serve.log").read_text()
    assert '"ipc_call"' in log


def _example_commands(lcg_main: sf.LcgMain, command: str) -> list[list[str]]:
    """The ``$ lcg ...`` lines of every Example block of ``lcg COMMAND SUB --help``."""
    top = lcg_main(None, command, "--help")
    subs = re.findall(r"^\s{4}(\w[\w-]*)\s{2,}", top.stdout, re.M)
    lines: list[list[str]] = []
    for sub in subs:
        text = lcg_main(None, command, sub, "--help").stdout
        for m in re.finditer(r"^\s*\$ lcg (.+)$", text, re.M):
            lines.append(m.group(1).split())
    return lines


#: The groups the examples of ``lcg mark``/``lcg wal`` name, those of the status table, and
#: the one the searched entities are in: never the default group ``liminis``, so an example
#: that leaves ``--group`` out finds no group to show.
EXAMPLE_GROUPS = ("notes",)
TABLE_GROUPS = ("n", "a-rather-long-group-name-for-a-table")
PEOPLE = "people"


@pytest.fixture(scope="module")
def served() -> Iterator[Path]:
    """One ``lcg serve`` for the tests that only read through the CLI: a chunk in each group
    the help examples and the status table name, and two entities and a fact to search (set
    up once, before any of them runs; none of them needs what another wrote)."""
    with sf.temp_workspace() as ws:
        proc = sf.spawn_serve(ws)
        sock = ws / ".lcg" / "service.sock"
        try:
            sf.wait_healthy(sock, proc)
            with sf.Client(sock, timeout=30) as c:
                for g in (*EXAMPLE_GROUPS, *TABLE_GROUPS):
                    c.process_chunk("Apollo 11 landed.", "a#0", "a.md", group_id=g)
                c.assert_entity("Ada Lovelace", summary="wrote the first program", group_id=PEOPLE)
                c.assert_entity("Analytical Engine", summary="Babbage's machine", group_id=PEOPLE)
                c.assert_relationship(
                    "Ada Lovelace", "Analytical Engine", "PROGRAMMED",
                    fact="Ada Lovelace wrote a program for the Analytical Engine", group_id=PEOPLE,
                )  # fmt: skip
            assert not (ws / ".lcg" / "wal" / "liminis").exists()
            yield ws
        finally:
            sf.stop_serve(proc, sock)


@pytest.mark.parametrize("command", ["mark", "wal"])
def test_help_examples_run_in_a_workspace_the_example_sets_up(
    served: Path, lcg_main: sf.LcgMain, command: str
) -> None:
    """Each ``$ lcg …`` example of ``lcg mark``/``lcg wal`` runs as printed, in a workspace
    holding the group the examples name and no default group ``liminis``."""
    examples = _example_commands(lcg_main, command)
    assert examples, f"lcg {command}'s subcommands show no example"
    groups = {a[i + 1] for a in examples for i, w in enumerate(a[:-1]) if w == "--group"}
    assert groups and "liminis" not in groups, examples
    assert groups <= set(EXAMPLE_GROUPS), groups
    for args in examples:
        if "--follow" in args:
            continue  # runs until Ctrl-C (tests/e2e/test_cli_wal.py follows a tail)
        done = lcg_main(served, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)


def _readme_python_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_python_blocks_run_as_written() -> None:
    """Every ```python block of the README runs, in order, in a workspace whose service was
    started the moment before (as a reader would, right after ``lcg serve``)."""
    blocks = _readme_python_blocks()
    assert len(blocks) >= 2, "the README shows the raw-socket client and the typed client"
    with sf.temp_workspace() as ws:
        proc = sf.spawn_serve(ws)
        sock = ws / ".lcg" / "service.sock"
        try:
            # The typed client's block waits for the service itself (``starting=True``); the
            # raw-socket one is read as written once the service answers.
            # The typed client's block is the one that imports lcg (``lcg.client``).
            typed = [b for b in blocks if re.search(r"^\s*(from|import) lcg\b", b, re.M)]
            raw = [b for b in blocks if b not in typed]
            assert typed and raw
            for i, block in enumerate(typed + raw):
                if i == len(typed):
                    sf.wait_healthy(sock, proc)
                done = subprocess.run(
                    [sf.python(), "-c", block],
                    cwd=str(ws),
                    env=sf.serve_env(),
                    capture_output=True,
                    text=True,
                    timeout=120,
                    check=False,
                )
                assert done.returncode == 0, (block, done.stdout, done.stderr)
        finally:
            sf.stop_serve(proc, sock)


def test_status_table_columns_align(served: Path) -> None:
    """Every value of ``lcg status``'s table starts under its column's header, whatever the
    length of the group ids (the console script itself: one subprocess)."""
    done = sf.run_lcg(served, "status")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("GROUP"))
    header = lines[at]
    rows = [r for r in lines[at + 1 :] if r.split() and r.split()[0] in TABLE_GROUPS]
    assert len(rows) == len(TABLE_GROUPS), lines
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    for row in rows:
        assert [m.start() for m in re.finditer(r"\S+(?: \(\w+\))?", row)] == starts, (header, row)


def test_follow_prints_a_ready_line() -> None:
    """``lcg follow`` says in words what it follows and how to stop it, once it is up."""
    with sf.temp_workspace() as ws, sf.temp_workspace() as replica:
        # The stream it follows: written by the service in this process (lcg follow is the
        # console script under test here).
        with sf.in_process_service(ws) as svc, svc.client() as c:
            c.process_chunk("Apollo 11 landed.", "a#0", "a.md", group_id="notes")
        follow = subprocess.Popen(
            [str(sf.LCG), "-C", str(replica), "follow", str(ws / ".lcg" / "wal")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=sf.serve_env(),
            cwd=str(replica),
        )
        try:
            assert follow.stdout is not None
            line = follow.stdout.readline().decode()
        finally:
            follow.terminate()
            rc = follow.wait(60)
            if follow.stdout is not None:
                follow.stdout.close()
    assert line.startswith("lcg follow: following every group of "), line
    assert "read-only" in line and "Ctrl-C" in line
    assert rc == 0


@pytest.mark.parametrize("kind", ["--entities", "--facts"])
def test_search_of_the_graph_with_json_prints_only_json(
    served: Path, lcg_main: sf.LcgMain, kind: str
) -> None:
    """``lcg search --entities/--facts --json`` is for scripts: stdout parses as one JSON
    list (it printed the numbered list after the JSON)."""
    done = lcg_main(served, "search", "Ada Lovelace program", kind, "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert isinstance(hits, list) and hits, done.stdout
