"""Source sync methods (lcg's own, for ``lcg ingest``, ``lcg watch`` and ``lcg sources``):
what a group holds of a source tree, one batch of a sync (chunks to add, episodes to
remove), what the tree's files declare (documents, tags, typed edges: ADR 0203), which
source a path belongs to (registering a new one), the sources of the groups, and removing one
(ADR 0200)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from lcg.errors import InvalidParamsError
from lcg.ingest import (
    ChunkIn,
    DeclaredStructure,
    DeclareResult,
    RemovalIn,
    RemovedSource,
    SourceKind,
    SourceStatus,
    StoredChunk,
    SyncChunksResult,
    TreeScope,
    declare_structure,
    extract_added,
    forget_source,
    list_sources,
    part_chunks,
    removal_of,
    resolve_source,
    source_manifest,
    sync_parts,
)
from lcg.rpc.host import ServiceHost
from lcg.rpc.methods_extract import extraction_service
from lcg.rpc.params import GroupId, ReadGroupIds, read_group_ids, write_group
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
    parts = await app.run(sync_parts, p.add, p.remove, chunks_per_part=part_chunks(app.ws))
    result = SyncChunksResult()
    for part in parts:
        await app.run_write(part.record, app.ws, group_id, result)
    await app.run_write(extract_added, app.ws, result, extraction_service(app))
    return result


class DeclareStructureParams(Params):
    """``knowledge_declare_structure``."""

    root: Annotated[
        str,
        Meta(min_length=1, pattern="^/", description="the source's root (its resolved path)"),
    ]
    structure: Annotated[
        DeclaredStructure,
        Meta(
            description="what the tree's files declare: documents (by path), tags, typed "
            "edges, chunk mentions, unresolved links"
        ),
    ]
    group_id: GroupId = None
    examples: ClassVar[dict[str, Any]] = {
        "root": "/home/ada/notes",
        "structure": {
            "documents": [{"path": "moon.md", "name": "Moon"}, {"path": "a11.md", "name": "A11"}],
            "edges": [
                {
                    "relation_type": "LINKS_TO",
                    "source": "moon.md",
                    "target": "a11.md",
                    "fact": "Moon links to A11.",
                }
            ],
        },
    }


async def declare(app: ServiceHost, ctx: CallContext, p: DeclareStructureParams) -> DeclareResult:
    """``knowledge_declare_structure``: one ``StructureDeclared`` with the difference
    between what the group holds of the source's declared structure and ``structure``."""
    group_id = write_group(p.group_id)
    return await app.run_write(declare_structure, app.ws, group_id, p.root, p.structure)


class SourceResolveParams(Params):
    """``knowledge_source_register``."""

    root: Annotated[
        str,
        Meta(
            min_length=1,
            pattern="^/",
            description="the resolved absolute path of the folder or file",
        ),
    ]
    kind: Annotated[str, Meta(pattern="^(folder|file)$", description='"folder" or "file"')] = (
        "folder"
    )
    group_id: GroupId = None
    create: Annotated[
        bool, Meta(description="register the path as a new source when it is no source's")
    ] = True
    touch: Annotated[
        bool, Meta(description="record a new last sync of the source the path belongs to")
    ] = False
    examples: ClassVar[dict[str, Any]] = {"root": "/home/ada/notes", "kind": "folder"}


class SourcesParams(Params):
    """``knowledge_sources``."""

    group_ids: ReadGroupIds = None


class SourcesResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_sources``."""

    sources: list[SourceStatus]
    count: int


class SourceRemoveParams(Params):
    """``knowledge_source_remove``."""

    prefix: Annotated[
        str,
        Meta(
            min_length=2,
            pattern=r"[/:]$",
            description='the source as served: "<label>/" for a folder, "<label>:" for a file',
        ),
    ]
    group_id: GroupId = None
    examples: ClassVar[dict[str, Any]] = {"prefix": "notes~2/"}


async def resolve(app: ServiceHost, ctx: CallContext, p: SourceResolveParams) -> msgspec.Struct:
    """``knowledge_source_register``."""
    group_id = write_group(p.group_id)
    kind: SourceKind = "file" if p.kind == "file" else "folder"
    return await app.run_write(
        resolve_source, app.ws, group_id, p.root, kind, create=p.create, touch=p.touch
    )


async def sources(app: ServiceHost, ctx: CallContext, p: SourcesParams) -> SourcesResult:
    """``knowledge_sources``."""
    groups = read_group_ids(p.group_ids, preserve_empty=True)
    rows = await app.run(list_sources, app.ws, groups)
    return SourcesResult(sources=rows, count=len(rows))


async def remove(app: ServiceHost, ctx: CallContext, p: SourceRemoveParams) -> RemovedSource:
    """``knowledge_source_remove``: the source's episodes removed in parts, each a write of
    its own (as a sync's removals), then its registration."""
    group_id = write_group(p.group_id)
    removal = await app.run(removal_of, app.ws, group_id, p.prefix)
    parts = await app.run(sync_parts, [], removal.removals)
    result = SyncChunksResult()
    for part in parts:
        await app.run_write(part.record, app.ws, group_id, result)
    unregistered = False
    if removal.root is not None:
        unregistered = await app.run_write(forget_source, app.ws, group_id, removal.root)
    return RemovedSource(
        group_id=group_id,
        source=removal.source,
        root=removal.root,
        files=removal.files,
        chunks_removed=result.removed,
        unregistered=unregistered,
    )


#: The source sync methods.
SOURCE_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_source_manifest",
        "read",
        manifest,
        "The chunks a group holds of a source tree (id, file, content hash), for a sync.",
        SourceManifestParams,
        own=True,
    ),
    MethodDef(
        "knowledge_sync_chunks",
        "write",
        sync_chunks,
        "Record one batch of a source sync: chunks to add (skipped if held) and episodes to "
        "remove, in one commit; the added chunks are extracted when an LLM is configured.",
        SyncChunksParams,
        writes=True,
        own=True,
    ),
    MethodDef(
        "knowledge_source_register",
        "write",
        resolve,
        "Which source of the group a path belongs to (the innermost indexed folder holding "
        "it), registering the path as a new source when it is none's; the label its files "
        "are served under.",
        SourceResolveParams,
        writes=True,
        own=True,
    ),
    MethodDef(
        "knowledge_sources",
        "read",
        sources,
        "The source folders and files of the groups: root, label, files, chunks, last sync, "
        "missing or not; trees stored before sources had roots are listed unregistered.",
        SourcesParams,
        own=True,
    ),
    MethodDef(
        "knowledge_source_remove",
        "write",
        remove,
        "Remove a source from a group: every episode of its files (and what was derived "
        "from them), then its registration.",
        SourceRemoveParams,
        writes=True,
        own=True,
    ),
    MethodDef(
        "knowledge_declare_structure",
        "write",
        declare,
        "Make a source's declared structure (documents, tags, LINKS_TO/PART_OF/SUPERSEDES/"
        "TAGGED/IMPORTS edges, mentions) match what its files declare now: one event with "
        "the difference, none when nothing differs.",
        DeclareStructureParams,
        writes=True,
        own=True,
    ),
)
