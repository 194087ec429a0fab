"""A clean stop (issue 28 item 6, ADR 0197), on real processes: SIGTERM or Ctrl-C (SIGINT to the
whole process group, as a terminal sends it) ends ``lcg serve`` and a self-serving ``lcg watch``
with exit status 0, within the grace (``LCG_SHUTDOWN_TIMEOUT_MS``) plus 2 s even while an LLM
call hangs, with no traceback and no "closing the service failed"; the workspace lock goes with
the process, so a new ``lcg serve`` starts on the same workspace at once.

The LLM is a FAKE OpenAI-compatible endpoint on 127.0.0.1 that takes the request and never
answers. The bound on the exit is the behaviour under test; the ``SLACK_S`` added to it is for
a loaded machine (the process starts its exit within the bound; the test's wait may lag)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import _service_fixtures as sf
from fake_embeddings import FakeEmbeddingsServer, free_port
from lcg.rpc.client import Client

#: The grace given to in-flight calls (``LCG_SHUTDOWN_TIMEOUT_MS``), in seconds.
GRACE_S = 1.0
#: What a loaded test machine may add to the process's own grace + 2 s.
SLACK_S = 3.0
#: What a stop must never print.
NEVER = ("Traceback", "KeyboardInterrupt", "closing the service failed")


class HangingLLM:
    """A FAKE chat-completions endpoint: it reads each request and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        #: Set once a request came in: an LLM call is in flight.
        self.asked = threading.Event()
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            self._held.append(conn)
            if conn.recv(65536):
                self.asked.set()

    def close(self) -> None:
        """Stop listening and drop the held connections."""
        self.sock.close()
        for conn in self._held:
            conn.close()


@contextmanager
def _hanging_llm() -> Iterator[HangingLLM]:
    llm = HangingLLM()
    try:
        yield llm
    finally:
        llm.close()


