"""The replica service, apart from how it is served: its workspace, its follower, its rules.

A replica workspace keeps its own projections, socket and lock in its ``.lcg``; its
``.lcg/wal`` is a symlink to the publication (``replica_config``), so every other command
(``lcg status``, ``lcg wal ls``) sees the same streams. Nothing is written into the
publication but the optional bounds cache, which ``lcg publish`` keeps untracked.

``Replica`` opens the workspace without catching up, hydrates it from what the follower
verified, then follows in the background. ``lcg.rpc.replica`` serves it, and holds which
methods a replica refuses (the method table is the RPC layer's). How the publication reaches
the follower is the transport's (``replication.transport``; git: ``replication.git``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from lcg.config import Config
from lcg.errors import ConfigError
from lcg.events import LCG_DIR, WAL_DIR, ReadLimits
from lcg.extract import Embedder
from lcg.replication.follow import Follower
from lcg.replication.status import ReplicaStatus
from lcg.replication.transport import Source
from lcg.workspace import Workspace

__all__ = ["Replica", "ReplicaReport", "SourceFactory", "read_only_reason", "replica_config"]

#: Builds the follower's source for the opened replica workspace (default: its ``.lcg/wal``
#: read as a publication directory).
SourceFactory = Callable[[Workspace], Source]


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
        source: SourceFactory | None = None,
    ) -> None:
        self.config = config
        self.source_label = source_label
        self.groups = list(groups) if groups else None
        self.step_ms = step_ms
        self.rescan_ms = rescan_ms
        #: The bounds the publication is read under (ADR 0154).
        self.limits = limits or ReadLimits()
        self.source = source
        #: Set from the start of the first pass, so status shows the hydration.
        self.follower: Follower | None = None

    def open(self, embedder: Embedder | None) -> Workspace:
        """Open the workspace without catching up and apply what the first pass verifies.

        Blocking (a hydration may be long). ``start`` then follows in the background.
        """
        # Opened as a publication: a bad group directory stops that group (the follower's
        # verdict), not the whole workspace, and every read of the streams is bounded.
        ws = Workspace(self.config, embedder, publication=self.limits)
        try:
            source = self.source(ws) if self.source is not None else None
            follower = Follower(ws, self.groups, source=source, source_label=self.source_label)
            # Visible before the first pass, so knowledge_replica_status shows the hydration.
            self.follower = follower
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
