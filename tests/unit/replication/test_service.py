"""The replica service's rules apart from RPC: what it refuses, its settings, its git puller."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from lcg.errors import ConfigError
from lcg.events.layout import LCG_DIR, WAL_DIR
from lcg.replication.git import GitPuller
from lcg.replication.service import read_only_reason, replica_config
from lcg.rpc.replica import REBUILD_METHOD, REFUSED_METHODS, refuses


def test_writes_and_the_methods_that_would_touch_the_publication_are_refused() -> None:
    assert refuses("knowledge_add_episode", writes=True)
    assert not refuses("knowledge_search", writes=False)
    # The rebuild writes but is answered (as a dry run only, by the service).
    assert not refuses(REBUILD_METHOD, writes=True)
    for name in REFUSED_METHODS:
        assert refuses(name, writes=False), name
    assert "write to the publisher" in read_only_reason("/srv/pub")


def test_replica_config_links_the_workspace_streams_to_the_publication(tmp_path: Path) -> None:
    source = tmp_path / "pub"
    source.mkdir()
    config = replica_config(tmp_path / "rws", source, env={"LCG_TELEMETRY": "off"})
    link = tmp_path / "rws" / LCG_DIR / WAL_DIR
    assert link.is_symlink() and link.resolve() == source.resolve()
    assert config.wal_dir == link
    # Pointed elsewhere later, the link follows the new publication.
    other = tmp_path / "other"
    other.mkdir()
    replica_config(tmp_path / "rws", other, env={"LCG_TELEMETRY": "off"})
    assert link.resolve() == other.resolve()


def test_replica_config_refusals_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="clone it first"):
        replica_config(tmp_path / "rws", tmp_path / "missing")
    source = tmp_path / "pub"
    source.mkdir()
    own = tmp_path / "ws" / LCG_DIR / WAL_DIR
    own.mkdir(parents=True)
    with pytest.raises(ConfigError, match="needs a workspace of its own"):
        replica_config(tmp_path / "ws", source)


def test_a_failing_pull_is_reported_once_while_it_lasts(tmp_path: Path) -> None:
    """A real ``git pull`` in a repository without a remote fails on every tick; the error is
    reported once, not every tick."""
    repo = tmp_path / "clone"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    errors: list[str] = []
    puller = GitPuller(repo, 0.02, on_error=errors.append)
    puller.start()
    try:
        deadline = time.monotonic() + 60
        while puller.pulls < 4 and time.monotonic() < deadline:
            time.sleep(0.02)  # polling the real loop's progress, not waiting for readiness
    finally:
        puller.stop()
    assert puller.pulls >= 4
    assert len(errors) == 1, errors
