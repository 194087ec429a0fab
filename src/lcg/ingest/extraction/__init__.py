"""The extraction pipeline: an episode's stored text → one ``EpisodeExtracted`` event.

``service`` runs it (``ExtractionService``); ``_prepare`` is phase A, done with no lock held
(read the episode, prepare the extractor's batch); ``_decide`` is phase C, done under the
group's lock (resolve entities, resolve endpoints, classify edges, build the event);
``results`` holds what callers get back.
"""

from __future__ import annotations

from lcg.ingest.extraction.results import (
    ChunkCounters,
    EpisodeExtraction,
    ExtractPendingResult,
    PendingFailure,
    ProgressFn,
)
from lcg.ingest.extraction.service import ExtractionService

__all__ = [
    "ChunkCounters",
    "EpisodeExtraction",
    "ExtractPendingResult",
    "ExtractionService",
    "PendingFailure",
    "ProgressFn",
]
