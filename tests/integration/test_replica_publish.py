"""``lcg publish``: the whole directory travels (dot-files included), commits are real git."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

# Test helpers are imported as plain modules from their folders (as the other suites do).
from _service_fixtures import in_process_service
from lcg.cli import main as cli_main
from lcg.errors import ConfigError, GenerationError, StreamError
from lcg.events.layout import (
    BOUNDS_FILE,
    CHECKPOINTS_DIR,
    EMBEDDING_MODEL_FILE,
    GENERATION_FILE,
    LOCK_FILE,
    ONTOLOGY_SIDECAR_FILE,
)
from lcg.events.marks import create_mark
from lcg.events.sidecars import OntologySidecar, write_ontology_sidecar
from lcg.replication import GITIGNORE, publish_group
from lcg.rpc.client import Client
from replica_support import (
    GIT_ENV,
    git,
    make_repos,
    open_publisher,
    write_batch,
)

G = "team"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


def test_the_whole_directory_travels_but_local_state_does_not(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, G, 3)
        src = pub.store.group_dir(G)
        write_ontology_sidecar(src, OntologySidecar(hash="h1", mode="open"))
        pub.record_embedding_model(G)
        create_mark(src, "before-import", pub.projector.applied_seq(G), pub.store.generation(G))
        pub.store.bounds(G)  # writes the local bounds cache
        (src / ".quarantine").mkdir()
        (src / ".quarantine" / "bad.jsonl").write_text("junk\n")
        assert (src / LOCK_FILE).exists() and (src / BOUNDS_FILE).exists()

        result = publish_group(pub.config.wal_dir, G, repos.pub, message="first")
        dest = repos.pub / G
        assert result.committed and result.commit
        tracked = set(git(repos.pub, "ls-files", G).split())
        for name in (GENERATION_FILE, ONTOLOGY_SIDECAR_FILE, EMBEDDING_MODEL_FILE, ".gitignore"):
            assert f"{G}/{name}" in tracked, name
        assert any(t.endswith(".jsonl") for t in tracked)
        for absent in (LOCK_FILE, BOUNDS_FILE, ".quarantine", CHECKPOINTS_DIR):
            assert not (dest / absent).exists(), absent
        assert (dest / ".gitignore").read_text() == GITIGNORE
        assert json.loads((dest / GENERATION_FILE).read_text()) == {
            "generation": pub.store.generation(G)
        }
        assert git(repos.pub, "log", "-1", "--format=%s").strip() == "first"

        # Marks travel only when asked.
        marked = publish_group(pub.config.wal_dir, G, repos.pub, with_marks=True)
        assert marked.committed
        assert (dest / CHECKPOINTS_DIR / "before-import").is_dir()

        # Only changed segments are copied.
        write_batch(pub, G, 1, start=3)
        again = publish_group(pub.config.wal_dir, G, repos.pub)
        assert again.committed and again.files_copied == 1
        assert again.max_seq == pub.projector.applied_seq(G)
    finally:
        pub.close()


def test_published_files_are_durable_before_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each copied file is fsynced (as its temp file) and its directory entry too: a crash
    after ``git commit`` must not leave the commit naming bytes that never reached the disk."""
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        # The real fsync runs; the spy only notes which file it was for.
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, G, 3)
        src = pub.store.group_dir(G)
        write_ontology_sidecar(src, OntologySidecar(hash="h1", mode="open"))
        monkeypatch.setattr(os, "fsync", recording_fsync)
        result = publish_group(pub.config.wal_dir, G, repos.pub)
        monkeypatch.setattr(os, "fsync", real_fsync)
        assert result.committed and result.files_copied >= 1
        dest = (repos.pub / G).resolve()
        published = [p.name for p in dest.glob("*.jsonl")] + [ONTOLOGY_SIDECAR_FILE, ".gitignore"]
        for name in published:
            assert any(
                Path(s).parent == dest and Path(s).name.startswith(f"{name}.") for s in synced
            ), f"{name} was published without an fsync"
        assert str(dest) in synced, "the group directory's entries were not fsynced"
    finally:
        pub.close()


