"""Replication: stage a group's stream and deliver it through a transport (git today), follow
a publication into a read-only replica workspace, and the replica service's state
(docs/replication.md; the transport seam: ``replication.transport``)."""

from __future__ import annotations

from lcg.replication.follow import Follower
from lcg.replication.git import GITIGNORE, GitPublisher, GitPuller, GitSource
from lcg.replication.jetstream import JetStreamPublisher
from lcg.replication.jetstream_live import LivePublisher
from lcg.replication.publish import publish_group
from lcg.replication.service import (
    Replica,
    ReplicaReport,
    SourceFactory,
    read_only_reason,
    replica_config,
)
from lcg.replication.staging import StagedGroup, StagedLine, stage_group
from lcg.replication.status import (
    ReplicaApplied,
    ReplicaResetDetected,
    ReplicaState,
    ReplicaStatus,
    ReplicaStopped,
)
from lcg.replication.targets import follow_setup, open_publisher, transport_of
from lcg.replication.transport import (
    GroupCursor,
    Publisher,
    PublishResult,
    Puller,
    Source,
    SourceTail,
)
from lcg.replication.tree import TreeSource
from lcg.replication.verified import SavedFile, SavedTrack

__all__ = [
    "GITIGNORE",
    "Follower",
    "GitPublisher",
    "GitPuller",
    "GitSource",
    "GroupCursor",
    "JetStreamPublisher",
    "LivePublisher",
    "PublishResult",
    "Publisher",
    "Puller",
    "Replica",
    "ReplicaApplied",
    "ReplicaReport",
    "ReplicaResetDetected",
    "ReplicaState",
    "ReplicaStatus",
    "ReplicaStopped",
    "SavedFile",
    "SavedTrack",
    "Source",
    "SourceFactory",
    "SourceTail",
    "StagedGroup",
    "StagedLine",
    "TreeSource",
    "follow_setup",
    "open_publisher",
    "publish_group",
    "read_only_reason",
    "replica_config",
    "stage_group",
    "transport_of",
]
