"""Replication: publish a group's stream into a git working tree, follow a publication into a
read-only replica workspace, and the replica service's state (docs/replication.md)."""

from __future__ import annotations

from lcg.replication.follow import Follower
from lcg.replication.publish import GITIGNORE, PublishResult, publish_group
from lcg.replication.service import GitPuller, Replica, ReplicaReport, replica_config
from lcg.replication.status import (
    ReplicaApplied,
    ReplicaResetDetected,
    ReplicaState,
    ReplicaStatus,
    ReplicaStopped,
)
from lcg.replication.verified import SavedFile, SavedTrack

__all__ = [
    "GITIGNORE",
    "Follower",
    "GitPuller",
    "PublishResult",
    "Replica",
    "ReplicaApplied",
    "ReplicaReport",
    "ReplicaResetDetected",
    "ReplicaState",
    "ReplicaStatus",
    "ReplicaStopped",
    "SavedFile",
    "SavedTrack",
    "publish_group",
    "replica_config",
]
