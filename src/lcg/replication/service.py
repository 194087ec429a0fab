"""The replica service, apart from how it is served: its workspace, its follower, its rules.

A replica workspace keeps its own projections, socket and lock in its ``.lcg``; its
``.lcg/wal`` is a symlink to the publication (``replica_config``), so every other command
(``lcg status``, ``lcg wal ls``) sees the same streams. Nothing is written into the
publication but the optional bounds cache, which ``lcg publish`` keeps untracked.

``Replica`` opens the workspace without catching up, hydrates it from what the follower
verified, then follows in the background. ``refuses`` is the rule for the method table:
writes are refused (the error names the publisher), and so are the methods that would write
into the publication or swap the workspace under the follower. ``lcg.rpc.replica`` serves it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from lcg.config import Config
from lcg.errors import ConfigError
from lcg.events.guarded import ReadLimits
from lcg.events.layout import LCG_DIR, WAL_DIR
from lcg.extract.embedders import Embedder
from lcg.replication.follow import Follower
from lcg.replication.status import ReplicaStatus
from lcg.workspace import Workspace

__all__ = [
    "REBUILD_METHOD",
    "REFUSED_METHODS",
    "GitPuller",
    "Replica",
    "ReplicaReport",
    "read_only_reason",
    "refuses",
    "replica_config",
]

#: Methods that are not writes to a stream but still must not run on a replica: they write
#: into the publication (marks) or close the workspace under the follower (recovery).
REFUSED_METHODS = frozenset(
    {
        "knowledge_wal_mark_create",
        "knowledge_wal_mark_delete",
        "knowledge_recover",
        "knowledge_recover_full",
    }
)
#: The one writing method a replica answers, and only as a dry run.
REBUILD_METHOD = "knowledge_rebuild_from_wal"


def refuses(name: str, *, writes: bool) -> bool:
    """Whether a replica refuses method ``name`` (``writes``: the method appends events)."""
    return (writes and name != REBUILD_METHOD) or name in REFUSED_METHODS


def read_only_reason(source_label: str) -> str:
    """Why a replica refuses writes, in the words its errors use."""
    return f"this is a read-only replica of {source_label}; write to the publisher"


class ReplicaReport(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_replica_status``."""

    source: str
    groups: dict[str, ReplicaStatus]
    #: Entries of the publication root that name no group (never opened) → why.
    skipped: dict[str, str] = {}
    #: How many such entries there are (``skipped`` lists the first ``MAX_SKIPPED``).
    skipped_count: int = 0


def replica_config(workspace: Path, source: Path, env: dict[str, str] | None = None) -> Config:
    """The settings of a replica workspace whose ``.lcg/wal`` links to ``source``."""
    source = source.resolve()
    if not source.is_dir():
        raise ConfigError(f"publication directory {source} does not exist; clone it first")
    config = Config.from_env(workspace, env=env)
    lcg_dir = config.workspace / LCG_DIR
    link = lcg_dir / WAL_DIR
    lcg_dir.mkdir(parents=True, exist_ok=True)
    if link.is_symlink():
        if link.resolve() != source:
            link.unlink()
    elif link.exists():
        raise ConfigError(
            f"{link} is the workspace's own stream directory; a replica needs a workspace of its "
            "own - pass -C with another directory"
        )
    if not link.is_symlink():
        link.symlink_to(source, target_is_directory=True)
    return msgspec.structs.replace(config, wal_dir=link)


