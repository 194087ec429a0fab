"""The model: event types, the per-group stream (writer, reader), generations, marks, sidecars.

This package imports nothing of lcg's but the leaf modules ``lcg.errors``, ``lcg.telemetry`` and
``lcg.timestamps``.
"""

from __future__ import annotations

from lcg.events.bounds import Bounds, read_bounds
from lcg.events.codec import (
    Decoded,
    admit,
    decode_line,
    encode_event,
    encode_events,
    seal,
    verify_checksum,
)
from lcg.events.generation import (
    StreamGeneration,
    effective_generation,
    generation_from_lines,
    mint_generation,
    read_generation,
    stream_generation,
)
from lcg.events.groups import decode_group, encode_group, list_groups
from lcg.events.linecheck import CheckedLine, LineCheck
from lcg.events.marks import MarkInfo, create_mark, delete_mark, list_marks
from lcg.events.model import (
    CURRENT_VERSIONS,
    EVENT_TYPES,
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    DroppedEdge,
    EdgeInvalidation,
    EdgeRecord,
    EdgeRestated,
    EntitiesMerged,
    EntityAsserted,
    EntityRecord,
    EntityRetyped,
    EntitySummaryUpdate,
    EntityTypesChanged,
    EpisodeAdded,
    EpisodeExtracted,
    EpisodesDeleted,
    Event,
    GroupPurged,
    MergedAlias,
    MergeOutcome,
    PointerRebind,
    PointersRebound,
    RelationRetyped,
    RelationshipAsserted,
    RelationTypesChanged,
    RowId,
    Timestamp,
)
from lcg.events.position import Position
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.store import WalStore
from lcg.events.tail import TailDefect, VerifiedTail
from lcg.events.writer import FsyncPolicy, StreamWriter

__all__ = [
    "CURRENT_VERSIONS",
    "EVENT_TYPES",
    "Bounds",
    "CheckedLine",
    "CorrectionsApplied",
    "CrossGroupEdgeAdded",
    "Decoded",
    "DroppedEdge",
    "EdgeInvalidation",
    "EdgeRecord",
    "EdgeRestated",
    "EntitiesMerged",
    "EntityAsserted",
    "EntityRecord",
    "EntityRetyped",
    "EntitySummaryUpdate",
    "EntityTypesChanged",
    "EpisodeAdded",
    "EpisodeExtracted",
    "EpisodesDeleted",
    "Event",
    "FsyncPolicy",
    "GroupPurged",
    "LineCheck",
    "MarkInfo",
    "MergeOutcome",
    "MergedAlias",
    "PointerRebind",
    "PointersRebound",
    "Position",
    "ReadReport",
    "RelationRetyped",
    "RelationTypesChanged",
    "RelationshipAsserted",
    "RowId",
    "StreamGeneration",
    "StreamReader",
    "StreamWriter",
    "TailDefect",
    "Timestamp",
    "VerifiedTail",
    "WalStore",
    "admit",
    "create_mark",
    "decode_group",
    "decode_line",
    "delete_mark",
    "effective_generation",
    "encode_event",
    "encode_events",
    "encode_group",
    "generation_from_lines",
    "list_groups",
    "list_marks",
    "mint_generation",
    "read_bounds",
    "read_generation",
    "seal",
    "stream_generation",
    "verify_checksum",
]
