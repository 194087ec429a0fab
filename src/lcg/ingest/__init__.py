"""Commands that decide events: ingestion, extraction, assertion, merge, deletion,
cross-group edges, curation, and the dump (compaction into a new stream)."""

from __future__ import annotations

from lcg.ingest._common import parse_timestamp
from lcg.ingest.assertion import assert_entity, assert_relationship
from lcg.ingest.cross_group import add_cross_group_edge, rebind_pointers
from lcg.ingest.deletion import (
    clear_all,
    delete_by_group,
    delete_by_source,
    delete_chunk_episode,
    delete_episode,
)
from lcg.ingest.dump import DumpResult, dump_groups
from lcg.ingest.episodes import add_episode, process_chunk
from lcg.ingest.extraction import ExtractionService
from lcg.ingest.merge import merge_entities
from lcg.ingest.resolution import fuzzy_key, name_key

__all__ = [
    "DumpResult",
    "ExtractionService",
    "add_cross_group_edge",
    "add_episode",
    "assert_entity",
    "assert_relationship",
    "clear_all",
    "delete_by_group",
    "delete_by_source",
    "delete_chunk_episode",
    "delete_episode",
    "dump_groups",
    "fuzzy_key",
    "merge_entities",
    "name_key",
    "parse_timestamp",
    "process_chunk",
    "rebind_pointers",
]