def test_a_lost_generation_sidecar_is_restored_from_the_lines(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, G, 2)
        generation = pub.store.generation(G)
        root = tmp_path / "globbed"
        (root / G).mkdir(parents=True)
        for seg in pub.store.group_dir(G).glob("*.jsonl"):
            shutil.copy(seg, root / G / seg.name)
        result = publish_group(root, G, repos.pub)
        assert result.generation == generation
        assert json.loads((repos.pub / G / GENERATION_FILE).read_text())["generation"] == generation
    finally:
        pub.close()


def test_refusals(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    other = open_publisher(tmp_path / "other")
    try:
        write_batch(pub, G, 2)
        write_batch(other, G, 2)
        plain = tmp_path / "plain"
        plain.mkdir()
        with pytest.raises(ConfigError, match="not a git working tree"):
            publish_group(pub.config.wal_dir, G, plain)
        with pytest.raises(ConfigError, match="not a git working tree"):
            publish_group(pub.config.wal_dir, G, repos.origin)
        with pytest.raises(ConfigError, match="no such directory"):
            publish_group(pub.config.wal_dir, G, tmp_path / "missing")
        with pytest.raises(StreamError, match="no stream files"):
            publish_group(pub.config.wal_dir, "nobody", repos.pub)
        publish_group(pub.config.wal_dir, G, repos.pub)
        # Another stream (another generation) is refused without --reset ...
        with pytest.raises(GenerationError, match="pass --reset"):
            publish_group(other.config.wal_dir, G, repos.pub)
        # ... and replaces the publication with it.
        replaced = publish_group(other.config.wal_dir, G, repos.pub, reset=True)
        assert replaced.reset and replaced.previous_generation == pub.store.generation(G)
        assert "[reset]" in git(repos.pub, "log", "-1", "--format=%s")
        # A stream mixing two generations is refused.
        mixed = tmp_path / "mixed"
        shutil.copytree(pub.config.wal_dir / G, mixed / G)
        seg = sorted((mixed / G).glob("*.jsonl"))[-1]
        foreign = sorted((other.config.wal_dir / G).glob("*.jsonl"))[0].read_bytes()
        with open(seg, "ab") as fh:
            fh.write(foreign.splitlines(True)[-1])
        fresh = tmp_path / "fresh"
        subprocess.run(["git", "init", "-q", "-b", "main", str(fresh)], check=True)
        with pytest.raises(GenerationError, match="mixes generations"):
            publish_group(mixed, G, fresh)
    finally:
        pub.close()
        other.close()


def test_publish_while_the_service_runs_skips_a_line_being_written(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    with in_process_service(tmp_path / "svc") as svc:
        with Client(svc.socket_path) as c:
            c.call("knowledge_assert_entity", {"name": "Alpha", "group_id": G})
            c.call("knowledge_assert_entity", {"name": "Beta", "group_id": G})
        result = publish_group(svc.config.wal_dir, G, repos.pub)
        assert result.committed and result.max_seq == 1
        # A torn last line (an append in progress) is not published.
        seg = sorted((svc.config.wal_dir / G).glob("*.jsonl"))[-1]
        root = tmp_path / "snapshot"
        shutil.copytree(svc.config.wal_dir / G, root / G, ignore=shutil.ignore_patterns(".wri*"))
        with open(root / G / seg.name, "ab") as fh:
            fh.write(b'{"type":"EntityAsserted","seq":2,')
        same = publish_group(root, G, repos.pub)
        assert not same.committed and same.max_seq == 1
        assert (repos.pub / G / seg.name).read_bytes() == seg.read_bytes()


def test_cli_publish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    modules = list(cli_main.COMMAND_MODULES)
    if "lcg.cli.publish" not in modules:
        monkeypatch.setattr(cli_main, "COMMAND_MODULES", [*modules, "lcg.cli.publish"])
    for key in list(os.environ):
        if key.startswith("LCG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, G, 1)
    finally:
        pub.close()
    ws = str(tmp_path / "pubws")
    assert cli_main.main(["-C", ws, "publish", "--group", G, "--repo", str(repos.pub)]) == 0
    assert capsys.readouterr().out.startswith(f"published group {G} through seq ")
    assert cli_main.main(["-C", ws, "publish", "-g", G, "--repo", str(repos.pub), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["committed"] is False and out["group_id"] == G
    assert cli_main.main(["-C", ws, "publish", "-g", G, "--repo", str(tmp_path)]) == 1
    assert "Error: --repo" in capsys.readouterr().err
