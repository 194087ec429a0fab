"""``DirectBackend``: a sync into a workspace opened in this process (tests, benches, and a
command that serves the workspace itself), recording the same events a service does.

The service side of a sync (``store``, ``registry``, the declared pass's ``store``), kept out of
``sync`` so that the client side — a scan, the declared pass and a service's backend — imports
nothing of the engine (ADR 0218).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcg.ingest.declared.store import declare_structure
from lcg.ingest.sources.registry import list_sources, remove_source, resolve_source
from lcg.ingest.sources.store import source_manifest, sync_chunks

if TYPE_CHECKING:
    from lcg.ingest.declared.model import DeclaredStructure, DeclareResult
    from lcg.ingest.extraction import ExtractionService
    from lcg.ingest.sources.model import (
        ChunkIn,
        RemovalIn,
        RemovedSource,
        ResolvedSource,
        SourceKind,
        SourceStatus,
        SyncChunksResult,
    )
    from lcg.ingest.sources.tree import StoredChunk, TreeScope
    from lcg.workspace import Workspace

__all__ = ["DirectBackend"]


class DirectBackend:
    """A sync into a workspace opened in this process."""

    def __init__(self, ws: Workspace, extraction: ExtractionService | None = None) -> None:
        self.ws = ws
        self.extraction = extraction

    def manifest(self, group_id: str, scope: TreeScope) -> list[StoredChunk]:
        """The group's chunks of the tree."""
        return source_manifest(self.ws, group_id, scope)

    def sync(
        self, group_id: str, adds: list[ChunkIn], removals: list[RemovalIn]
    ) -> SyncChunksResult:
        """Record one batch."""
        return sync_chunks(self.ws, group_id, adds, removals, self.extraction)

    def resolve(
        self, group_id: str, root: str, kind: SourceKind, *, create: bool, touch: bool = False
    ) -> ResolvedSource:
        """The source ``root`` belongs to (registered here when new and ``create``)."""
        return resolve_source(self.ws, group_id, root, kind, create=create, touch=touch)

    def sources(self, group_ids: list[str] | None) -> list[SourceStatus]:
        """The sources of the groups (``None``: every group) and what each holds."""
        return list_sources(self.ws, group_ids)

    def remove(self, group_id: str, prefix: str) -> RemovedSource:
        """Remove the source served under ``prefix``: its episodes, then its registration."""
        return remove_source(self.ws, group_id, prefix)

    def declare(self, group_id: str, root: str, structure: DeclaredStructure) -> DeclareResult:
        """Make the source's declared structure match ``structure`` (ADR 0203)."""
        return declare_structure(self.ws, group_id, root, structure)
