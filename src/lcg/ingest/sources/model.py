"""What a source sync and its backend pass each other, as records: the chunks and removals
of a batch and what it recorded, the sources a path resolves to, lists or removes.

Pure records (msgspec Structs), no workspace: the client side of a sync (``lcg ingest``
through a service) names them without loading the engine (ADR 0218); the service side
(``store``, ``registry``) makes them.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from lcg.ingest.sources.tree import TreeScope

__all__ = [
    "ChunkIn",
    "RegisteredSource",
    "RemovalIn",
    "RemovedSource",
    "ResolvedSource",
    "SourceKind",
    "SourceRemoval",
    "SourceStatus",
    "SyncChunksResult",
]

#: A folder (a tree) or a single file.
SourceKind = Literal["folder", "file"]


class ChunkIn(msgspec.Struct, frozen=True, kw_only=True):
    """A chunk to add: its id, its file, its text and the file's time."""

    chunk_id: str
    source_file: str
    chunk_text: str
    reference_time: str


class RemovalIn(msgspec.Struct, frozen=True, kw_only=True):
    """Episodes of one source file to remove."""

    source_file: str
    episode_uuids: list[str]


class SyncChunksResult(msgspec.Struct, kw_only=True):
    """What one batch recorded."""

    success: bool = True
    #: chunk id → the new episode's uuid, for each chunk added.
    added: dict[str, str] = {}
    #: Chunks the group already held with the same text (nothing recorded for them).
    already_held: int = 0
    removed: int = 0
    #: Of the added chunks: extracted now, failed to extract (kept, pending), left pending.
    extracted: int = 0
    extraction_failed: int = 0
    pending: int = 0
    #: Of the added chunks: those whose vectors the service makes in the background (they
    #: answer by BM25 until then, ADR 0201).
    vectors_deferred: int = 0


class RegisteredSource(msgspec.Struct, frozen=True, kw_only=True):
    """A registered source of a group."""

    group_id: str
    root: str
    label: str
    kind: SourceKind
    synced_at: str

    @property
    def prefix(self) -> str:
        """What its episodes' sources start with: ``<label>/`` or ``<label>:``."""
        return f"{self.label}:" if self.kind == "file" else f"{self.label}/"

    @property
    def scope(self) -> TreeScope:
        """Its scope, for a scan and a manifest."""
        return TreeScope(root=self.root, label=self.label, prefix=self.prefix)

    def holds(self, root: str) -> str | None:
        """The path of ``root`` inside this source (``""``: the source itself); ``None`` when
        it is not inside."""
        if root == self.root:
            return ""
        if self.kind == "folder":
            base = self.root.rstrip("/") + "/"
            if root.startswith(base):
                return root[len(base) :]
        return None


class ResolvedSource(msgspec.Struct, kw_only=True):
    """The source a path belongs to, and what of it a sync of that path covers."""

    #: ``None``: the path is no source's and none was created.
    source: RegisteredSource | None = None
    #: The path inside the source (``""``: all of it).
    within: str = ""
    #: Paths inside the source that are sources of their own (left out of its scan).
    nested: list[str] = []
    #: Whether this call registered the source.
    created: bool = False


class SourceStatus(msgspec.Struct, kw_only=True):
    """One line of ``lcg sources``: a source and what the group holds of it."""

    group_id: str
    #: How its files are served: ``notes/`` for a folder, ``README.md`` for a file.
    source: str
    prefix: str
    label: str
    kind: SourceKind
    #: The resolved path; ``None`` for a tree an older lcg stored without one.
    root: str | None
    registered: bool
    files: int = 0
    chunks: int = 0
    #: When a sync last recorded a change (``None``: never recorded).
    synced_at: str | None = None
    #: The root is not there now (renamed, moved or deleted).
    missing: bool = False
    #: A running ``lcg watch`` keeps it in sync (it watches the root, a folder inside it, or
    #: a folder holding it, into this group).
    watching: bool = False


class SourceRemoval(msgspec.Struct, kw_only=True):
    """What removing a source takes away: its episodes, file by file."""

    group_id: str
    source: str
    root: str | None
    files: int
    chunks: int
    removals: list[RemovalIn] = []


class RemovedSource(msgspec.Struct, kw_only=True):
    """The answer of ``knowledge_source_remove`` / ``lcg sources remove``."""

    group_id: str
    source: str
    root: str | None
    files: int
    chunks_removed: int
    #: Whether a registration was removed too (``False``: a tree an older lcg stored).
    unregistered: bool
