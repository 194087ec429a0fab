"""The workspace side of a source sync: what a group holds of a tree, and one batch of changes.

``source_manifest`` reads the group's episodes of a tree (id, source, hash) from the graph, so
what a source holds is whatever the stream's ``EpisodeAdded`` and ``EpisodesDeleted`` events
left, in a replay or a replica alike. ``sync_chunks`` records one batch: the chunks to add as
``EpisodeAdded`` events (each with its ``content_hash``) and the removals as one
``EpisodesDeleted`` per source file, in one commit under the group's lock. It re-checks what
the group holds first, so a batch sent twice (a retry after a crash, two syncs at once) adds
nothing twice and removes nothing already gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from lcg.errors import InvalidParamsError
from lcg.events import EpisodeAdded, EpisodesDeleted, Event
from lcg.ingest._common import new_uuid, parse_timestamp
from lcg.ingest.episodes import content_hash
from lcg.ingest.sources.tree import StoredChunk, TreeScope, is_source_chunk
from lcg.workspace import Workspace

if TYPE_CHECKING:
    from lcg.ingest.extraction import ExtractionService

__all__ = ["ChunkIn", "RemovalIn", "SyncChunksResult", "source_manifest", "sync_chunks"]


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


def source_manifest(ws: Workspace, group_id: str, scope: TreeScope) -> list[StoredChunk]:
    """The group's episodes of the tree ``scope`` names."""
    with ws.reading():
        rows = ws.graph.query(
            "MATCH (p:Episodic) WHERE p.group_id = $g AND starts_with(p.source_description, $s) "
            "RETURN p.uuid, p.name, p.source_description, p.content_hash",
            {"g": group_id, "s": scope.prefix},
        )
    out: list[StoredChunk] = []
    for uuid, name, description, digest in rows:
        source_file = is_source_chunk(str(name), str(description), scope)
        if source_file is not None:
            out.append(
                StoredChunk(
                    episode_uuid=str(uuid),
                    chunk_id=str(name),
                    source_file=source_file,
                    content_hash=str(digest or ""),
                )
            )
    return out


def _check(chunk: ChunkIn) -> str:
    if not chunk.chunk_text:
        raise InvalidParamsError(f"chunk {chunk.chunk_id!r}: chunk_text must be non-empty")
    if not chunk.chunk_id or not chunk.source_file:
        raise InvalidParamsError("every chunk needs a chunk_id and a source_file")
    return parse_timestamp(chunk.reference_time, field="reference_time")


def sync_chunks(
    ws: Workspace,
    group_id: str,
    adds: list[ChunkIn],
    removals: list[RemovalIn],
    extraction: ExtractionService | None = None,
) -> SyncChunksResult:
    """Record one batch of a sync: ``adds`` not held yet, then ``removals`` still held; then
    extract the added chunks when an extractor is configured (else they stay pending)."""
    result = _record(ws, group_id, adds, removals)
    uuids = list(result.added.values())
    if extraction is None or not extraction.configured:
        result.pending = len(uuids)
        return result
    for done in extraction.extract_many(ws, uuids):
        if done.status in ("extracted", "already_extracted"):
            result.extracted += 1
        elif done.status == "failed":
            result.extraction_failed += 1
        else:
            result.pending += 1
    return result


def _record(
    ws: Workspace, group_id: str, adds: list[ChunkIn], removals: list[RemovalIn]
) -> SyncChunksResult:
    times = [_check(c) for c in adds]
    result = SyncChunksResult()
    with ws.group_lock(group_id):
        with ws.reading():
            held = _held(ws, group_id, [c.chunk_id for c in adds])
            present = _present(ws, group_id, [u for r in removals for u in r.episode_uuids])
        events: list[Event] = []
        for chunk, when in zip(adds, times, strict=True):
            digest = content_hash(chunk.chunk_text)
            if (chunk.chunk_id, digest) in held:
                result.already_held += 1
                continue
            held.add((chunk.chunk_id, digest))
            event = EpisodeAdded(
                group_id=group_id,
                uuid=new_uuid(),
                name=chunk.chunk_id,
                source="text",
                source_description=f"{chunk.source_file}:{chunk.chunk_id}",
                content=chunk.chunk_text,
                created_at=when,
                valid_at=when,
                content_hash=digest,
            )
            events.append(event)
            result.added[chunk.chunk_id] = event.uuid
        for removal in removals:
            uuids = [u for u in dict.fromkeys(removal.episode_uuids) if u in present]
            if uuids:
                events.append(
                    EpisodesDeleted(
                        group_id=group_id, by="source", key=removal.source_file, episode_uuids=uuids
                    )
                )
                result.removed += len(uuids)
        if events:
            ws.commit(group_id, events)
    return result


def _held(ws: Workspace, group_id: str, names: list[str]) -> set[tuple[str, str]]:
    if not names:
        return set()
    rows = ws.graph.query(
        "MATCH (p:Episodic) WHERE p.group_id = $g AND p.name IN $n RETURN p.name, p.content_hash",
        {"g": group_id, "n": names},
    )
    return {(str(n), str(h or "")) for n, h in rows}


def _present(ws: Workspace, group_id: str, uuids: list[str]) -> set[str]:
    if not uuids:
        return set()
    rows = ws.graph.query(
        "MATCH (p:Episodic) WHERE p.group_id = $g AND p.uuid IN $u RETURN p.uuid",
        {"g": group_id, "u": uuids},
    )
    return {str(u) for (u,) in rows}
