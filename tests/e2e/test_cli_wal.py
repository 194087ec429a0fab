"""``lcg`` on a temporary workspace: wal ls/tail/verify, mark. The real console script for
``--version`` and ``wal tail --follow`` (a process stopped with Ctrl-C); every other case in
this process through ``lcg.cli.main.main``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest

import lcg.cli.main as cli_main
from lcg.events.model import EpisodeAdded
from lcg.events.store import WalStore

#: A recorded time (events carry only times in this form, ADR 0150).
TS = "2024-05-01T12:00:00.000000Z"

REPO = Path(__file__).resolve().parents[2]
LCG = Path(sys.executable).with_name("lcg")
FIXTURES = REPO / "wal-fixtures"


class InProcess:
    """``lcg`` called in this process (fast) for the cases that need no real console script:
    every case but ``--version`` and ``wal tail --follow`` (ADR 0222)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, ws: Path, *args: str, check: int = 0) -> tuple[str, str]:
        """Run ``lcg -C ws ARGS``; return (stdout, stderr) after checking the exit status."""
        try:
            status = cli_main.main(["-C", str(ws), *args])
        except SystemExit as exc:  # argparse: --help and usage errors
            status = int(exc.code or 0)
        out, err = self.capsys.readouterr()
        assert status == check, (status, out, err)
        return out, err


