"""Source sync methods (lcg's own, for ``lcg ingest`` and ``lcg watch``): what a group holds
of a source tree, and one batch of a sync (chunks to add, episodes to remove)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from lcg.errors import InvalidParamsError
from lcg.ingest import (
    ChunkIn,
    RemovalIn,
    StoredChunk,
    SyncChunksResult,
    TreeScope,
    extract_added,
    source_manifest,
    sync_parts,
)
from lcg.rpc.host import ServiceHost
from lcg.rpc.methods_extract import extraction_service
from lcg.rpc.params import GroupId, write_group
from lcg.rpc.registry import CallContext, MethodDef, Params

__all__ = ["SOURCE_METHODS"]


class SourceManifestParams(Params):
    """``knowledge_source_manifest``."""

    prefix: Annotated[
        str,
        Meta(
            min_length=2,
            pattern=r"[/:]$",
            description='the tree: "<folder name>/" or "<file name>:"',
        ),
    ]
    group_id: GroupId = None
    examples: ClassVar[dict[str, Any]] = {"prefix": "notes/"}


class ManifestResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_source_manifest``."""

    chunks: list[StoredChunk]
    count: int


class SyncChunksParams(Params):
    """``knowledge_sync_chunks``."""

    group_id: GroupId = None
    add: Annotated[
        list[ChunkIn],
        Meta(description="chunks to add: {chunk_id, source_file, chunk_text, reference_time}"),
    ] = []
    remove: Annotated[
        list[RemovalIn],
        Meta(description="episodes to remove: {source_file, episode_uuids}"),
    ] = []
    examples: ClassVar[dict[str, Any]] = {
        "add": [
            {
                "chunk_id": "notes/moon.md#3f2a9c1b0d4e",
                "source_file": "notes/moon.md",
                "chunk_text": "# Moon\n\nApollo 11 landed in July 1969.",
                "reference_time": "2024-05-01T12:00:00Z",
            }
        ]
    }


def _scope(prefix: str) -> TreeScope:
    label = prefix[:-1]
    if not label.strip("/"):
        raise InvalidParamsError(f"prefix {prefix!r} names no tree")
    return TreeScope(root="", label=label, prefix=prefix)


async def manifest(app: ServiceHost, ctx: CallContext, p: SourceManifestParams) -> ManifestResult:
    """``knowledge_source_manifest``."""
    rows = await app.run(source_manifest, app.ws, write_group(p.group_id), _scope(p.prefix))
    return ManifestResult(chunks=rows, count=len(rows))


async def sync_chunks(app: ServiceHost, ctx: CallContext, p: SyncChunksParams) -> msgspec.Struct:
    """``knowledge_sync_chunks``: the batch recorded in parts, each a write of its own (ADR
    0195). The group's lock is held for one part at a time and this call gives the write
    threads back between parts, so another client's write or read of the group gets in while
    a 60,000-chunk batch is recorded; the answer is the sum of the parts'."""
    group_id = write_group(p.group_id)
    # Every chunk is checked before anything is written (off the event loop: 60,000 times).
    parts = await app.run(sync_parts, p.add, p.remove)
    result = SyncChunksResult()
    for part in parts:
        await app.run_write(part.record, app.ws, group_id, result)
    await app.run_write(extract_added, app.ws, result, extraction_service(app))
    return result


#: The source sync methods.
SOURCE_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_source_manifest",
        "read",
        manifest,
        "The chunks a group holds of a source tree (id, file, content hash), for a sync.",
        SourceManifestParams,
    ),
    MethodDef(
        "knowledge_sync_chunks",
        "write",
        sync_chunks,
        "Record one batch of a source sync: chunks to add (skipped if held) and episodes to "
        "remove, in one commit; the added chunks are extracted when an LLM is configured.",
        SyncChunksParams,
        writes=True,
    ),
)
