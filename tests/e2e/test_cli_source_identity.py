"""A tree is a source with an identity (issue 28 item 2, ADR 0200), through the real ``lcg
ingest`` and ``lcg sources`` on real temporary folders: two folders of one name, two files of
one name, an empty or missing tree, a file inside an indexed tree, a nested source, a renamed
root, a tree an older lcg stored, ``lcg sources`` list and remove (in this process and through
a running ``lcg serve``), and a replay and ``lcg verify`` that agree after each.

The CLI runs in this process (``lcg.cli.main.main``) where nothing needs a process of its own;
the service is a real subprocess. Hash embedder: the test double.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
import lcg.cli.main as cli_main
from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest.sources import ChunkIn, plan_sync, scan_tree, sync_chunks
from lcg.workspace import Workspace

#: ``lcg -C WS ARGS`` in this process: (exit status, stdout, stderr).
Lcg = Callable[..., tuple[int, str, str]]
GROUP = "liminis"


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


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return root


def _ingest(lcg: Lcg, ws: Path, *paths: Path | str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    status, out, err = lcg(ws, "ingest", *map(str, paths), "--json", *extra)
    assert status == 0, err
    summary: dict[str, Any] = json.loads(out)
    return summary


def _files(lcg: Lcg, ws: Path, query: str, group: str = GROUP) -> set[str]:
    status, out, err = lcg(ws, "search", query, "--json", "-n", "50", "--group", group)
    assert status == 0, err
    return {h["source_file"] for h in json.loads(out)}


def _sources(lcg: Lcg, ws: Path, *extra: str) -> list[dict[str, Any]]:
    status, out, err = lcg(ws, "sources", "--json", *extra)
    assert status == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


def _replay_and_verify_agree(lcg: Lcg, ws: Path, query: str) -> None:
    """``lcg replay --force-clear`` rebuilds the same sources and files from the stream, and
    ``lcg verify`` (a scratch replay compared by digest, sources included) agrees."""
    files, sources = _files(lcg, ws, query), _sources(lcg, ws)
    status, out, err = lcg(ws, "replay", "--group", GROUP, "--force-clear")
    assert status == 0, out + err
    assert _files(lcg, ws, query) == files
    assert _sources(lcg, ws) == sources
    status, out, err = lcg(ws, "verify")
    assert status == 0 and "verify: ok" in out, out + err


def test_two_folders_of_one_name_are_two_sources(tmp_path: Path, lcg: Lcg) -> None:
    home = _write(tmp_path / "home" / "notes", {"moon.md": "# Moon\n\nApollo landed in 1969.\n"})
    work = _write(tmp_path / "work" / "notes", {"mars.md": "# Mars\n\nRovers drive on Mars.\n"})
    ws = tmp_path / "ws"
    first = _ingest(lcg, ws, home)
    assert first["trees"][0]["source"] == "notes/"
    second = _ingest(lcg, ws, work)
    # Before: "1 new … 1 removed", and home's notes were gone from search.
    assert (second["files_new"], second["files_removed"], second["chunks_removed"]) == (1, 0, 0)
    assert second["trees"][0]["source"] == "notes~2/"
    assert _files(lcg, ws, "Apollo Mars rovers moon") == {"notes/moon.md", "notes~2/mars.md"}
    again = _ingest(lcg, ws, home)
    assert (again["files_unchanged"], again["chunks_added"], again["chunks_removed"]) == (1, 0, 0)
    rows = {r["source"]: r for r in _sources(lcg, ws)}
    assert {s: r["root"] for s, r in rows.items()} == {
        "notes/": str(home.resolve()),
        "notes~2/": str(work.resolve()),
    }
    assert all((r["files"], r["chunks"], r["missing"]) == (1, 1, False) for r in rows.values())
    _replay_and_verify_agree(lcg, ws, "Apollo Mars rovers moon")


def test_two_files_of_one_name_are_two_sources(tmp_path: Path, lcg: Lcg) -> None:
    a = _write(tmp_path / "a", {"README.md": "# Alpha\n\nThe alpha project ships kites.\n"})
    b = _write(tmp_path / "b", {"README.md": "# Beta\n\nThe beta project ships boats.\n"})
    ws = tmp_path / "ws"
    _ingest(lcg, ws, a / "README.md")
    second = _ingest(lcg, ws, b / "README.md")
    # Before: the second README replaced the first.
    assert (second["files_new"], second["files_removed"]) == (1, 0)
    assert second["trees"][0]["source"] == "README~2.md"
    assert _files(lcg, ws, "project ships kites boats") == {"README.md", "README~2.md"}
    assert [r["kind"] for r in _sources(lcg, ws)] == ["file", "file"]
    _replay_and_verify_agree(lcg, ws, "project ships kites boats")


def test_an_empty_or_missing_tree_removes_nothing_without_prune(tmp_path: Path, lcg: Lcg) -> None:
    notes = _write(tmp_path / "notes", {"a.md": "alpha comet\n", "b.md": "beta comet\n"})
    ws = tmp_path / "ws"
    _ingest(lcg, ws, notes)
    # An empty folder of the same name elsewhere is another source: nothing of notes/ goes.
    (tmp_path / "elsewhere" / "notes").mkdir(parents=True)
    other = _ingest(lcg, ws, tmp_path / "elsewhere" / "notes")
    assert (other["files_removed"], other["chunks_removed"]) == (0, 0)
    assert _files(lcg, ws, "comet") == {"notes/a.md", "notes/b.md"}
    # The tree itself emptied: held back, and the summary says how to remove them.
    for f in notes.iterdir():
        f.unlink()
    status, out, err = lcg(ws, "ingest", str(notes))
    assert status == 0, err
    assert "kept 2 stored files of notes/: it has no file to read" in out
    assert f"`lcg ingest --prune {notes.resolve()}` removes them" in out
    held = _ingest(lcg, ws, notes)
    assert (held["files_held"], held["files_removed"], held["chunks_removed"]) == (2, 0, 0)
    assert _files(lcg, ws, "comet") == {"notes/a.md", "notes/b.md"}
    # Missing altogether (unmounted, deleted): still held, and named as missing.
    notes.rmdir()
    gone = _ingest(lcg, ws, notes)
    assert gone["trees"][0]["held_because"] == "it is missing"
    assert gone["files_held"] == 2 and _files(lcg, ws, "comet") == {"notes/a.md", "notes/b.md"}
    (missing,) = [r for r in _sources(lcg, ws) if r["source"] == "notes/"]
    assert missing["missing"] and missing["files"] == 2
    # --prune removes them.
    pruned = _ingest(lcg, ws, notes, extra=("--prune",))
    assert (pruned["files_removed"], pruned["chunks_removed"]) == (2, 2)
    assert _files(lcg, ws, "comet") == set()
    # A path that is no source and not there is still an error.
    status, out, err = lcg(ws, "ingest", str(tmp_path / "never"))
    assert status == 1 and "no such file or folder" in err
    _replay_and_verify_agree(lcg, ws, "comet")


def test_a_file_inside_an_indexed_tree_is_synced_within_it(tmp_path: Path, lcg: Lcg) -> None:
    notes = _write(
        tmp_path / "notes",
        {
            "a.md": "# A\n\nthe orbit of the moon\n",
            "b.md": "# B\n\nthe orbit of mars\n",
            "sub/c.md": "# C\n\nthe orbit of venus\n",
            ".gitignore": "*.tmp\n",
        },
    )
    ws = tmp_path / "ws"
    _ingest(lcg, ws, notes)
    (notes / "a.md").write_text("# A\n\nthe orbit of the moon, edited\n")
    (notes / "b.md").write_text("# B\n\nthe orbit of mars, edited but not ingested\n")
    one = _ingest(lcg, ws, notes / "a.md")
    # Before: a second source "a.md" held the file again, both copies ranked first and second.
    assert one["trees"][0]["source"] == "notes/a.md"
    assert (one["files_changed"], one["files_new"], one["chunks_added"]) == (1, 0, 1)
    assert one["trees"][0]["root"] == str(notes.resolve())
    assert _files(lcg, ws, "orbit moon mars venus") == {
        "notes/a.md",
        "notes/b.md",
        "notes/sub/c.md",
    }
    # Only a.md was synced: b.md's edit waits for the tree's own sync.
    status, out, err = lcg(ws, "search", "edited but not ingested", "--json")
    assert all("not ingested" not in h["text"] for h in json.loads(out))
    # A folder inside the tree, and a file the tree's rules leave out.
    (notes / "sub" / "d.md").write_text("# D\n\nthe orbit of jupiter\n")
    sub = _ingest(lcg, ws, notes / "sub")
    assert (sub["trees"][0]["source"], sub["files_new"], sub["files_unchanged"]) == (
        "notes/sub",
        1,
        1,
    )
    (notes / "x.tmp").write_text("scratch orbit notes\n")
    left_out = _ingest(lcg, ws, notes / "x.tmp")
    assert left_out["chunks_added"] == 0
    assert [s["path"] for s in left_out["trees"][0]["skipped"]] == ["notes/x.tmp"]
    assert [(r["source"], r["files"]) for r in _sources(lcg, ws)] == [("notes/", 4)]
    _replay_and_verify_agree(lcg, ws, "orbit moon mars venus jupiter")


def test_a_folder_ingested_after_a_folder_inside_it_leaves_that_one_out(
    tmp_path: Path, lcg: Lcg
) -> None:
    notes = _write(tmp_path / "notes", {"a.md": "top level tide\n", "sub/b.md": "deep tide\n"})
    ws = tmp_path / "ws"
    _ingest(lcg, ws, notes / "sub")
    outer = _ingest(lcg, ws, notes)
    assert outer["files_new"] == 1
    assert {s["path"]: s["reason"] for s in outer["trees"][0]["skipped"]} == {
        "notes/sub": "a source of its own: synced there, not in this tree"
    }
    assert _files(lcg, ws, "tide") == {"notes/a.md", "sub/b.md"}  # one copy of b.md
    assert [(r["source"], r["files"]) for r in _sources(lcg, ws)] == [("notes/", 1), ("sub/", 1)]
    _replay_and_verify_agree(lcg, ws, "tide")


def test_a_renamed_root_is_a_new_source_and_the_old_one_is_missing(
    tmp_path: Path, lcg: Lcg
) -> None:
    old = _write(tmp_path / "notes", {"a.md": "the eclipse of 1919\n"})
    ws = tmp_path / "ws"
    _ingest(lcg, ws, old)
    new = old.rename(tmp_path / "notes-2024")
    status, out, err = lcg(ws, "ingest", str(new))
    assert status == 0, err
    assert out.startswith("notes-2024/ -> group 'liminis': files 1 new")
    assert f"note: source notes/ ({old.resolve()}) is missing" in out
    rows = {r["source"]: r for r in _sources(lcg, ws)}
    assert (rows["notes/"]["missing"], rows["notes-2024/"]["missing"]) == (True, False)
    status, out, err = lcg(ws, "sources")
    assert status == 0 and f"{old.resolve()} (missing)" in out
    status, out, err = lcg(ws, "sources", "remove", str(old))
    assert status == 0, err
    assert f"removed notes/ ({old.resolve()}) from group 'liminis': 1 files, 1 chunks" in out
    assert _files(lcg, ws, "eclipse") == {"notes-2024/a.md"}
    _replay_and_verify_agree(lcg, ws, "eclipse")


def test_lcg_sources_lists_and_removes(tmp_path: Path, lcg: Lcg) -> None:
    a = _write(tmp_path / "a" / "notes", {"x.md": "saturn rings\n", "y.md": "saturn moons\n"})
    b = _write(tmp_path / "b" / "notes", {"z.md": "saturn storms\n"})
    ws = tmp_path / "ws"
    _ingest(lcg, ws, a)
    _ingest(lcg, ws, b, extra=("--group", "work"))
    _ingest(lcg, ws, b)
    status, out, err = lcg(ws, "sources")
    assert status == 0, err
    header, *lines = out.splitlines()
    assert header.split() == [
        "GROUP",
        "SOURCE",
        "FILES",
        "CHUNKS",
        "LAST",
        "SYNC",
        "WATCHED",
        "PATH",
    ]
    assert all(" no " in line for line in lines)  # no lcg watch runs
    assert [line.split()[:4] for line in lines] == [
        ["liminis", "notes/", "2", "2"],
        ["liminis", "notes~2/", "1", "1"],
        ["work", "notes/", "1", "1"],
    ]
    assert [r["group_id"] for r in _sources(lcg, ws, "--group", "work")] == ["work"]
    # b is a source of two groups: remove asks which.
    status, out, err = lcg(ws, "sources", "remove", str(b))
    assert status == 1 and "is a source of groups 'liminis', 'work'" in err
    status, out, err = lcg(ws, "sources", "remove", str(b), "--group", "liminis", "--json")
    assert status == 0, err
    done = json.loads(out)
    assert (done["source"], done["files"], done["chunks_removed"]) == ("notes~2/", 1, 1)
    assert done["unregistered"] is True
    assert _files(lcg, ws, "saturn") == {"notes/x.md", "notes/y.md"}
    # By the source as listed, too; then nothing of liminis is left.
    status, out, err = lcg(ws, "sources", "remove", "notes/", "--group", "liminis")
    assert status == 0 and "2 files, 2 chunks" in out, err
    assert _files(lcg, ws, "saturn") == set()
    assert [(r["group_id"], r["source"]) for r in _sources(lcg, ws)] == [("work", "notes/")]
    status, out, err = lcg(ws, "sources", "remove", str(tmp_path / "nowhere"))
    assert status == 1 and "is no source of any group" in err
    _replay_and_verify_agree(lcg, ws, "saturn")
    # A removed folder ingested again is a source again, under its own name.
    assert _ingest(lcg, ws, a)["trees"][0]["source"] == "notes/"


def _legacy_sync(ws_dir: Path, root: Path) -> None:
    """What an older lcg recorded for ``lcg ingest ROOT``: the chunks under the folder's name,
    and nothing saying which folder it was."""
    config = Config.from_env(ws_dir, env={"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"})
    with Workspace.open(config, HashEmbedder()) as ws:
        plan = plan_sync(scan_tree(root), [])
        adds = [
            ChunkIn(
                chunk_id=c.chunk_id,
                source_file=c.source_file,
                chunk_text=c.text,
                reference_time="2024-05-01T12:00:00Z",
            )
            for c in plan.adds
        ]
        sync_chunks(ws, GROUP, adds, [])


def test_a_tree_an_older_lcg_stored_is_taken_over_without_a_second_copy(
    tmp_path: Path, lcg: Lcg
) -> None:
    notes = _write(tmp_path / "notes", {"a.md": "nebula one\n", "b.md": "nebula two\n"})
    ws = tmp_path / "ws"
    _legacy_sync(ws, notes)
    (legacy,) = _sources(lcg, ws)
    assert (legacy["source"], legacy["root"], legacy["registered"], legacy["files"]) == (
        "notes/",
        None,
        False,
        2,
    )
    adopted = _ingest(lcg, ws, notes)
    assert (adopted["files_unchanged"], adopted["chunks_added"]) == (2, 0)
    assert adopted["trees"][0]["source"] == "notes/"
    (row,) = _sources(lcg, ws)
    assert (row["root"], row["registered"], row["files"]) == (str(notes.resolve()), True, 2)
    _replay_and_verify_agree(lcg, ws, "nebula")


def test_sources_through_a_running_service(tmp_path: Path, lcg_main: sf.LcgMain) -> None:
    ws = sf.short_tmp()
    home = _write(tmp_path / "home" / "notes", {"moon.md": "# Moon\n\nApollo landed.\n"})
    work = _write(tmp_path / "work" / "notes", {"mars.md": "# Mars\n\nRovers drive.\n"})
    proc = sf.spawn_serve(ws)
    sock = ws / ".lcg" / "service.sock"
    try:
        sf.wait_healthy(sock, proc)
        for folder in (home, work):
            done = lcg_main(ws, "ingest", str(folder))
            assert done.returncode == 0 and "through the running service" in done.stderr
        listed = lcg_main(ws, "sources", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [r["source"] for r in json.loads(listed.stdout)] == ["notes/", "notes~2/"]
        removed = lcg_main(ws, "sources", "remove", str(home))
        assert removed.returncode == 0, removed.stderr
        assert removed.stdout.startswith("removed notes/ (")
        found = lcg_main(ws, "search", "Apollo Rovers", "--json")
        assert {h["source_file"] for h in json.loads(found.stdout)} == {"notes~2/mars.md"}
    finally:
        assert sf.stop_serve(proc, sock) == 0
        shutil.rmtree(ws, ignore_errors=True)


def _wait_for(proc: subprocess.Popen[bytes], log: Path, text: str) -> None:
    """Until ``text`` is in the log; the failure signal is the process ending (or a hang)."""
    sf.eventually(lambda: text in log.read_text(), log.read_text, proc=proc)


def test_a_watched_tree_emptied_keeps_its_files_unless_pruned(
    tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    ws = sf.short_tmp()
    notes = _write(tmp_path / "notes", {"a.md": "the walrus sleeps\n"})
    proc, log = sf.spawn_lcg(ws, "watch", str(notes))
    try:
        _wait_for(proc, log, "watching 1 tree")
        (notes / "a.md").unlink()
        # Before: the watcher removed it ("1 removed") and said nothing of --prune.
        _wait_for(proc, log, "kept 1 stored files of notes/: it has no file to read")
        found = lcg_main(ws, "search", "walrus", "--json")
        assert found.returncode == 0, found.stderr
        assert [h["source_file"] for h in json.loads(found.stdout)] == ["notes/a.md"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
        assert "1 removed" not in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(ws, ignore_errors=True)
