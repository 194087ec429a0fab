"""One holder, always reachable (issue 28 item 1, ADR 0199).

Whoever opened a workspace first locked everyone else out: with an agent's standalone
``lcg mcp`` open, ``lcg search``, ``ingest`` and ``status`` exited 1 (``held by lcg process
N``) and ``lcg watch`` served a socket of a workspace it could not open; a first ``lcg
ingest`` refused ``lcg search`` and ``lcg status`` the whole time. Now the holder serves the
workspace's socket while it holds it, and every other command goes through it. Real ``lcg``
subprocesses, a real socket, the official MCP SDK client; the hash embedder, or a fake
OpenAI-compatible one that holds its answers until the test lets them go (no sleeps).
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _service_fixtures as sf
from lcg.rpc.client import Client

#: Generous bound on anything a test waits for (a hang fails the test, never a slow machine).
WAIT_S = 120.0


def _until(predicate: Any, what: str) -> None:
    sf.eventually(predicate, what, step=0.05)


def _hits(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return [h["source_file"] for h in json.loads(done.stdout)]


def _spawn(ws: Path, *args: str, log: str, env: dict[str, str] | None = None) -> Any:
    with (ws / log).open("ab") as out:
        return subprocess.Popen(
            [str(sf.LCG), "-C", str(ws), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=sf.serve_env(env),
        )


def test_a_standalone_mcp_serves_the_shell_and_the_watcher(tmp_path: Path) -> None:
    ws = sf.short_tmp("lcg-holder-")
    sock = ws / ".lcg" / "service.sock"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "moon.md").write_text("# Moon\n\nThe tranquility base held the eagle lander.\n")
    watched = tmp_path / "journal"
    watched.mkdir()
    (watched / "day1.md").write_text("# Day one\n\nNothing happened.\n")

    async def agent() -> None:
        params = StdioServerParameters(
            command=str(sf.LCG), args=["-C", str(ws), "mcp"], env=sf.serve_env(), cwd=str(ws)
        )
        with (tmp_path / "mcp.log").open("a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    # The agent's process serves the workspace's socket while it is open.
                    await asyncio.to_thread(sf.wait_healthy, sock, None, WAIT_S)
                    await asyncio.to_thread(shell)
                    found = await session.call_tool(
                        "knowledge_search_passages", {"query": "tranquility eagle lander"}
                    )
                    assert found.structured_content is not None
                    files = [p["source_description"] for p in found.structured_content["passages"]]
                    assert any("notes/moon.md" in f for f in files), files

    def shell() -> None:
        done = sf.run_lcg(ws, "ingest", str(notes))
        assert done.returncode == 0, done.stderr
        assert "through the running service" in done.stderr, done.stderr
        assert "notes/moon.md" in _hits(sf.run_lcg(ws, "search", "eagle lander", "--json"))
        status = sf.run_lcg(ws, "status", "--json")
        assert status.returncode == 0, (status.stdout, status.stderr)
        assert json.loads(status.stdout)["served_by"] == "service"
        watch = _spawn(ws, "watch", str(watched), log="watch.log")
        try:
            log = ws / "watch.log"
            _until(lambda: "watching 1 tree" in log.read_text(), "the watcher syncs")
            assert "using the service running" in log.read_text()
            (watched / "day2.md").write_text("# Day two\n\nA wombat visited the garden.\n")
            with Client(sock, timeout=60) as c:
                _until(
                    lambda: any(
                        "wombat" in p["content"]
                        for p in c.search_passages("wombat garden", min_score=0.0)["passages"]
                    ),
                    "a saved file is searchable",
                )
            watch.send_signal(signal.SIGINT)
            assert watch.wait(60) == 0, log.read_text()
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.wait(10)

    asyncio.run(asyncio.wait_for(agent(), 300))
    # The agent is gone, and its socket with it: the next command holds, and answers.
    assert not sock.exists()
    done = sf.run_lcg(ws, "search", "wombat", "--json")
    assert "journal/day2.md" in _hits(done), done.stderr
    assert not sock.exists(), "nothing lingers after the command"


class HeldLLM:
    """A FAKE chat-completions endpoint that holds every request until ``release()``, then
    answers each (and every later one) 400: the extraction fails and its chunks stay
    pending. An ingest that takes as long as the test wants."""

    ANSWER = (
        b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
        b"Content-Length: 27\r\nConnection: close\r\n\r\n"
        b'{"error": "held, then no"}\n'
    )

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        #: Set once a request came in: the ingest is extracting.
        self.asked = threading.Event()
        self.released = threading.Event()
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while conn.recv(65536):
                self.asked.set()
                self.released.wait(300)
                conn.sendall(self.ANSWER)
                break
        except OSError:
            pass
        finally:
            conn.close()

    def release(self) -> None:
        """Answer every held request and every later one (400)."""
        self.released.set()

    def close(self) -> None:
        """Answer what is held, and stop listening."""
        self.released.set()
        self.sock.close()


def test_search_and_status_answer_during_a_long_first_ingest(tmp_path: Path) -> None:
    ws = sf.short_tmp("lcg-holder-")
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(10):
        (notes / f"n{i:02}.md").write_text(f"# Note {i}\n\nThe platypus number {i}.\n")
    llm = HeldLLM()
    env = {"LCG_EXTRACTION_URL": llm.url}
    ingest = _spawn(ws, "ingest", str(notes), log="ingest.log", env=env)
    try:
        assert llm.asked.wait(WAIT_S), (ws / "ingest.log").read_text()
        # The first ingest is under way (its extraction waits): the shell is answered.
        status = sf.run_lcg(ws, "status", "--json", env=env)
        assert status.stdout, status.stderr
        assert json.loads(status.stdout)["served_by"] == "service", status.stdout
        search = sf.run_lcg(ws, "search", "platypus", "--json", env=env)
        assert search.returncode == 0, search.stderr
        assert "held by" not in search.stderr + status.stderr
        assert ingest.poll() is None, "the ingest was to be still running"
        llm.release()
        assert ingest.wait(WAIT_S) == 0, (ws / "ingest.log").read_text()
        assert len(_hits(sf.run_lcg(ws, "search", "platypus", "--json", env=env))) > 0
    finally:
        llm.close()
        if ingest.poll() is None:
            ingest.kill()
            ingest.wait(10)


def test_two_commands_racing_for_an_empty_workspace_both_succeed(tmp_path: Path) -> None:
    ws = sf.short_tmp("lcg-holder-")
    trees = []
    for name in ("alpha", "beta"):
        tree = tmp_path / name
        tree.mkdir()
        for i in range(30):
            (tree / f"{name}{i}.md").write_text(f"# {name} {i}\n\nthe {name} word {i}\n")
        trees.append(tree)
    procs = [_spawn(ws, "ingest", str(tree), log=f"{tree.name}.log") for tree in trees]
    try:
        for proc, tree in zip(procs, trees, strict=True):
            assert proc.wait(WAIT_S) == 0, (ws / f"{tree.name}.log").read_text()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert not (ws / ".lcg" / "service.sock").exists()
    files = _hits(sf.run_lcg(ws, "search", "word", "--json", "-n", "100"))
    assert any(f.startswith("alpha/") for f in files) and any(
        f.startswith("beta/") for f in files
    ), files
