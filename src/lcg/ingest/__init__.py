"""Commands that decide events: ingestion, extraction, assertion, merge, deletion,
cross-group edges, curation, and the dump (compaction into a new stream)."""

from __future__ import annotations

# The command modules, offered as namespaces too: a handler named like the command it runs
# calls ``deletion.delete_episode`` rather than an alias.
from lcg.ingest import assertion, cross_group, curation, deletion, merge
from lcg.ingest._common import parse_timestamp
from lcg.ingest.assertion import assert_entity, assert_relationship
from lcg.ingest.cross_group import add_cross_group_edge, rebind_after_reset, rebind_pointers
from lcg.ingest.curation import CurationFrame
from lcg.ingest.declared import DeclaredStructure, DeclareResult, declare_structure
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
from lcg.ingest.reference import ImportResult, import_reference
from lcg.ingest.resolution import fuzzy_key, name_key
from lcg.ingest.sources import (
    DEFAULT_COMMITS,
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_WINDOW,
    ChunkIn,
    CommitWindow,
    DirectBackend,
    RegisteredSource,
    RemovalIn,
    RemovedSource,
    ResolvedSource,
    ScanCache,
    SourceKind,
    SourceStatus,
    StoredChunk,
    SyncBackend,
    SyncChunksResult,
    SyncPart,
    SyncProgress,
    SyncReport,
    TreeScope,
    extract_added,
    forget_source,
    heading_of,
    history_dir,
    list_sources,
    removal_of,
    remove_source,
    resolve_source,
    source_manifest,
    sync_chunks,
    sync_parts,
    sync_tree,
    tree_scope,
)

__all__ = [
    "DEFAULT_COMMITS",
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_WINDOW",
    "ChunkIn",
    "CommitWindow",
    "CurationFrame",
    "DeclareResult",
    "DeclaredStructure",
    "DirectBackend",
    "DumpResult",
    "ExtractionService",
    "ImportResult",
    "RegisteredSource",
    "RemovalIn",
    "RemovedSource",
    "ResolvedSource",
    "ScanCache",
    "SourceKind",
    "SourceStatus",
    "StoredChunk",
    "SyncBackend",
    "SyncChunksResult",
    "SyncPart",
    "SyncProgress",
    "SyncReport",
    "TreeScope",
    "add_cross_group_edge",
    "add_episode",
    "assert_entity",
    "assert_relationship",
    "assertion",
    "clear_all",
    "cross_group",
    "curation",
    "declare_structure",
    "delete_by_group",
    "delete_by_source",
    "delete_chunk_episode",
    "delete_episode",
    "deletion",
    "dump_groups",
    "extract_added",
    "forget_source",
    "fuzzy_key",
    "heading_of",
    "history_dir",
    "import_reference",
    "list_sources",
    "merge",
    "merge_entities",
    "name_key",
    "parse_timestamp",
    "process_chunk",
    "rebind_after_reset",
    "rebind_pointers",
    "removal_of",
    "remove_source",
    "resolve_source",
    "source_manifest",
    "sync_chunks",
    "sync_parts",
    "sync_tree",
    "tree_scope",
]
