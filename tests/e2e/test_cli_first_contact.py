"""A new user's first commands (hash embedder, named as the test double it is): a wrong socket
fails at once, read-only commands create and change nothing, output is for people, and
messages use the CLI's own words.

``python -m lcg`` runs as a real process where the process is the point (``lcg mcp`` on a
closed stdin, ``lcg serve``); every other command runs in this process through
``lcg.cli.main.main`` (conftest's ``lcg_main``), on a copy of a workspace written once per
module by a real ``lcg serve`` (ADR 0222).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import _service_fixtures as sf

Lcg = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def lcg(lcg_main: sf.LcgMain) -> Lcg:
    """``lcg(*args, cwd=DIR, env=...)``: ``lcg ARGS`` run in ``DIR`` in this process, with no
    ``LCG_TELEMETRY`` unless ``env`` sets it (a user's shell has none)."""

    def run(
        *args: str, cwd: Path, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return lcg_main(None, *args, cwd=cwd, env={"LCG_TELEMETRY": None, **(env or {})})

    return run


def lcg_process(
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


# ---- item 7 (changed by issue 19 item 5): a missing socket is warned about at once ---------


def test_mcp_connect_to_a_missing_socket_warns_at_startup(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sock"
    # Attached MCP starts before its service (editors launch it at login): it serves the
    # static tool list and says at once, on stderr, that nothing serves there yet.
    done = lcg_process("mcp", "--connect", str(missing), cwd=tmp_path, stdin="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"the service at {missing} is not running" in done.stderr
    assert "lcg serve" in done.stderr
    assert done.stdout == ""  # stdin closed at once: no request, no answer


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A workspace with one group ``g`` holding two entities (written through the service),
    written once per module; tests change copies of it (``workspace``)."""
    ws = tmp_path_factory.mktemp("first-contact") / "ws"
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
    yield ws


@pytest.fixture
def workspace(prepared: Path, tmp_path: Path) -> Path:
    """A copy of the prepared workspace, the test's own to change."""
    ws = tmp_path / "ws"
    shutil.copytree(prepared, ws, symlinks=True)
    return ws


def test_serve_prints_one_ready_line_for_people(prepared: Path) -> None:
    workspace = prepared
    log = (workspace / "serve.log").read_text()  # the fixture's service: stdout and stderr
    ready = [line for line in log.splitlines() if line.startswith("lcg serve:")]
    assert len(ready) == 1, log
    line = ready[0]
    assert line.startswith(f"lcg serve: ready; workspace {workspace}, ")
    assert f"socket {workspace / '.lcg' / 'service.sock'}" in line
    assert "embedder hash-embedder-v1 (384-d)" in line
    assert "stop with Ctrl-C, `kill " in line and "knowledge_close" in line


def test_no_telemetry_lines_unless_asked(workspace: Path, lcg: Lcg) -> None:
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


def test_commands_outside_a_workspace_exit_1_and_create_nothing(tmp_path: Path, lcg: Lcg) -> None:
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


def test_status_with_another_embedder_changes_nothing_and_says_mismatch(
    workspace: Path, lcg: Lcg
) -> None:
    lcg_dir = workspace / ".lcg"
    sidecar = lcg_dir / "wal" / "g" / ".wal-embedding-model.json"
    before = sidecar.read_bytes()
    vectors = _tree(lcg_dir / "vectors")
    streams = _tree(lcg_dir / "wal")
    everything = _tree(lcg_dir)
    # The vectors were built by the hash embedder at 384 dimensions; configure 64.
    done = lcg("status", cwd=workspace, env={"LCG_EMBEDDING_DIM": "64"})
    assert "mismatch" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 1  # not healthy: vector search is not served as configured
    assert "match\n" not in done.stdout.replace("mismatch", "")
    assert "re-embed the group with `lcg replay --group g --force-clear`" in done.stdout
    assert "configure hash-embedder-v1 (384-d) again" in done.stdout  # what built them
    # Nothing was re-embedded or rewritten: the vector snapshots, the streams, the sidecar
    # naming the vectors' embedder and the graph are byte for byte (and mtime) as they were.
    assert sidecar.read_bytes() == before
    assert _tree(lcg_dir / "vectors") == vectors
    assert _tree(lcg_dir / "wal") == streams
    assert _tree(lcg_dir) == everything
    # The configured embedder again: a match, and still nothing changed.
    again = lcg("status", cwd=workspace)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.rstrip().endswith("match") and "mismatch" not in again.stdout
    assert _tree(lcg_dir / "vectors") == vectors


def test_verify_with_another_embedder_says_why_and_changes_nothing(
    workspace: Path, lcg: Lcg
) -> None:
    lcg_dir = workspace / ".lcg"
    vectors, streams = _tree(lcg_dir / "vectors"), _tree(lcg_dir / "wal")
    done = lcg("verify", cwd=workspace, env={"LCG_EMBEDDING_DIM": "64"})
    assert done.returncode == 1
    assert "the vectors of group 'g' were built with hash-embedder-v1 (384-d)" in done.stdout
    assert "the configured embedder is hash-embedder-v1 (64-d)" in done.stdout
    assert _tree(lcg_dir / "vectors") == vectors and _tree(lcg_dir / "wal") == streams
    ok = lcg("verify", cwd=workspace)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.splitlines()[-1] == "verify: ok"


def test_status_does_not_catch_up_a_stream_ahead_of_its_projections(
    workspace: Path, lcg: Lcg
) -> None:
    shutil.rmtree(workspace / ".lcg" / "vectors")
    done = lcg("status", cwd=workspace)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "wal_ahead" in done.stdout
    assert re.search(r"behind: group 'g' is applied to seq \S+ of 1;", done.stdout)
    assert "`lcg serve` applies the rest when it starts" in done.stdout
    assert not (workspace / ".lcg" / "vectors").exists()  # nothing was rebuilt


def test_status_recreates_no_deleted_projection_or_cache(workspace: Path, lcg: Lcg) -> None:
    lcg_dir = workspace / ".lcg"
    for name in ("db", "vectors", "cache"):
        shutil.rmtree(lcg_dir / name)
    before = _tree(lcg_dir)
    done = lcg("status", "--json", cwd=workspace)
    assert done.returncode == 1, done.stdout + done.stderr  # the group lags: said, not fixed
    report = json.loads(done.stdout)
    assert report["wal_groups"]["g"]["hydration_status"] == "wal_ahead"
    assert report["entity_count"] == 0  # an empty graph was looked at, outside the workspace
    assert _tree(lcg_dir) == before
    assert not any((lcg_dir / name).exists() for name in ("db", "vectors", "cache"))


def test_dump_of_an_unknown_group_is_an_error_like_wal_tail(workspace: Path, lcg: Lcg) -> None:
    tail = lcg("wal", "tail", "--group", "nosuch", cwd=workspace)
    dump = lcg("dump", "--group", "nosuch", "--to", str(workspace / "out"), cwd=workspace)
    assert tail.returncode == dump.returncode == 1
    assert "group 'nosuch' has no stream under" in tail.stderr
    assert dump.stderr == tail.stderr
    assert not (workspace / "out").exists()


# ---- item 6: messages name the CLI's own words --------------------------------------------


def test_replay_refusal_names_the_option_and_dry_run_reads_and_counts(
    workspace: Path, lcg: Lcg
) -> None:
    refused = lcg("replay", "--group", "g", cwd=workspace)
    assert refused.returncode == 1
    assert "pass --force-clear to purge" in refused.stderr
    assert "force_clear=true" not in refused.stderr
    lcg_dir = workspace / ".lcg"
    before = _tree(lcg_dir)
    dry = lcg("replay", "--group", "g", "--dry-run", cwd=workspace)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert dry.stdout.startswith("group g: dry run, nothing changed: 2 events would be replayed")
    assert "(seq 0 to 1) from 1 files" in dry.stdout
    assert _tree(lcg_dir) == before  # only read


def test_a_one_event_group_replays_as_one_event_in_one_file(tmp_path: Path, lcg: Lcg) -> None:
    ws = tmp_path / "one"
    ws.mkdir()
    proc = sf.spawn_serve(ws)
    sock = ws / ".lcg" / "service.sock"
    try:
        sf.wait_healthy(sock, proc)
        with sf.Client(sock, timeout=60) as c:
            c.assert_entity(name="Ada Lovelace", labels=["Person"], group_id="g")
        # Through the running service, then directly on the files.
        served = lcg("replay", "--group", "g", "--force-clear", cwd=ws)
    finally:
        assert sf.stop_serve(proc, sock) == 0
    direct = lcg("replay", "--group", "g", "--force-clear", cwd=ws)
    for done in (served, direct):
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith("group g: 1 events replayed; last seq 0; 1 files"), (
            done.stdout
        )


def test_mark_create_goes_through_the_service_and_says_mark(tmp_path: Path, lcg: Lcg) -> None:
    ws = tmp_path / "m"
    ws.mkdir()
    proc = sf.spawn_serve(ws)
    sock = ws / ".lcg" / "service.sock"
    try:
        sf.wait_healthy(sock, proc)
        with sf.Client(sock, timeout=60) as c:
            for name in ("Ada Lovelace", "Charles Babbage", "Alan Turing"):
                c.assert_entity(name=name, labels=["Person"], group_id="notes")
            applied = c.status()["wal_groups"]["notes"]["applied_seq"]
        made = lcg("mark", "create", "before", "--group", "notes", "--json", cwd=ws)
        assert made.returncode == 0, made.stderr
        # The mark is the one the service makes: at the seq it has applied.
        assert json.loads(made.stdout)["seq"] == applied == 2
        again = lcg("mark", "create", "before", "--group", "notes", cwd=ws)
        assert again.returncode == 1
        assert 'mark "before" already exists' in again.stderr and "checkpoint" not in again.stderr
        pinned = lcg("mark", "create", "x", "--group", "notes", "--seq", "1", cwd=ws)
        assert pinned.returncode == 1
        assert "--seq cannot be used while `lcg serve` runs" in pinned.stderr
        gone = lcg("mark", "delete", "before", "--group", "notes", cwd=ws)
        assert gone.returncode == 0, gone.stderr
    finally:
        assert sf.stop_serve(proc, sock) == 0
    # Without a service: the stream's end; a seq past it names the group once, quoted.
    past = lcg("mark", "create", "y", "--group", "notes", "--seq", "9", cwd=ws)
    assert past.returncode == 1
    assert "past the end of the stream of group 'notes' (max seq 2)" in past.stderr
    assert "''s" not in past.stderr
    direct = lcg("mark", "create", "z", "--group", "notes", cwd=ws)
    assert direct.stdout == "created mark 'z' at seq 2 of group 'notes'\n", direct.stderr
    listed = lcg("mark", "list", "--group", "notes", cwd=ws)
    assert listed.stdout.splitlines()[0].split() == ["NAME", "SEQ", "REACHABLE", "GENERATION"]


# ---- item 1: data kept outside the repository is named when missing -----------------------


def test_longmemeval_names_the_missing_data_and_where(tmp_path: Path, lcg: Lcg) -> None:
    data = tmp_path / "lme"
    data.mkdir()
    (data / "sessions.jsonl").write_text("")
    done = lcg("eval", "longmemeval", "--data", str(data), cwd=tmp_path)
    assert done.returncode == 1
    assert f"questions-dev.jsonl not found in {data}" in done.stderr
    assert "pass --data DIR, the folder holding sessions.jsonl and questions-dev.jsonl" in (
        done.stderr
    )
    assert not (tmp_path / ".lcg").exists()  # nothing was set up for a run that cannot start
