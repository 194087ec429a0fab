"""Helpers for the replica tests (no tests here): real git repositories, a publisher
workspace, a replica workspace with an in-process follower.

The embedder is the hash test double (``HashEmbedder``), named as such; git, the files,
Kuzu, hnswlib and the follower are real.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lcg.config import Config
from lcg.events.guarded import ReadLimits
from lcg.extract.embedders import HashEmbedder
from lcg.ingest.assertion import assert_entity, assert_relationship
from lcg.ingest.episodes import process_chunk
from lcg.replication import Follower, PublishResult, publish_group, replica_config
from lcg.workspace import Workspace

HASH = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "lcg test",
    "GIT_AUTHOR_EMAIL": "test@lcg.invalid",
    "GIT_COMMITTER_NAME": "lcg test",
    "GIT_COMMITTER_EMAIL": "test@lcg.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; fail the test on a non-zero exit."""
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout


@dataclass
class Repos:
    """A bare origin, the publisher's clone, and the replica's clone."""

    origin: Path
    pub: Path
    replica: Path

    def push(self) -> None:
        """Push the publisher's commits to origin."""
        git(self.pub, "push", "-q", "origin", "HEAD:main")

    def pull(self) -> None:
        """Fast-forward the replica's clone from origin."""
        git(self.replica, "pull", "-q", "--ff-only", "origin", "main")


def make_repos(tmp: Path) -> Repos:
    """An origin with one empty commit, cloned twice."""
    origin = tmp / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    seed = tmp / "seed"
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True)
    git(seed, "commit", "-q", "--allow-empty", "-m", "publication")
    git(seed, "push", "-q", str(origin), "main")
    pub = tmp / "pubclone"
    # Each replica clone gets its own parent directory (nothing of the replica lives there).
    replica = tmp / "replica-src" / "clone"
    replica.parent.mkdir()
    subprocess.run(["git", "clone", "-q", str(origin), str(pub)], check=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(replica)], check=True)
    return Repos(origin=origin, pub=pub, replica=replica)


def open_publisher(path: Path, **env: str) -> Workspace:
    """A publisher workspace with the hash embedder (``env``: extra ``LCG_*`` settings)."""
    return Workspace.open(Config.from_env(path, env={**HASH, **env}), HashEmbedder())


@contextmanager
def replica(workspace: Path, source: Path, groups: list[str] | None = None) -> Iterator[Follower]:
    """A replica workspace on ``source`` with an in-process follower (no watcher thread)."""
    config = replica_config(workspace, source, env=HASH)
    ws = Workspace(config, HashEmbedder(), publication=ReadLimits())
    try:
        yield Follower(ws, groups, source_label=str(source))
    finally:
        ws.close()


def write_batch(ws: Workspace, group: str, n: int, start: int = 0) -> None:
    """Entities, a relationship chain and lite-mode episodes: ``n`` rounds from ``start``."""
    for i in range(start, start + n):
        assert_entity(
            ws, name=f"Entity {i}", group_id=group, summary=f"entity number {i} of {group}"
        )
        if i > 0:
            assert_relationship(
                ws,
                source_name=f"Entity {i - 1}",
                target_name=f"Entity {i}",
                predicate="precedes",
                group_id=group,
            )
        process_chunk(
            ws,
            chunk_text=f"chunk {i}: a note about entity {i} and its neighbours",
            chunk_id=f"c{i}",
            source_file="notes.md",
            group_id=group,
        )


def publish(ws: Workspace, group: str, repos: Repos, **kw: bool) -> PublishResult:
    """Publish ``group`` from the publisher's stream root and push it."""
    result = publish_group(ws.config.wal_dir, group, repos.pub, **kw)
    repos.push()
    return result