class Replica:
    """A replica workspace and its follower: hydrated from verified events, then following."""

    def __init__(
        self,
        config: Config,
        *,
        source_label: str,
        groups: Sequence[str] | None = None,
        step_ms: int = 50,
        rescan_ms: int = 2000,
        limits: ReadLimits | None = None,
    ) -> None:
        self.config = config
        self.source_label = source_label
        self.groups = list(groups) if groups else None
        self.step_ms = step_ms
        self.rescan_ms = rescan_ms
        #: The bounds the publication is read under (ADR 0154).
        self.limits = limits or ReadLimits()
        #: Set from the start of the first pass, so status shows the hydration.
        self.follower: Follower | None = None

    def open(self, embedder: Embedder | None) -> Workspace:
        """Open the workspace without catching up and apply what the first pass verifies.

        Blocking (a hydration may be long). ``start`` then follows in the background.
        """
        # Opened as a publication: a bad group directory stops that group (the follower's
        # verdict), not the whole workspace, and every read of the streams is bounded.
        ws = Workspace(self.config, embedder, publication=self.limits)
        follower = Follower(ws, self.groups, source_label=self.source_label)
        # Visible before the first pass, so knowledge_replica_status shows the hydration.
        self.follower = follower
        try:
            follower.sync()
        except BaseException:
            self.follower = None
            ws.close()
            raise
        return ws

    def start(self) -> None:
        """Follow in a background thread (after ``open``)."""
        if self.follower is not None:
            self.follower.start(step_ms=self.step_ms, rescan_ms=self.rescan_ms)

    def stop(self) -> None:
        """Stop following and wait for the follower's thread (blocking)."""
        follower, self.follower = self.follower, None
        if follower is not None:
            follower.stop()

    def report(self, group_id: str | None = None) -> ReplicaReport:
        """Where each followed group (or only ``group_id``) stands against its publication."""
        follower = self.follower
        if follower is None:
            return ReplicaReport(source=self.source_label, groups={})
        scan = follower.scan
        if group_id:
            return ReplicaReport(
                source=self.source_label, groups={group_id: follower.replica_status(group_id)}
            )
        return ReplicaReport(
            source=self.source_label,
            groups=follower.statuses(),
            skipped=dict(scan.skipped),
            skipped_count=scan.skipped_count,
        )

    def stopped(self) -> dict[str, str]:
        """The followed groups that are stopped, with their reasons (for health)."""
        follower = self.follower
        if follower is None:
            return {}
        return {
            g: s.reason or "stopped" for g, s in follower.statuses().items() if s.state == "stopped"
        }

    def with_replica_status(
        self, status: msgspec.Struct | Mapping[str, Any]
    ) -> msgspec.Struct | Mapping[str, Any]:
        """``knowledge_status``'s result with a ``replica`` object per group and ``replica_of``."""
        follower = self.follower
        if follower is None:
            return status
        out: dict[str, Any] = msgspec.to_builtins(status)
        groups = out.get("wal_groups")
        if isinstance(groups, dict):
            for gid in set(groups) | set(follower.groups()):
                entry = groups.setdefault(gid, {})
                if isinstance(entry, dict):
                    entry["replica"] = msgspec.to_builtins(follower.replica_status(gid))
        out["replica_of"] = self.source_label
        return out


class GitPuller:
    """Runs ``git pull --ff-only`` in the publication every few seconds (``--pull-every``)."""

    def __init__(
        self, repo: Path, every_s: float, *, on_error: Callable[[str], None] | None = None
    ) -> None:
        self.repo = repo
        self.every_s = every_s
        self.on_error = on_error or _print_pull_error
        self._stop = threading.Event()
        self._last_error: str | None = None
        #: How many pulls ran (failed ones included).
        self.pulls = 0
        self._thread = threading.Thread(target=self._run, name="lcg-pull", daemon=True)

    def start(self) -> None:
        """Pull in a background thread until ``stop``."""
        self._thread.start()

    def stop(self) -> None:
        """Stop pulling (a pull under way finishes in the background)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            proc = subprocess.run(
                ["git", "-C", str(self.repo), "pull", "--ff-only", "-q"],
                capture_output=True,
                text=True,
                check=False,
            )
            error = (proc.stderr or proc.stdout).strip() if proc.returncode else None
            # A failure is reported once, not every few seconds while it lasts.
            if error and error != self._last_error:
                self.on_error(error)
            self._last_error = error
            self.pulls += 1


def _print_pull_error(error: str) -> None:
    print(f"lcg follow: git pull failed: {error}", file=sys.stderr)
