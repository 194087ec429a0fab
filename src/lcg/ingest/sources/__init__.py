"""Source sync: a folder of one's own files (notes, docs, code) kept current in a group.

``resolve_source`` says which registered source a path belongs to, or registers it
(``registry``: a source is its group and resolved root, served under a label); ``scan_tree``
finds, reads and chunks a tree's files (``discover``, ``readers``, ``chunking``);
``plan_sync`` compares them with what the group holds (``source_manifest``); ``sync_chunks``
records a batch of the plan as events. ``FORMATS`` is the one table of the formats read
(extensions, reader, sectioner, extraction prompt) that discovery, reading, chunking and the
prompt choice consult (``formats``). ``source_times`` gives a file's time; ``read_commits``
a folder's git commits, sent as episodes of it too (``commits``). What a sync and its backend
pass each other are the records of ``model``; ``DirectBackend`` (``direct``) records a sync
into a workspace opened in this process. Only the service side (``store``, ``registry``,
``direct``) needs the engine: the client side (the scan, the declared pass, ``sync_tree``
through a service) loads none of it.

The face is lazy (ADR 0218): a name is imported from its module on first use (module
``__getattr__``), so ``from lcg.ingest.sources import X`` loads what ``X`` needs and no more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# ``discover`` names a module and its function: bound now, so the function is what the face
# offers even when something imported the module first (which sets the package attribute).
from lcg.ingest.sources.discover import DEFAULT_MAX_FILE_BYTES, Skipped, discover
from lcg.lazy import lazy_face

if TYPE_CHECKING:
    from lcg.ingest.sources.chunking import DEFAULT_MAX_CHARS, Chunk, chunk_document, heading_of
    from lcg.ingest.sources.commits import CommitSync, commit_mentions, read_commits
    from lcg.ingest.sources.direct import DirectBackend
    from lcg.ingest.sources.formats import FORMATS, Format, Unread, format_list, prompt_of
    from lcg.ingest.sources.history import (
        DEFAULT_COMMITS,
        DEFAULT_WINDOW,
        CommitWindow,
        history_dir,
    )
    from lcg.ingest.sources.model import (
        ChunkIn,
        RegisteredSource,
        RemovalIn,
        RemovedSource,
        ResolvedSource,
        SourceKind,
        SourceStatus,
        SyncChunksResult,
    )
    from lcg.ingest.sources.readers import Document, read_document
    from lcg.ingest.sources.registry import (
        forget_source,
        list_sources,
        registered_sources,
        removal_of,
        remove_source,
        resolve_source,
    )
    from lcg.ingest.sources.store import (
        SyncPart,
        extract_added,
        part_chunks,
        source_manifest,
        sync_chunks,
        sync_parts,
    )
    from lcg.ingest.sources.sync import (
        SyncBackend,
        SyncProgress,
        SyncReport,
        sync_tree,
    )
    from lcg.ingest.sources.times import source_times
    from lcg.ingest.sources.tree import (
        LocalChunk,
        LocalFile,
        Scan,
        ScanCache,
        StoredChunk,
        SyncPlan,
        TreeScope,
        plan_sync,
        scan_tree,
        tree_scope,
    )

__all__ = [
    "DEFAULT_COMMITS",
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_WINDOW",
    "FORMATS",
    "Chunk",
    "ChunkIn",
    "CommitSync",
    "CommitWindow",
    "DirectBackend",
    "Document",
    "Format",
    "LocalChunk",
    "LocalFile",
    "RegisteredSource",
    "RemovalIn",
    "RemovedSource",
    "ResolvedSource",
    "Scan",
    "ScanCache",
    "Skipped",
    "SourceKind",
    "SourceStatus",
    "StoredChunk",
    "SyncBackend",
    "SyncChunksResult",
    "SyncPart",
    "SyncPlan",
    "SyncProgress",
    "SyncReport",
    "TreeScope",
    "Unread",
    "chunk_document",
    "commit_mentions",
    "discover",
    "extract_added",
    "forget_source",
    "format_list",
    "heading_of",
    "history_dir",
    "list_sources",
    "part_chunks",
    "plan_sync",
    "prompt_of",
    "read_commits",
    "read_document",
    "registered_sources",
    "removal_of",
    "remove_source",
    "resolve_source",
    "scan_tree",
    "source_manifest",
    "source_times",
    "sync_chunks",
    "sync_parts",
    "sync_tree",
    "tree_scope",
]

#: The face's names by the module that holds them.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "lcg.ingest.sources.chunking": ("DEFAULT_MAX_CHARS", "Chunk", "chunk_document", "heading_of"),
    "lcg.ingest.sources.commits": ("CommitSync", "commit_mentions", "read_commits"),
    "lcg.ingest.sources.direct": ("DirectBackend",),
    "lcg.ingest.sources.formats": ("FORMATS", "Format", "Unread", "format_list", "prompt_of"),
    "lcg.ingest.sources.history": (
        "DEFAULT_COMMITS",
        "DEFAULT_WINDOW",
        "CommitWindow",
        "history_dir",
    ),
    "lcg.ingest.sources.readers": ("Document", "read_document"),
    "lcg.ingest.sources.model": (
        "ChunkIn",
        "RegisteredSource",
        "RemovalIn",
        "RemovedSource",
        "ResolvedSource",
        "SourceKind",
        "SourceStatus",
        "SyncChunksResult",
    ),
    "lcg.ingest.sources.registry": (
        "forget_source",
        "list_sources",
        "registered_sources",
        "removal_of",
        "remove_source",
        "resolve_source",
    ),
    "lcg.ingest.sources.store": (
        "SyncPart",
        "extract_added",
        "part_chunks",
        "source_manifest",
        "sync_chunks",
        "sync_parts",
    ),
    "lcg.ingest.sources.sync": (
        "SyncBackend",
        "SyncProgress",
        "SyncReport",
        "sync_tree",
    ),
    "lcg.ingest.sources.times": ("source_times",),
    "lcg.ingest.sources.tree": (
        "LocalChunk",
        "LocalFile",
        "Scan",
        "ScanCache",
        "StoredChunk",
        "SyncPlan",
        "TreeScope",
        "plan_sync",
        "scan_tree",
        "tree_scope",
    ),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}


__getattr__, __dir__ = lazy_face(__name__, _HOMES, __all__)
