"""Replication: stage a group's stream and deliver it through a transport (the registry:
``replication.targets``), follow a publication into a read-only replica workspace, and the
replica service's state (docs/replication.md; the transport seam: ``replication.transport``).

The face is lazy (module ``__getattr__``): a name's module is imported when the name is first
asked for, so ``lcg publish --help`` loads the registry without the follower's workspace (Kuzu,
hnswlib, numpy) or the NATS client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

#: Each name of the face → the module that defines it.
_MODULES: dict[str, str] = {
    "Follower": "follow",
    "GITIGNORE": "git",
    "GitPublisher": "git",
    "GitPuller": "git",
    "GitSource": "git",
    "JetStreamPublisher": "jetstream",
    "LivePublisher": "jetstream_live",
    "NO_OPTIONS": "kinds",
    "Console": "kinds",
    "Options": "kinds",
    "FollowSetup": "kinds",
    "OptionGroup": "kinds",
    "PublishRequest": "kinds",
    "Transport": "kinds",
    "publish_group": "publish",
    "Replica": "service",
    "ReplicaReport": "service",
    "SourceFactory": "service",
    "read_only_reason": "service",
    "replica_config": "service",
    "StagedGroup": "staging",
    "StagedLine": "staging",
    "stage_group": "staging",
    "ReplicaApplied": "status",
    "ReplicaResetDetected": "status",
    "ReplicaState": "status",
    "ReplicaStatus": "status",
    "ReplicaStopped": "status",
    "add_transport_arguments": "targets",
    "chosen_transport": "targets",
    "follow_setup": "targets",
    "open_publisher": "targets",
    "transport_for": "targets",
    "transport_of": "targets",
    "transports": "targets",
    "GroupCursor": "transport",
    "PublishResult": "transport",
    "Publisher": "transport",
    "Puller": "transport",
    "Source": "transport",
    "SourceTail": "transport",
    "TreeSource": "tree",
    "SavedFile": "verified",
    "SavedTrack": "verified",
}


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` when the name is first asked for."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
