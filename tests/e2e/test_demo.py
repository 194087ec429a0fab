"""``make demo`` (``python -m lcg.cli.demo``) end to end on a temp workspace: five Apollo
articles from the repository's ``examples/apollo/`` (no ``--data``), the hash test embedder;
the demo leaves its service running, and the test stops it with ``knowledge_close``.

What a first user meets is checked too: the commands the demo prints run as printed (bare
``lcg`` is not on the test's PATH), the pid it prints is the service's, and a second run
appends nothing to the stream.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from pathlib import Path

import _service_fixtures as sf
from lcg.cli.demo import service_pid
from lcg.rpc.client import Client


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (FileNotFoundError, IndexError):
        return True
    return state in ("Z", "X")  # a zombie has exited; only its parent's reaping is left


def _demo(ws: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = sf.serve_env()
    # A user's shell without the venv activated: `lcg` is not on PATH.
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not (Path(p) / "lcg").exists()
    )
    return subprocess.run(
        [sf.python(), "-m", "lcg.cli.demo", "--workspace", str(ws), "--limit", "5", *extra],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(sf.REPO),
        timeout=300,
        check=False,
    )


def _max_seq(sock: Path) -> int:
    with Client(sock, timeout=60) as c:
        seq: int = c.status()["wal_groups"]["apollo"]["max_seq"]
        return seq


def test_demo_limit_5() -> None:
    with sf.temp_workspace("lcg-demo-") as ws:
        done = _demo(ws)
        out = done.stdout
        sock = ws / ".lcg" / "service.sock"
        pid_match = re.search(r"service healthy after .* \(pid (\d+)\)", out)
        try:
            assert done.returncode == 0, out + done.stderr
            assert f"corpus {sf.REPO / 'examples' / 'apollo'}" in out
            assert "from 5 articles" in out
            assert "declared: 5 documents, 0 links" in out
            assert "extraction pending" in out
            assert "asserted 5 entities and 4 relationships" in out
            assert 'find_entities "first man on the moon"' in out
            assert "Neil Armstrong" in out
            assert "Neil Armstrong commanded Apollo 11." in out
            assert 'search_passages "first crewed landing on the Moon"' in out
            assert "apollo" in out
            assert "kill <pid>" not in out
            # The pid printed is the process serving the socket.
            assert pid_match is not None, out
            pid = int(pid_match.group(1))
            assert service_pid(sock) == pid
            assert f"running (pid {pid})" in out and f"kill {pid}" in out
            # The printed commands run as printed: `lcg` is spelled as a runnable path.
            status_line = re.search(r"see what it holds:\s+(.+)", out)
            assert status_line is not None, out
            command = shlex.split(status_line.group(1))
            assert command[0] != "lcg" and Path(command[0]).name == "lcg", command
            assert f"{command[0]} mcp --connect {sock}" in out
            assert "activate" in out  # how to get plain `lcg` instead
            ran = subprocess.run(
                command, capture_output=True, text=True, cwd=str(sf.REPO), check=False
            )
            assert ran.returncode == 0, ran.stdout + ran.stderr
            assert "apollo" in ran.stdout and "[service]" in ran.stdout
            with Client(sock, timeout=60) as c:
                status = c.status()
                # The five articles' documents (none links another) and the five asserted.
                assert status["entity_count"] == 10 and status["relationship_count"] == 4
                assert status["wal_groups"]["apollo"]["hydration_status"] == "hydrated"
            before = _max_seq(sock)

            # A second run reuses the service, names its pid and appends nothing.
            again = _demo(ws, "-s")
            assert again.returncode == 0, again.stdout + again.stderr
            assert f"using the service already running in this workspace (pid {pid})" in (
                again.stdout
            )
            assert " 0 new" in again.stdout
            assert "asserted 0 entities and 0 relationships" in again.stdout
            assert _max_seq(sock) == before
        finally:
            if sock.exists():
                with Client(sock, timeout=60) as c:
                    assert c.call("knowledge_close", {}) == {"status": "closed"}
        deadline = time.monotonic() + 60
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # waiting for another session's process to exit: nothing to poll
        assert _gone(pid), f"the demo service {pid} did not stop"


def test_demo_names_the_missing_corpus(tmp_path: Path) -> None:
    demo = [sf.python(), "-m", "lcg.cli.demo", "--workspace", str(tmp_path / "ws")]
    done = subprocess.run(
        [*demo, "--data", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        env=sf.serve_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert f"{tmp_path / 'nothing'} holds no corpus_prose.jsonl" in done.stderr
    assert not (tmp_path / "ws").exists()  # nothing was started or created


def test_demo_refuses_a_limit_of_zero(tmp_path: Path) -> None:
    done = subprocess.run(
        [sf.python(), "-m", "lcg.cli.demo", "--workspace", str(tmp_path / "ws"), "--limit", "0"],
        capture_output=True,
        text=True,
        env=sf.serve_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 2  # a usage error, not "no limit"
    assert "--limit: 0 is not a positive number of articles" in done.stderr
    assert not (tmp_path / "ws").exists()
