"""``lcg ingest`` of a folder an attacker handed over (issue 27 items 2-4, ADR 0192): links out
of the tree are never read (a key file beside it stays out of the group and its stream), and
no single input stalls or stops the run — an ignore pattern exponential for a backtracking
matcher, ``<a<a<a…`` HTML, a heading line of spaces, JSON nested past the decoder, a FIFO, a
file name that is not UTF-8, a folder 1,000 deep. A file that cannot be read this run keeps
what the group holds of it; deleted, it goes.

Each ingest that once hung runs as a real ``lcg ingest`` subprocess with a 60 s timeout: the
timeout is the failure. The read error is injected in-process (``_hostile_trees.deny``) when
the suite runs as root (a chmod does not stop root), and is a real chmod 000 otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
import lcg.cli.main as cli_main
from _hostile_trees import chain, deny, unchain

LINK = "symbolic link (not followed)"


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body) if isinstance(body, bytes) else path.write_text(body)
    return root


def _ingest(ws: Path, tree: Path) -> dict[str, Any]:
    """``lcg ingest TREE --json`` as a subprocess; a run past 60 s is a hang, and fails."""
    try:
        done = subprocess.run(
            [str(sf.LCG), "-C", str(ws), "ingest", str(tree), "--json", "-s"],
            capture_output=True,
            text=True,
            env=sf.serve_env(),
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"lcg ingest {tree.name} did not finish in 60 s")
    assert done.returncode == 0, done.stderr[-3000:]
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def _skipped(summary: dict[str, Any]) -> dict[str, str]:
    return {s["path"]: s["reason"] for t in summary["trees"] for s in t["skipped"]}


def _served(ws: Path, query: str) -> list[dict[str, Any]]:
    done = sf.run_lcg(ws, "search", query, "--json", "-n", "50")
    assert done.returncode == 0, done.stderr
    hits: list[dict[str, Any]] = json.loads(done.stdout)
    return hits


def _stream_text(ws: Path) -> str:
    return json.dumps(sf.stream_events(ws / ".lcg" / "wal"))


def test_links_out_of_the_tree_are_never_read_nor_stored(tmp_path: Path) -> None:
    outside = _write(
        tmp_path / "home",
        {"id_ed25519": "OPENSSH PRIVATE KEY zebracrypt", "creds/token.md": "token quokkaword"},
    )
    notes = _write(tmp_path / "notes", {"real.md": "The real note about telescopes.\n"})
    (notes / "key.md").symlink_to(outside / "id_ed25519")
    (notes / "creds").symlink_to(outside / "creds")
    (notes / "alias.md").symlink_to(notes / "real.md")
    (notes / "status.txt").symlink_to("/proc/self/status")
    ws = tmp_path / "ws"
    summary = _ingest(ws, notes)
    assert summary["files_new"] == 1  # the real note once, not again through its alias
    assert _skipped(summary) == {
        "notes/key.md": LINK,
        "notes/creds": LINK,
        "notes/alias.md": LINK,
        "notes/status.txt": LINK,
    }
    assert [h["source_file"] for h in _served(ws, "telescopes")] == ["notes/real.md"]
    served = " ".join(h["text"] for h in _served(ws, "zebracrypt quokkaword PRIVATE KEY"))
    assert "zebracrypt" not in served and "quokkaword" not in served
    stream = _stream_text(ws)
    assert "zebracrypt" not in stream and "quokkaword" not in stream and "VmRSS" not in stream


def test_an_ignore_pattern_exponential_for_backtracking_is_decided(tmp_path: Path) -> None:
    notes = _write(
        tmp_path / "notes",
        {
            ".gitignore": "a*" * 30 + "b\n",
            "a" * 40: "forty letters a, no b: not ignored\n",
            "a" * 30 + "b": "thirty a then b: ignored\n",
            "plain.md": "a plain note\n",
        },
    )
    summary = _ingest(tmp_path / "ws", notes)
    assert summary["files_new"] == 2
    assert summary["trees"][0]["files_ignored"] == 2  # the "…b" file and .gitignore
    files = {h["source_file"] for h in _served(tmp_path / "ws", "letters note ignored")}
    assert files == {"notes/" + "a" * 40, "notes/plain.md"}


def test_hostile_contents_finish_and_the_rest_is_stored(tmp_path: Path) -> None:
    notes = _write(
        tmp_path / "notes",
        {
            "bomb.html": "<a" * 950_000,  # 1.9 MB: quadratic for html.parser
            "spaces.md": "# a" + " " * 1_500_000 + "b\n\nunder the spaced heading\n",
            "deep.json": "[" * 5_000 + "]" * 5_000,  # deeper than the JSON decoder goes
            "moon.md": "# Moon\n\nThe lander touched the grey dust.\n",
        },
    )
    ws = tmp_path / "ws"
    summary = _ingest(ws, notes)
    assert summary["files_new"] == 3  # the bomb holds no text
    assert _served(ws, "lander grey dust")[0]["source_file"] == "notes/moon.md"
    spaced = _served(ws, "under the spaced heading")
    assert any(h["source_file"] == "notes/spaces.md" for h in spaced)


def test_a_fifo_bad_names_and_a_deep_folder_leave_the_rest_stored(tmp_path: Path) -> None:
    notes = _write(tmp_path / "notes", {"moon.md": "The lander touched the grey dust.\n"})
    os.mkfifo(notes / "pipe.md")
    (notes / os.fsdecode(b"caf\xe9.md")).write_text("latin-1 name\n")
    chain(notes, 1000, "bottom.md")
    try:
        summary = _ingest(tmp_path / "ws", notes)
    finally:
        unchain(notes, 1000, "bottom.md")
    assert summary["files_new"] == 1
    assert _skipped(summary) == {
        "notes/pipe.md": "not a regular file (a FIFO)",
        "notes/caf\\xe9.md": "name is not UTF-8 (not read)",
        "notes/" + "/".join(["d"] * 257): "too deep: more than 256 nested folders (not read)",
    }
    assert _served(tmp_path / "ws", "lander grey dust")[0]["source_file"] == "notes/moon.md"


#: ``lcg -C WS ARGS`` in this process: (exit status, stdout, stderr).
Lcg = Callable[..., tuple[int, str, str]]


@pytest.fixture
def lcg(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Lcg:
    for key in [k for k in os.environ if k.startswith("LCG_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")
    monkeypatch.setenv("LCG_TELEMETRY", "off")

    def call(ws: Path, *args: str) -> tuple[int, str, str]:
        status = cli_main.main(["-C", str(ws), *args])
        out, err = capsys.readouterr()
        return status, out, err

    return call


def test_an_unreadable_file_keeps_its_chunks_until_it_is_deleted(
    tmp_path: Path, lcg: Lcg, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = _write(
        tmp_path / "notes",
        {"moon.md": "The lander touched the grey dust.\n", "mars.md": "Olympus Mons rises.\n"},
    )
    ws = tmp_path / "ws"

    def ingest() -> dict[str, Any]:
        status, out, err = lcg(ws, "ingest", str(notes), "--json")
        assert status == 0, err
        summary: dict[str, Any] = json.loads(out)
        return summary

    def mars() -> list[str]:
        status, out, err = lcg(ws, "search", "Olympus Mons", "--json")
        assert status == 0, err
        return [h["source_file"] for h in json.loads(out) if "Olympus" in h["text"]]

    assert ingest()["files_new"] == 2
    if os.geteuid() == 0:
        with deny(monkeypatch, "mars.md"):
            again = ingest()
    else:
        (notes / "mars.md").chmod(0)
        try:
            again = ingest()
        finally:
            (notes / "mars.md").chmod(0o644)
    assert (again["files_removed"], again["chunks_removed"]) == (0, 0)
    assert _skipped(again)["notes/mars.md"].startswith("unreadable this run (Permission denied)")
    assert mars() == ["notes/mars.md"]
    (notes / "mars.md").unlink()
    gone = ingest()
    assert (gone["files_removed"], gone["chunks_removed"]) == (1, 1)
    assert "notes/mars.md" not in mars()
