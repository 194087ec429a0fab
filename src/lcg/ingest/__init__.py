"""Commands that decide events: ingestion, extraction, assertion, merge, deletion,
cross-group edges, curation, and the dump (compaction into a new stream).

The face is lazy (ADR 0218): a name is imported from its module on first use (module
``__getattr__``), so ``from lcg.ingest import X`` loads what ``X`` needs and no more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcg.lazy import lazy_face

if TYPE_CHECKING:
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
        format_list,
        heading_of,
        history_dir,
        list_sources,
        part_chunks,
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
    "format_list",
    "fuzzy_key",
    "heading_of",
    "history_dir",
    "import_reference",
    "list_sources",
    "merge",
    "merge_entities",
    "name_key",
    "parse_timestamp",
    "part_chunks",
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

#: The face's names by the module that holds them.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "lcg.ingest._common": ("parse_timestamp",),
    "lcg.ingest.assertion": ("assert_entity", "assert_relationship"),
    "lcg.ingest.cross_group": ("add_cross_group_edge", "rebind_after_reset", "rebind_pointers"),
    "lcg.ingest.curation": ("CurationFrame",),
    "lcg.ingest.declared": ("DeclaredStructure", "DeclareResult", "declare_structure"),
    "lcg.ingest.deletion": (
        "clear_all",
        "delete_by_group",
        "delete_by_source",
        "delete_chunk_episode",
        "delete_episode",
    ),
    "lcg.ingest.dump": ("DumpResult", "dump_groups"),
    "lcg.ingest.episodes": ("add_episode", "process_chunk"),
    "lcg.ingest.extraction": ("ExtractionService",),
    "lcg.ingest.merge": ("merge_entities",),
    "lcg.ingest.reference": ("ImportResult", "import_reference"),
    "lcg.ingest.resolution": ("fuzzy_key", "name_key"),
    "lcg.ingest.sources": (
        "DEFAULT_COMMITS",
        "DEFAULT_MAX_CHARS",
        "DEFAULT_MAX_FILE_BYTES",
        "DEFAULT_WINDOW",
        "ChunkIn",
        "CommitWindow",
        "DirectBackend",
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
        "extract_added",
        "forget_source",
        "format_list",
        "heading_of",
        "history_dir",
        "list_sources",
        "part_chunks",
        "removal_of",
        "remove_source",
        "resolve_source",
        "source_manifest",
        "sync_chunks",
        "sync_parts",
        "sync_tree",
        "tree_scope",
    ),
}
#: The modules the face offers as namespaces.
_MODULES = frozenset({"assertion", "cross_group", "curation", "deletion", "merge"})
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}


__getattr__, __dir__ = lazy_face(
    __name__, {**_HOMES, **{m: f"{__name__}.{m}" for m in _MODULES}}, __all__, modules=_MODULES
)