def _spawn(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``lcg -C WS ARGS`` in a process group of its own (as a terminal's foreground job), its
    output in ``WS/out.log``."""
    with (ws / "out.log").open("ab") as out:
        return subprocess.Popen(
            [str(sf.LCG), "-C", str(ws), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=sf.serve_env(env),
            cwd=str(ws),
            start_new_session=True,
        )


def _llm_env(llm: HangingLLM) -> dict[str, str]:
    return {"LCG_EXTRACTION_URL": llm.url, "LCG_SHUTDOWN_TIMEOUT_MS": str(int(GRACE_S * 1000))}


def _call_the_llm(sock: Path, llm: HangingLLM) -> None:
    """Start an ``add_episode`` whose extraction waits on ``llm``; return once it does."""

    def add() -> None:
        try:
            with Client(sock, timeout=300) as c:
                c.add_episode("meeting", "Alice met Bob in Paris.")
        except Exception:  # noqa: BLE001 - the stop cuts it: what it answers is not the point
            pass

    threading.Thread(target=add, daemon=True).start()
    assert llm.asked.wait(120), "the service never called the LLM"


def _stopped_in_time(proc: subprocess.Popen[bytes], ws: Path) -> str:
    """Wait the grace + 2 s (+ slack) for the exit; its status must be 0. The log, checked."""
    try:
        status = proc.wait(timeout=GRACE_S + 2 + SLACK_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        raise AssertionError(
            f"still running {GRACE_S + 2 + SLACK_S:g} s after the stop:\n"
            + (ws / "out.log").read_text()
        ) from None
    log = (ws / "out.log").read_text()
    assert status == 0, log
    for text in NEVER:
        assert text not in log, log
    return log


def _serve_starts_again(ws: Path) -> None:
    """A new ``lcg serve`` takes the workspace (its lock was released) and is healthy."""
    sock = ws / ".lcg" / "service.sock"
    again = sf.spawn_serve(ws, log_name="again.log")
    try:
        sf.wait_healthy(sock, again)
    finally:
        assert sf.stop_serve(again, sock) == 0, (ws / "again.log").read_text()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


def test_sigterm_cuts_a_hanging_llm_call_after_the_grace_and_frees_the_workspace() -> None:
    with sf.temp_workspace() as ws, _hanging_llm() as llm:
        sock = ws / ".lcg" / "service.sock"
        proc = _spawn(ws, "serve", env=_llm_env(llm))
        try:
            sf.wait_healthy(sock, proc)
            _call_the_llm(sock, llm)
            proc.send_signal(signal.SIGTERM)
            _stopped_in_time(proc, ws)
        finally:
            _kill(proc)
        _serve_starts_again(ws)


def test_ctrl_c_on_serve_stops_it_without_a_traceback() -> None:
    with sf.temp_workspace() as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = _spawn(ws, "serve")
        try:
            sf.wait_healthy(sock, proc)
            # The Cypher worker runs: the terminal's SIGINT reaches it too.
            with Client(sock, timeout=60) as c:
                c.call("knowledge_query_cypher", {"query": "MATCH (e:Entity) RETURN e.name"})
            os.killpg(proc.pid, signal.SIGINT)
            _stopped_in_time(proc, ws)
        finally:
            _kill(proc)
        _serve_starts_again(ws)


def test_ctrl_c_on_a_self_serving_watch_with_a_hanging_llm_call(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nAlice met Bob in Paris.\n")
    with sf.temp_workspace() as ws, _hanging_llm() as llm:
        sock = ws / ".lcg" / "service.sock"
        proc = _spawn(ws, "watch", str(notes), env=_llm_env(llm))
        try:
            sf.wait_healthy(sock, proc)
            # The watcher's first sync extracts the new chunk: its LLM call hangs.
            assert llm.asked.wait(120), (ws / "out.log").read_text()
            os.killpg(proc.pid, signal.SIGINT)
            log = _stopped_in_time(proc, ws)
            assert log.rstrip().endswith("stopped"), log
            assert "went away" not in log, log
        finally:
            _kill(proc)
        _serve_starts_again(ws)


@pytest.mark.parametrize("stop", ["SIGTERM", "Ctrl-C"])
def test_a_stop_of_a_standalone_mcp_cuts_a_hanging_llm_call_and_frees_the_workspace(
    stop: str,
) -> None:
    """A standalone ``lcg mcp`` holds the workspace and serves its socket (ADR 0199): SIGTERM,
    or Ctrl-C to its process group, with an LLM call in flight on that socket ends it as it
    ends ``lcg serve``."""
    with sf.temp_workspace() as ws, _hanging_llm() as llm:
        sock = ws / ".lcg" / "service.sock"
        with (ws / "out.log").open("ab") as out:
            proc = subprocess.Popen(
                [str(sf.LCG), "-C", str(ws), "mcp"],
                stdin=subprocess.PIPE,  # the agent's end, kept open: stdio does not end it
                stdout=subprocess.DEVNULL,
                stderr=out,
                env=sf.serve_env(_llm_env(llm)),
                cwd=str(ws),
                start_new_session=True,
            )
        try:
            sf.wait_healthy(sock, proc)
            _call_the_llm(sock, llm)
            if stop == "SIGTERM":
                proc.send_signal(signal.SIGTERM)
            else:
                os.killpg(proc.pid, signal.SIGINT)
            _stopped_in_time(proc, ws)
        finally:
            _kill(proc)
            assert proc.stdin is not None
            proc.stdin.close()
        _serve_starts_again(ws)


@pytest.mark.parametrize("stop", ["SIGTERM", "Ctrl-C"])
def test_a_stop_of_follow_with_a_search_held_by_the_embedder(tmp_path: Path, stop: str) -> None:
    """``lcg follow`` serves a replica: SIGTERM, or Ctrl-C to its process group, while a
    search waits on an embedder that does not answer, ends it with status 0, no traceback,
    within the grace + 2 s (the held call is cut, as ``lcg serve`` cuts one)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nThe platypus lays eggs.\n")
    embedder = FakeEmbeddingsServer(port=free_port())
    try:
        with sf.temp_workspace("lcg-pub-") as pub, sf.temp_workspace() as ws:
            done = sf.run_lcg(pub, "ingest", str(notes), "--group", "team")
            assert done.returncode == 0, done.stderr
            sock = ws / ".lcg" / "service.sock"
            env = {
                "LCG_EMBEDDER": "",
                "LCG_EMBEDDING_URL": embedder.url,
                "LCG_SHUTDOWN_TIMEOUT_MS": str(int(GRACE_S * 1000)),
            }
            proc = _spawn(ws, "follow", str(pub / ".lcg" / "wal"), env=env)
            try:
                sf.wait_healthy(sock, proc)
                embedder.state.release.clear()
                asked = len(embedder.state.requests)

                def search() -> None:
                    try:
                        with Client(sock, timeout=300) as c:
                            c.call("knowledge_search_passages", {"query": "HOLDME platypus"})
                    except Exception:  # noqa: BLE001 - the stop cuts it
                        pass

                threading.Thread(target=search, daemon=True).start()
                # The search is held there.
                sf.eventually(
                    lambda: len(embedder.state.requests) != asked,
                    lambda: (ws / "out.log").read_text(),
                    proc=proc,
                )
                if stop == "SIGTERM":
                    proc.send_signal(signal.SIGTERM)
                else:
                    os.killpg(proc.pid, signal.SIGINT)
                _stopped_in_time(proc, ws)
            finally:
                embedder.state.release.set()
                _kill(proc)
    finally:
        embedder.state.release.set()
        embedder.stop()
