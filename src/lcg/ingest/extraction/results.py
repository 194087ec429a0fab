"""What extraction hands back: the counters of one episode, the outcome of one extraction and
the result of a pass over the pending episodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from lcg.events import DroppedEdge

__all__ = [
    "ChunkCounters",
    "EpisodeExtraction",
    "ExtractPendingResult",
    "PendingFailure",
    "ProgressFn",
]

#: ``progress(processed, total)`` of a pass over many episodes.
ProgressFn = Callable[[int, int], None]


class ChunkCounters(msgspec.Struct, kw_only=True):
    """The reference's ``process_chunk`` counters of one extraction (plus ``edges_restated``)."""

    nodes_extracted: int = 0
    edges_extracted: int = 0
    edges_dropped_unresolvable: int = 0
    dropped_edges: list[DroppedEdge] = []
    edges_reclassified_unclassified: int = 0
    entities_reclassified_unclassified: int = 0
    entities_dropped_malformed: int = 0
    edges_dropped_malformed: int = 0
    #: lcg: edges that restated a current edge (the episode was added to it; no duplicate).
    edges_restated: int = 0
    #: lcg: extracted entities that resolved to an existing entity of the group.
    entities_matched: int = 0


class EpisodeExtraction(msgspec.Struct, kw_only=True):
    """What ``extract_episode`` did with one episode."""

    episode_uuid: str
    group_id: str = ""
    status: Literal[
        "extracted", "already_extracted", "in_progress", "failed", "not_found", "no_extractor"
    ]
    error: str | None = None
    counters: ChunkCounters = msgspec.field(default_factory=ChunkCounters)
    llm_calls: int = 0
    duration_seconds: float = 0.0


class PendingFailure(msgspec.Struct, kw_only=True):
    """An episode ``extract_pending`` could not extract (it stays pending)."""

    episode_uuid: str
    group_id: str
    error: str


class ExtractPendingResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_extract_pending``."""

    success: bool
    group_ids: list[str]
    attempted: int = 0
    extracted: int = 0
    already_extracted: int = 0
    #: Episodes another caller of this service was extracting at the time (not repeated).
    in_progress: int = 0
    failed: int = 0
    remaining: int = 0
    nodes_extracted: int = 0
    edges_extracted: int = 0
    edges_restated: int = 0
    edges_dropped_unresolvable: int = 0
    failures: list[PendingFailure] = []
    duration_seconds: float = 0.0
    error: str | None = None
