"""A new user's first commands, as real ``lcg`` subprocesses (hash embedder, named as the test
double it is): a wrong socket fails at once, read-only commands create and change nothing,
output is for people, and messages use the CLI's own words.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _service_fixtures as sf  # noqa: E402


def lcg(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``lcg ARGS`` as a user would (the venv's interpreter, this checkout's code)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "ANTHROPIC_"))}
    return subprocess.run(
        [sf.python(), "-m", "lcg", *args],
        capture_output=True,
        text=True,
        cwd=str(cwd),
        env={**base, "LCG_EMBEDDER": "hash", **(env or {})},
        input=stdin,
        timeout=300,
        check=False,
    )


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time (ns)."""
    out: dict[str, tuple[int, int]] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns) if p.is_file() else (0, 0)
    return out


# ---- item 7: a wrong socket fails at once -------------------------------------------------


def test_mcp_connect_to_a_missing_socket_exits_at_startup(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sock"
    # No stdin is needed: the check happens before the MCP session starts.
    done = lcg("mcp", "--connect", str(missing), cwd=tmp_path, stdin="")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"no such file: {missing}" in done.stderr
    assert done.stdout == ""  # no MCP answer was ever written


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with one group ``g`` holding two entities (written through the service)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = sf.spawn_serve(ws)
    sock = ws / ".lcg" / "service.sock"
    try:
        sf.wait_healthy(sock, proc)
        with sf.Client(sock, timeout=60) as c:
            for name in ("Ada Lovelace", "Charles Babbage"):
                c.assert_entity(name=name, labels=["Person"], summary=f"{name}.", group_id="g")
    finally:
        assert sf.stop_serve(proc, sock) == 0
    return ws


def test_serve_prints_one_ready_line_for_people(workspace: Path) -> None:
    log = (workspace / "serve.log").read_text()  # the fixture's service: stdout and stderr
    ready = [line for line in log.splitlines() if line.startswith("lcg serve:")]
    assert len(ready) == 1, log
    line = ready[0]
    assert line.startswith(f"lcg serve: ready; workspace {workspace}, ")
    assert f"socket {workspace / '.lcg' / 'service.sock'}" in line
    assert "embedder hash-embedder-v1 (384-d)" in line
    assert "stop with Ctrl-C, `kill " in line and "knowledge_close" in line


def test_no_telemetry_lines_unless_asked(workspace: Path) -> None:
    for args in (("status",), ("verify",), ("replay", "--group", "g", "--force-clear")):
        done = lcg(*args, cwd=workspace)
        assert done.returncode == 0, done.stdout + done.stderr
        for stream in (done.stdout, done.stderr):
            assert '{"type"' not in stream, (args, stream)
    asked = lcg(
        "replay", "--group", "g", "--force-clear", cwd=workspace, env={"LCG_TELEMETRY": "on"}
    )
    records = [json.loads(x) for x in asked.stderr.splitlines() if x.startswith("{")]
    assert any(r["type"] == "wal_replay_complete" for r in records), asked.stderr


# ---- item 3: read-only commands never create or change anything ---------------------------

LOOKING = (
    ("status",),
    ("verify",),
    ("wal", "ls"),
    ("wal", "tail"),
    ("wal", "verify"),
    ("mark", "list"),
    ("replay", "--group", "g", "--dry-run"),
)


def test_commands_outside_a_workspace_exit_1_and_create_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    typo = tmp_path / "typo"
    for args in (*LOOKING, ("dump", "--to", str(tmp_path / "out"))):
        done = lcg(*args, cwd=empty)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert f"no lcg workspace at {empty} (`lcg serve` there creates one)" in done.stderr
        elsewhere = lcg("-C", str(typo), *args, cwd=empty)
        assert elsewhere.returncode == 1, (args, elsewhere.stderr)
        assert f"no lcg workspace at {typo} (the directory does not exist)" in elsewhere.stderr
    assert list(empty.iterdir()) == []
    assert not typo.exists() and not (tmp_path / "out").exists()


def test_status_with_another_embedder_changes_nothing_and_says_mismatch(workspace: Path) -> None:
    lcg_dir = workspace / ".lcg"
    sidecar = lcg_dir / "wal" / "g" / ".wal-embedding-model.json"
    before = sidecar.read_bytes()
    vectors = _tree(lcg_dir / "vectors")
    streams = _tree(lcg_dir / "wal")
    # The vectors were built by the hash embedder at 384 dimensions; configure 64.
    done = lcg("status", cwd=workspace, env={"LCG_EMBEDDING_DIM": "64"})
    assert "mismatch" in done.stdout, done.stdout + done.stderr
    assert "match\n" not in done.stdout.replace("mismatch", "")
    assert "re-embed the group with `lcg replay --group g --force-clear`" in done.stdout
    assert "configure hash" in done.stdout  # the embedder the vectors were built with
    # Nothing was re-embedded or rewritten: the vector snapshots, the streams and the
    # sidecar naming the vectors' embedder are byte for byte (and mtime) as they were.
    assert sidecar.read_bytes() == before
    assert _tree(lcg_dir / "vectors") == vectors
    assert _tree(lcg_dir / "wal") == streams
    # The configured embedder again: a match, and still nothing changed.
    again = lcg("status", cwd=workspace)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.rstrip().endswith("match") and "mismatch" not in again.stdout
    assert _tree(lcg_dir / "vectors") == vectors


def test_status_does_not_catch_up_a_stream_ahead_of_its_projections(workspace: Path) -> None:
    import shutil

    shutil.rmtree(workspace / ".lcg" / "vectors")
    done = lcg("status", cwd=workspace)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "wal_ahead" in done.stdout
    assert re.search(r"behind: group 'g' is applied to seq \S+ of 1;", done.stdout)
    assert "`lcg serve` applies the rest when it starts" in done.stdout
    assert not (workspace / ".lcg" / "vectors").exists()  # nothing was rebuilt


def test_dump_of_an_unknown_group_is_an_error_like_wal_tail(workspace: Path) -> None:
    tail = lcg("wal", "tail", "--group", "nosuch", cwd=workspace)
    dump = lcg("dump", "--group", "nosuch", "--to", str(workspace / "out"), cwd=workspace)
    assert tail.returncode == dump.returncode == 1
    assert "group 'nosuch' has no stream under" in tail.stderr
    assert dump.stderr == tail.stderr
    assert not (workspace / "out").exists()
