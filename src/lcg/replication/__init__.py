"""Replication: publish a group's stream into a git working tree, follow a publication into a
read-only replica workspace, and the replica service's state (docs/replication.md)."""

from __future__ import annotations

from lcg.replication.follow import Follower
from lcg.replication.status import (
    ReplicaApplied,
    ReplicaResetDetected,
    ReplicaState,
    ReplicaStatus,
    ReplicaStopped,
)
from lcg.replication.verified import SavedFile, SavedTrack

__all__ = [
    "Follower",
    "ReplicaApplied",
    "ReplicaResetDetected",
    "ReplicaState",
    "ReplicaStatus",
    "ReplicaStopped",
    "SavedFile",
    "SavedTrack",
]
