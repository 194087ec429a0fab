"""``ServiceBackend``: a sync (``lcg ingest``, ``lcg watch``, ``lcg sources``) through the
workspace's service, with the ``knowledge_source_*`` and ``knowledge_sync_chunks`` methods.

Imported when a sync starts, not when a parser is built: it names the ingest package's types.
"""

from __future__ import annotations

import msgspec

from lcg.client import Client
from lcg.ingest import (
    ChunkIn,
    DeclaredStructure,
    DeclareResult,
    RemovalIn,
    RemovedSource,
    ResolvedSource,
    SourceKind,
    SourceStatus,
    StoredChunk,
    SyncChunksResult,
    TreeScope,
)

__all__ = ["ServiceBackend"]

_to_builtins = msgspec.to_builtins


class ServiceBackend:
    """A sync through the running service."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def manifest(self, group_id: str, scope: TreeScope) -> list[StoredChunk]:
        """The group's chunks of the tree."""
        result = self.client.call(
            "knowledge_source_manifest", {"prefix": scope.prefix, "group_id": group_id}
        )
        return msgspec.convert(result["chunks"], list[StoredChunk])

    def sync(
        self, group_id: str, adds: list[ChunkIn], removals: list[RemovalIn]
    ) -> SyncChunksResult:
        """Record one batch."""
        result = self.client.call(
            "knowledge_sync_chunks",
            {"group_id": group_id, "add": _to_builtins(adds), "remove": _to_builtins(removals)},
        )
        return msgspec.convert(result, SyncChunksResult)

    def resolve(
        self, group_id: str, root: str, kind: SourceKind, *, create: bool, touch: bool = False
    ) -> ResolvedSource:
        """The source ``root`` belongs to (registered by the service when new and ``create``)."""
        params = {"group_id": group_id, "root": root, "kind": kind, "create": create}
        result = self.client.call("knowledge_source_register", {**params, "touch": touch})
        return msgspec.convert(result, ResolvedSource)

    def sources(self, group_ids: list[str] | None) -> list[SourceStatus]:
        """The sources of the groups (``None``: every group) and what each holds."""
        result = self.client.call("knowledge_sources", {"group_ids": group_ids})
        return msgspec.convert(result["sources"], list[SourceStatus])

    def remove(self, group_id: str, prefix: str) -> RemovedSource:
        """Remove the source served under ``prefix``: its episodes, then its registration."""
        result = self.client.call(
            "knowledge_source_remove", {"group_id": group_id, "prefix": prefix}
        )
        return msgspec.convert(result, RemovedSource)

    def declare(self, group_id: str, root: str, structure: DeclaredStructure) -> DeclareResult:
        """Make the source's declared structure match ``structure`` (ADR 0203). The unresolved
        links stay here (the service needs none), and empty fields are left out: a tree's
        structure is one request."""
        sent = msgspec.structs.replace(structure, unresolved=[])
        result = self.client.call(
            "knowledge_declare_structure",
            {"group_id": group_id, "root": root, "structure": _compact(_to_builtins(sent))},
        )
        return msgspec.convert(result, DeclareResult)


def _compact(value: object) -> object:
    """``value`` without the keys whose value is empty (``None``, ``[]``, ``{}``): the
    service's decoder gives each its default again."""
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if v is not None and v != [] and v != {}}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value
