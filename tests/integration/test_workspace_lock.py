"""One service per workspace, held for its life (issue 23 item 8, ADR 0156).

A second ``lcg serve`` started after the first one's socket file was unlinked took the socket
path and degraded while the first was healthy. Now the first holds the workspace lock from
before it binds until it dies: the second refuses at start, naming the first's pid, and
offline admin commands that would write (``lcg mark``, ``lcg replay``) refuse too. The lock
goes with the process, however it dies. Real ``lcg serve`` subprocesses, real files.
"""

from __future__ import annotations

import os
import signal
import subprocess

import _service_fixtures as sf
from lcg.rpc.client import Client


def test_a_second_serve_refuses_while_the_first_holds_the_workspace() -> None:
    with sf.temp_workspace("lcg-lock-") as ws:
        sock = ws / ".lcg" / "service.sock"
        first = sf.spawn_serve(ws)
        second: subprocess.Popen[bytes] | None = None
        try:
            sf.wait_healthy(sock, first)
            with Client(sock, timeout=60) as c:
                c.assert_entity(name="Ada", group_id="g")
            # A second name for the first service's socket, then the socket file is gone.
            keep = ws / "keep.sock"
            os.link(sock, keep)
            sock.unlink()

            second = sf.spawn_serve(ws, log_name="second.log")
            assert second.wait(120) == 1
            log = (ws / "second.log").read_text()
            assert f"lcg process {first.pid}" in log, log
            assert "a second service cannot serve it" in log, log
            assert not sock.exists(), "the refused service took the socket path"

            with Client(keep, timeout=60) as c:
                assert c.call("health_check", {})["healthy"] is True
                # The service reopens its workspace on recovery: the lock stays with it.
                c.call("knowledge_recover", {"strategy": "rebuild_from_workspace_wal"})
                assert c.call("health_check", {})["healthy"] is True

            # Offline admin commands find no socket; they refuse rather than write beside it.
            marks = ws / ".lcg" / "wal" / "g" / ".checkpoints"
            before = sorted(marks.rglob("*")) if marks.exists() else []
            # They follow the holder rule (ADR 0199): each waits for the holder's socket, then
            # says what holds the workspace, and writes nothing.
            for args in (["mark", "create", "m1", "--group", "g"], ["replay", "--group", "g"]):
                done = sf.run_lcg(ws, *args, env={"LCG_HOLDER_WAIT_MS": "300"})
                assert done.returncode == 1, (args, done.stdout, done.stderr)
                assert f"in use by lcg serve (pid {first.pid})" in done.stderr, done.stderr
            assert (sorted(marks.rglob("*")) if marks.exists() else []) == before
            # A status waits for the holder's socket (a holder starting), then says plainly
            # what holds the workspace and what to do (ADR 0199).
            done = sf.run_lcg(ws, "status", env={"LCG_HOLDER_WAIT_MS": "300"})
            assert done.returncode == 1, (done.stdout, done.stderr)
            assert f"waiting for lcg serve (pid {first.pid})" in done.stderr, done.stderr
            assert f"in use by lcg serve (pid {first.pid})" in done.stderr, done.stderr

            # The kernel releases the lock with the process: a new service starts.
            first.send_signal(signal.SIGKILL)
            assert first.wait(30) == -signal.SIGKILL
            keep.unlink()
            third = sf.spawn_serve(ws, log_name="third.log")
            try:
                sf.wait_healthy(sock, third)
                with Client(sock, timeout=60) as c:
                    assert c.call("health_check", {})["healthy"] is True
            finally:
                assert sf.stop_serve(third, sock) == 0
        finally:
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait(30)


def test_an_offline_mark_still_works_with_no_service() -> None:
    with sf.temp_workspace("lcg-lock-") as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            with Client(sock, timeout=60) as c:
                c.assert_entity(name="Ada", group_id="g")
        finally:
            assert sf.stop_serve(proc, sock) == 0
        done = sf.run_lcg(ws, "mark", "create", "m1", "--group", "g")
        assert done.returncode == 0, done.stderr
        assert "created mark 'm1' at seq 0" in done.stdout