@pytest.fixture
def inproc(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> InProcess:
    """Run ``lcg`` in-process, capturing its output, with no ``LCG_*`` setting inherited."""
    for key in [k for k in os.environ if k.startswith("LCG_")]:
        monkeypatch.delenv(key)
    return InProcess(capsys)


def _episode(group: str, i: int) -> EpisodeAdded:
    return EpisodeAdded(group_id=group, uuid=f"u{i}", name="n", content=f"c{i}", created_at=TS)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with two groups: ``liminis`` (7 events, 3 files) and ``team a`` (2)."""
    store = WalStore(tmp_path / ".lcg" / "wal", fsync="off", max_events_per_file=3)
    for i in range(7):
        store.append("liminis", [_episode("liminis", i)])
    store.append("team a", [_episode("team a", 0), _episode("team a", 1)])
    store.close()
    return tmp_path


def test_console_script_is_installed() -> None:
    assert LCG.is_file(), "run `make install`: the lcg console script is missing"
    done = subprocess.run([str(LCG), "--version"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (
        0,
        "lcg 0.1.0 (implements liminis-context-graph 0.13.3)",
    )


def test_wal_ls(ws: Path, inproc: InProcess) -> None:
    out = inproc(ws, "wal", "ls")[0].splitlines()
    assert out[0].split() == ["GROUP", "MIN_SEQ", "MAX_SEQ", "GENERATION", "FILES", "BYTES"]
    assert out[1].split()[:3] == ["liminis", "0", "6"] and out[1].split()[4] == "3"
    assert out[2].startswith("team a ")
    rows = json.loads(inproc(ws, "wal", "ls", "--json")[0])
    assert [(r["group_id"], r["directory"], r["max_seq"], r["files"]) for r in rows] == [
        ("liminis", "liminis", 6, 3),
        ("team a", "team%20a", 1, 1),
    ]
    assert all(len(r["generation"]) == 32 and r["generation_source"] == "sidecar" for r in rows)
    assert all(r["bytes"] > 0 for r in rows)


def test_wal_ls_on_an_empty_workspace(tmp_path: Path, inproc: InProcess) -> None:
    # A workspace with no stream yet (an empty directory is no workspace: exit 1, see
    # tests/e2e/test_cli_first_contact.py).
    (tmp_path / ".lcg" / "wal").mkdir(parents=True)
    assert "no streams under" in inproc(tmp_path, "wal", "ls")[0]
    assert json.loads(inproc(tmp_path, "wal", "ls", "--json")[0]) == []
    assert json.loads(inproc(tmp_path, "wal", "verify", "--json")[0]) == []


def test_wal_tail(ws: Path, inproc: InProcess) -> None:
    lines = inproc(ws, "wal", "tail", "-n", "2")[0].splitlines()
    assert [json.loads(x)["seq"] for x in lines] == [5, 6]
    assert json.loads(lines[0])["type"] == "EpisodeAdded"
    every = inproc(ws, "wal", "tail", "--group", "team a", "-n", "50")[0].splitlines()
    assert [json.loads(x)["content"] for x in every] == ["c0", "c1"]
    assert inproc(ws, "wal", "tail", "-n", "0")[0] == ""
    assert len(inproc(ws, "wal", "tail")[0].splitlines()) == 7
    one = json.loads(inproc(ws, "wal", "ls", "--group", "team a", "--json")[0])
    assert [r["group_id"] for r in one] == ["team a"]


def _read_line(stream: IO[str], timeout: float = 30.0) -> str:
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert got, "no line from lcg wal tail --follow"
    return got[0]


def test_wal_tail_follow_prints_new_lines_until_ctrl_c(ws: Path) -> None:
    env = {**os.environ, "LCG_TELEMETRY": "off"}
    proc = subprocess.Popen(
        [str(LCG), "-C", str(ws), "wal", "tail", "--follow", "-n", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert json.loads(_read_line(proc.stdout))["seq"] == 6
        store = WalStore(ws / ".lcg" / "wal", fsync="off", max_events_per_file=3)
        store.append("liminis", [_episode("liminis", 7), _episode("liminis", 8)])
        store.close()
        assert json.loads(_read_line(proc.stdout))["seq"] == 7
        assert json.loads(_read_line(proc.stdout))["seq"] == 8
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def test_wal_verify_ok(ws: Path, inproc: InProcess) -> None:
    out = inproc(ws, "wal", "verify")[0]
    assert "liminis: ok - 7 events (seq 0..6), 3 file(s)" in out
    assert "team a: ok - 2 events (seq 0..1)" in out
    results = json.loads(inproc(ws, "wal", "verify", "--json")[0])
    assert [(r["group_id"], r["ok"], r["events"], r["defects"]) for r in results] == [
        ("liminis", True, 7, []),
        ("team a", True, 2, []),
    ]


def _fixture_workspace(tmp_path: Path, name: str) -> Path:
    shutil.copytree(FIXTURES / name / "wal", tmp_path / ".lcg" / "wal")
    return tmp_path


@pytest.mark.parametrize(
    ("fixture", "status", "expect"),
    [
        ("seq-gap", 1, "defect: 1 seq gap(s)"),
        ("two-generations", 1, "defect: 2 generation mismatch lines"),
        ("unknown-event-type", 1, "defect: 1 unrecognised lines"),
        ("bad-lines", 1, "defect: 3 unparseable lines"),
        ("torn-tail", 0, "warning: the last line is torn"),
        ("dot-files-dropped", 0, "warning: .wal-generation.json is missing"),
        ("empty-stream", 0, "liminis: ok - 0 events (empty)"),
        ("rotated-files", 0, "liminis: ok - 10 events (seq 0..9), 3 file(s)"),
        ("v1-episode-added", 0, "liminis: ok - 2 events"),
    ],
)
def test_wal_verify_on_the_fixtures(
    tmp_path: Path, inproc: InProcess, fixture: str, status: int, expect: str
) -> None:
    ws = _fixture_workspace(tmp_path, fixture)
    out, _ = inproc(ws, "wal", "verify", check=status)
    assert expect in out, out


def test_wal_verify_json_counts_and_misnamed_file(tmp_path: Path, inproc: InProcess) -> None:
    ws = _fixture_workspace(tmp_path, "rotated-files")
    gdir = ws / ".lcg" / "wal" / "liminis"
    (gdir / "000000000004.jsonl").rename(gdir / "000000000003.jsonl")
    (result,) = json.loads(inproc(ws, "wal", "verify", "--json", check=1)[0])
    assert result["ok"] is False
    assert "000000000003.jsonl is named for seq 3 but its first line is seq 4" in result["defects"]
    ws2 = _fixture_workspace(tmp_path / "b", "bad-lines")
    (bad,) = json.loads(inproc(ws2, "wal", "verify", "--json", check=1)[0])
    assert (bad["unparseable_lines"], bad["failed_lines"], bad["events"]) == (3, 1, 3)
    assert [s["count"] for s in bad["samples"] if s["problem"] == "unparseable"] == [2, 1]


def test_percent_encoded_group_from_the_fixture(tmp_path: Path, inproc: InProcess) -> None:
    ws = _fixture_workspace(tmp_path, "percent-encoded-group")
    (row,) = json.loads(inproc(ws, "wal", "ls", "--json")[0])
    assert (row["group_id"], row["directory"]) == ("team a/ß%", "team%20a%2F%C3%9F%25")
    assert len(inproc(ws, "wal", "tail", "--group", "team a/ß%")[0].splitlines()) == 2


def test_marks_as_a_person_reads_them(ws: Path, inproc: InProcess) -> None:
    out = inproc(ws, "mark", "create", "before")[0]
    assert out.strip() == "created mark 'before' at seq 6 of group 'liminis'"
    again = inproc(ws, "mark", "create", "before", check=1)[1]
    assert again.strip() == 'Error: mark "before" already exists'
    table = inproc(ws, "mark", "list")[0].splitlines()
    assert table[0].split() == ["NAME", "SEQ", "REACHABLE", "GENERATION"]
    assert table[1].split()[:3] == ["before", "6", "yes"]


def _marks(inproc: InProcess, ws: Path, *args: str) -> list[str]:
    out, _ = inproc(ws, "mark", "list", "--json", *args)
    listed = json.loads(out)
    return [m["name"] for m in listed["checkpoints"]]


def test_marks(ws: Path, inproc: InProcess) -> None:
    made = json.loads(inproc(ws, "mark", "create", "early", "--seq", "2", "--json")[0])
    assert (made["success"], made["seq"], made["group_id"]) == (True, 2, "liminis")
    assert len(made["generation"]) == 32
    _, err = inproc(ws, "mark", "create", "late", "--seq", "7", check=1)
    assert err.startswith("Error: --seq 7 is past the end of the stream of group 'liminis'")
    _, err = inproc(ws, "mark", "create", "bad name", check=1)
    assert err.startswith("Error: invalid mark name 'bad name'")
    assert "is negative" in inproc(ws, "mark", "create", "x", "--seq", "-1", check=2)[1]
    inproc(ws, "mark", "create", "zz")
    assert _marks(inproc, ws) == ["early", "zz"]
    listed = json.loads(inproc(ws, "mark", "list", "--json")[0])
    assert listed["group_id"] == "liminis"
    assert [(m["seq"], m["reachable"]) for m in listed["checkpoints"]] == [(2, True), (6, True)]
    inproc(ws, "mark", "delete", "zz")
    assert "not found" in inproc(ws, "mark", "delete", "zz", check=1)[1]
    assert _marks(inproc, ws) == ["early"]
    deleted = json.loads(inproc(ws, "mark", "delete", "early", "--json")[0])
    assert deleted == {"success": True, "name": "early", "group_id": "liminis"}
    assert inproc(ws, "mark", "list")[0].strip() == "no marks in group 'liminis'"
    # Other groups, and the name can be reused after deletion.
    assert json.loads(inproc(ws, "mark", "create", "t", "-g", "team a", "--json")[0])["seq"] == 1
    assert _marks(inproc, ws, "--group", "team a") == ["t"]
    inproc(ws, "mark", "create", "early")
    assert _marks(inproc, ws) == ["early"]


def test_mark_on_an_empty_stream_has_a_null_seq(tmp_path: Path, inproc: InProcess) -> None:
    ws = _fixture_workspace(tmp_path, "empty-stream")
    made = json.loads(inproc(ws, "mark", "create", "start", "--json")[0])
    assert made["seq"] is None and made["generation"] == "a" * 32
    assert "at an empty stream" in inproc(ws, "mark", "create", "s2")[0]
    assert "past the end" in inproc(ws, "mark", "create", "s3", "--seq", "0", check=1)[1]


def test_errors_and_usage(ws: Path, inproc: InProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = inproc(ws, "wal", "tail", "--group", "nope", check=1)[1]
    assert missing.startswith("Error: group 'nope' has no stream under ")
    assert inproc(ws, check=2)[1].startswith("usage: lcg")
    assert inproc(ws, "wal", "verify", "--group", "nope", check=1)[1].startswith("Error: ")
    assert inproc(ws, "wal", check=2)[1].startswith("usage: lcg wal")
    assert "invalid choice" in inproc(ws, "wal", "bogus", check=2)[1]
    assert inproc(ws, "mark", "list", "--bogus", check=2)[1]
    # A bad setting is an LcgError too.
    monkeypatch.setenv("LCG_WAL_FSYNC", "sometimes")
    assert inproc(ws, "wal", "ls", check=1)[1].startswith("Error: LCG_WAL_FSYNC=")


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["wal"],
        ["wal", "ls"],
        ["wal", "tail"],
        ["wal", "verify"],
        ["mark"],
        ["mark", "create"],
        ["mark", "list"],
        ["mark", "delete"],
    ],
)
def test_every_command_has_help_with_an_example(args: list[str], inproc: InProcess) -> None:
    out, _ = inproc(Path("."), *args, "--help")
    assert out.startswith("usage: lcg")
    assert "\nExample:\n  " in out


def test_main_in_process_and_a_missing_command_module(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli_main.main(["-C", str(ws), "wal", "ls", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["group_id"] == "liminis"
    assert "lcg.cli.wal" in cli_main.COMMAND_MODULES and "lcg.cli.mark" in cli_main.COMMAND_MODULES
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", [*cli_main.COMMAND_MODULES, "lcg.cli.nope"])
    assert cli_main.main(["wal", "ls"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: command module 'lcg.cli.nope' (listed in")
    with pytest.raises(cli_main.CommandModuleError, match="has no register"):
        cli_main.build_parser(["lcg.errors"])
