"""Replication: stage a group's stream and deliver it through a transport (the registry:
``replication.targets``), follow a publication into a read-only replica workspace, and the
replica service's state (docs/replication.md; the transport seam: ``replication.transport``).

The face is lazy (module ``__getattr__``): a name's module is imported when the name is first
asked for, so ``lcg publish --help`` loads the registry without the follower's workspace (Kuzu,
hnswlib, numpy) or the NATS client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcg.lazy import lazy_face

if TYPE_CHECKING:
    from lcg.replication.follow import Follower
    from lcg.replication.git import GITIGNORE, GitPublisher, GitPuller, GitSource
    from lcg.replication.jetstream import JetStreamPublisher
    from lcg.replication.jetstream_live import LivePublisher
    from lcg.replication.kinds import (
        NO_OPTIONS,
        Console,
        FollowSetup,
        OptionGroup,
        Options,
        PublishRequest,
        Transport,
    )
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
    from lcg.replication.targets import (
        add_transport_arguments,
        chosen_transport,
        follow_setup,
        open_publisher,
        transport_for,
        transport_of,
        transports,
    )
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
    "NO_OPTIONS",
    "Console",
    "FollowSetup",
    "Follower",
    "GitPublisher",
    "GitPuller",
    "GitSource",
    "GroupCursor",
    "JetStreamPublisher",
    "LivePublisher",
    "OptionGroup",
    "Options",
    "PublishRequest",
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
    "Transport",
    "TreeSource",
    "add_transport_arguments",
    "chosen_transport",
    "follow_setup",
    "open_publisher",
    "publish_group",
    "read_only_reason",
    "replica_config",
    "stage_group",
    "transport_for",
    "transport_of",
    "transports",
]

#: Module holding each name of the face.
_HOMES: dict[str, str] = {
    "Follower": "lcg.replication.follow",
    "GITIGNORE": "lcg.replication.git",
    "GitPublisher": "lcg.replication.git",
    "GitPuller": "lcg.replication.git",
    "GitSource": "lcg.replication.git",
    "JetStreamPublisher": "lcg.replication.jetstream",
    "LivePublisher": "lcg.replication.jetstream_live",
    "NO_OPTIONS": "lcg.replication.kinds",
    "Console": "lcg.replication.kinds",
    "Options": "lcg.replication.kinds",
    "FollowSetup": "lcg.replication.kinds",
    "OptionGroup": "lcg.replication.kinds",
    "PublishRequest": "lcg.replication.kinds",
    "Transport": "lcg.replication.kinds",
    "publish_group": "lcg.replication.publish",
    "Replica": "lcg.replication.service",
    "ReplicaReport": "lcg.replication.service",
    "SourceFactory": "lcg.replication.service",
    "read_only_reason": "lcg.replication.service",
    "replica_config": "lcg.replication.service",
    "StagedGroup": "lcg.replication.staging",
    "StagedLine": "lcg.replication.staging",
    "stage_group": "lcg.replication.staging",
    "ReplicaApplied": "lcg.replication.status",
    "ReplicaResetDetected": "lcg.replication.status",
    "ReplicaState": "lcg.replication.status",
    "ReplicaStatus": "lcg.replication.status",
    "ReplicaStopped": "lcg.replication.status",
    "add_transport_arguments": "lcg.replication.targets",
    "chosen_transport": "lcg.replication.targets",
    "follow_setup": "lcg.replication.targets",
    "open_publisher": "lcg.replication.targets",
    "transport_for": "lcg.replication.targets",
    "transport_of": "lcg.replication.targets",
    "transports": "lcg.replication.targets",
    "GroupCursor": "lcg.replication.transport",
    "PublishResult": "lcg.replication.transport",
    "Publisher": "lcg.replication.transport",
    "Puller": "lcg.replication.transport",
    "Source": "lcg.replication.transport",
    "SourceTail": "lcg.replication.transport",
    "TreeSource": "lcg.replication.tree",
    "SavedFile": "lcg.replication.verified",
    "SavedTrack": "lcg.replication.verified",
}


__getattr__, __dir__ = lazy_face(__name__, _HOMES, __all__)
