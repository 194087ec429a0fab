"""``make demo`` (``python -m lcg.cli.demo``) end to end on a temp workspace: five Apollo
articles, the hash test embedder; the demo leaves its service running, and the test stops it
with ``knowledge_close``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _service_fixtures as sf  # noqa: E402
from lcg.rpc.client import Client  # noqa: E402

CORPUS = sf.REPO.parent / "shared" / "data" / "apollo"


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (FileNotFoundError, IndexError):
        return True
    return state in ("Z", "X")  # a zombie has exited; only its parent's reaping is left


def test_demo_limit_5() -> None:
    with sf.temp_workspace("lcg-demo-") as ws:
        done = subprocess.run(
            [
                sf.python(),
                "-m",
                "lcg.cli.demo",
                "--workspace",
                str(ws),
                "--limit",
                "5",
                "--data",
                str(CORPUS),
            ],  # fmt: skip
            capture_output=True,
            text=True,
            env=sf.serve_env(),
            cwd=str(sf.REPO),
            timeout=300,
            check=False,
        )
        out = done.stdout
        sock = ws / ".lcg" / "service.sock"
        pid_match = re.search(r"running \(pid (\d+)\)", out)
        try:
            assert done.returncode == 0, out + done.stderr
            assert "from 5 articles" in out
            assert "extraction pending" in out
            assert 'find_entities "first man on the moon"' in out
            assert "Neil Armstrong" in out
            assert "Neil Armstrong commanded Apollo 11." in out
            assert 'search_passages "first crewed landing on the Moon"' in out
            assert f"lcg -C {ws} status" in out and "apollo" in out
            assert f"lcg mcp --connect {sock}" in out
            assert pid_match is not None, out
            with Client(sock, timeout=60) as c:
                status = c.status()
                assert status["entity_count"] == 5 and status["relationship_count"] == 4
                assert status["wal_groups"]["apollo"]["hydration_status"] == "hydrated"
                # a second run reuses the service and adds nothing new
            again = subprocess.run(
                [
                    sf.python(),
                    "-m",
                    "lcg.cli.demo",
                    "--workspace",
                    str(ws),
                    "--limit",
                    "5",
                    "--data",
                    str(CORPUS),
                    "-s",
                ],  # fmt: skip
                capture_output=True,
                text=True,
                env=sf.serve_env(),
                cwd=str(sf.REPO),
                timeout=300,
                check=False,
            )
            assert again.returncode == 0, again.stdout + again.stderr
            assert "using the service already running" in again.stdout
            assert " 0 new" in again.stdout
        finally:
            if sock.exists():
                with Client(sock, timeout=60) as c:
                    assert c.call("knowledge_close", {}) == {"status": "closed"}
        assert pid_match is not None
        pid = int(pid_match.group(1))

        deadline = time.monotonic() + 60
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # waiting for another session's process to exit: nothing to poll
        assert _gone(pid), f"the demo service {pid} did not stop"
