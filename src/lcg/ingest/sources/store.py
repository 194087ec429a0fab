"""The workspace side of a source sync: what a group holds of a tree, and one batch of changes.

``source_manifest`` reads the group's episodes of a tree (id, source, hash) from the graph, so
what a source holds is whatever the stream's ``EpisodeAdded`` and ``EpisodesDeleted`` events
left, in a replay or a replica alike. ``sync_chunks`` records one batch: the chunks to add as
``EpisodeAdded`` events (each with its ``content_hash``) and the removals as
``EpisodesDeleted`` events per source file.

A batch is recorded in parts (ADR 0195): ``sync_parts`` cuts it into parts of at most
``PART_CHUNKS`` chunks and ``PART_BYTES`` bytes of text, then removals of at most
``PART_REMOVALS`` episodes; ``SyncPart.record`` commits one part under the group's lock, so
the lock is released between parts. Whatever one request holds (an 8 MiB request can carry
60,000 chunks), other writers and readers of the group get in between its parts, and the work
in memory at a time is a part's. The service records each part as a write of its own
(``knowledge_sync_chunks``); ``sync_chunks`` records them one after the other here. Every
chunk is checked before the first part is written: a bad chunk still refuses the whole batch
with nothing recorded.

Each part re-checks what the group holds first, so a batch sent twice (a retry after a crash,
two syncs at once) adds nothing twice and removes nothing already gone. Each part is durable
on its own: a crash between parts leaves the earlier parts recorded, and the same batch sent
again records only the rest. The answer is the sum of the parts'.

Text first, vectors follow (ADR 0201): where a background drainer serves the workspace (a
service), a part is committed with its vectors deferred — its chunks are in the graph and BM25
when the part returns, the vector projection waits, and the drainer makes the vectors after
(``vectors_deferred`` counts the chunks left to it). Without one (a workspace opened by the
command itself) the vectors are made with the part, as before. A part whose vectors are
deferred holds the lock only for its append, graph and BM25, so it may be larger
(``DEFERRED_PART_CHUNKS``, ``part_chunks``; still at most ``PART_BYTES``, ADR 0206).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lcg.errors import InvalidParamsError
from lcg.events import EpisodeAdded, EpisodesDeleted, Event, chunk_description
from lcg.ingest._common import new_uuid, parse_timestamp
from lcg.ingest.episodes import content_hash
from lcg.ingest.sources.model import ChunkIn, RemovalIn, SyncChunksResult
from lcg.ingest.sources.tree import StoredChunk, TreeScope, is_source_chunk
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

if TYPE_CHECKING:
    from lcg.ingest.extraction import ExtractionService

__all__ = [
    "DEFERRED_PART_CHUNKS",
    "PART_BYTES",
    "PART_CHUNKS",
    "PART_REMOVALS",
    "SyncPart",
    "extract_added",
    "part_chunks",
    "source_manifest",
    "sync_chunks",
    "sync_parts",
]

#: Chunks recorded per part of a batch: one commit, one embedder call (as ``lcg ingest``
#: sends them, and the replay batch size's default).
PART_CHUNKS = 64
#: Chunks per part when the part's vectors are left to the background drainer (ADR 0206): the
#: part's lock time is its append, graph and BM25 (about 0.1 ms a chunk), not the model's.
DEFERRED_PART_CHUNKS = 1024
#: Bytes of chunk text per part (a larger chunk is a part of its own).
PART_BYTES = 1024 * 1024
#: Episodes removed per part.
PART_REMOVALS = 2000


def source_manifest(ws: Workspace, group_id: str, scope: TreeScope) -> list[StoredChunk]:
    """The group's episodes of the tree ``scope`` names."""
    with ws.reading():
        rows = gr.chunk_episodes_under(ws.graph, group_id, scope.prefix)
    out: list[StoredChunk] = []
    for row in rows:
        source_file = is_source_chunk(row.name, row.source_description, scope)
        if source_file is not None:
            out.append(
                StoredChunk(
                    episode_uuid=row.uuid,
                    chunk_id=row.name,
                    source_file=source_file,
                    content_hash=row.content_hash,
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
    """Record one batch of a sync, part after part: ``adds`` not held yet, then ``removals``
    still held; then extract the added chunks when an extractor is configured (else they
    stay pending)."""
    result = SyncChunksResult()
    for part in sync_parts(adds, removals, chunks_per_part=part_chunks(ws)):
        part.record(ws, group_id, result)
    extract_added(ws, result, extraction)
    return result


@dataclass(frozen=True, slots=True)
class SyncPart:
    """One part of a batch: chunks to add (with their parsed times) or removals."""

    adds: list[ChunkIn]
    times: list[str]
    removals: list[RemovalIn]

    def record(self, ws: Workspace, group_id: str, result: SyncChunksResult) -> None:
        """Commit this part under the group's lock (held for this part only) and add what it
        recorded to ``result``."""
        if self.adds:
            _record_adds(ws, group_id, self.adds, self.times, result)
        if self.removals:
            _record_removals(ws, group_id, self.removals, result)


def part_chunks(ws: Workspace) -> int:
    """Chunks per part of a batch recorded into ``ws``: ``DEFERRED_PART_CHUNKS`` where a
    background drainer makes the vectors, else ``PART_CHUNKS`` (one embedder call each)."""
    return DEFERRED_PART_CHUNKS if ws.vectors.backlog.drained_in_background else PART_CHUNKS


def sync_parts(
    adds: list[ChunkIn], removals: list[RemovalIn], *, chunks_per_part: int = PART_CHUNKS
) -> list[SyncPart]:
    """The parts of a batch, adds first (at most ``chunks_per_part`` chunks and
    ``PART_BYTES`` bytes each); ``InvalidParamsError`` for a bad chunk (before any part is
    recorded)."""
    times = [_check(c) for c in adds]
    parts = [SyncPart(adds[a:b], times[a:b], []) for a, b in _add_parts(adds, chunks_per_part)]
    parts.extend(SyncPart([], [], r) for r in _removal_parts(removals))
    return parts


def extract_added(
    ws: Workspace, result: SyncChunksResult, extraction: ExtractionService | None
) -> None:
    """Extract the chunks ``result`` added when an extractor is configured (counted in
    ``result``); else count them pending."""
    uuids = list(result.added.values())
    if extraction is None or not extraction.configured:
        result.pending = len(uuids)
        return
    for done in extraction.extract_many(ws, uuids):
        if done.status in ("extracted", "already_extracted"):
            result.extracted += 1
        elif done.status == "failed":
            result.extraction_failed += 1
        else:
            result.pending += 1


def _add_parts(adds: list[ChunkIn], chunks: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each part of ``adds``: at most ``chunks`` chunks and
    ``PART_BYTES`` bytes of text (a larger chunk alone)."""
    start, size = 0, 0
    for i, chunk in enumerate(adds):
        n = len(chunk.chunk_text.encode("utf-8", "surrogatepass"))
        if i > start and (i - start >= chunks or size + n > PART_BYTES):
            yield start, i
            start, size = i, 0
        size += n
    if start < len(adds):
        yield start, len(adds)


def _removal_parts(removals: list[RemovalIn]) -> Iterator[list[RemovalIn]]:
    """``removals`` in parts of at most ``PART_REMOVALS`` episodes (a file's list split)."""
    part: list[RemovalIn] = []
    size = 0
    for removal in removals:
        uuids = list(dict.fromkeys(removal.episode_uuids))
        for i in range(0, max(len(uuids), 1), PART_REMOVALS):
            piece = uuids[i : i + PART_REMOVALS]
            if part and size + len(piece) > PART_REMOVALS:
                yield part
                part, size = [], 0
            part.append(RemovalIn(source_file=removal.source_file, episode_uuids=piece))
            size += len(piece)
    if part:
        yield part


def _record_adds(
    ws: Workspace,
    group_id: str,
    adds: list[ChunkIn],
    times: list[str],
    result: SyncChunksResult,
) -> None:
    """One part of the adds: one commit under the group's lock."""
    with ws.group_lock(group_id):
        with ws.reading():
            held = _held(ws, group_id, [c.chunk_id for c in adds])
        events: list[Event] = []
        added: dict[str, str] = {}
        already_held = 0
        for chunk, when in zip(adds, times, strict=True):
            digest = content_hash(chunk.chunk_text)
            if (chunk.chunk_id, digest) in held:
                already_held += 1
                continue
            held.add((chunk.chunk_id, digest))
            event = EpisodeAdded(
                group_id=group_id,
                uuid=new_uuid(),
                name=chunk.chunk_id,
                source="text",
                source_description=chunk_description(chunk.source_file, chunk.chunk_id),
                content=chunk.chunk_text,
                created_at=when,
                valid_at=when,
                content_hash=digest,
            )
            events.append(event)
            added[chunk.chunk_id] = event.uuid
        deferred = 0
        if events:
            backlog = ws.vectors.backlog
            defer = backlog.drained_in_background
            with ws.text_embedder.deferring() if defer else nullcontext():
                ws.commit(group_id, events)
            if defer and group_id in ws.projector.embedder_failures:
                deferred = len(events)
                backlog.add(group_id, deferred)
    # Counted once the part is durable: a part that failed is no part of the answer.
    result.already_held += already_held
    result.added.update(added)
    result.vectors_deferred += deferred


def _record_removals(
    ws: Workspace, group_id: str, removals: list[RemovalIn], result: SyncChunksResult
) -> None:
    """One part of the removals: one commit under the group's lock."""
    with ws.group_lock(group_id):
        with ws.reading():
            present = _present(ws, group_id, [u for r in removals for u in r.episode_uuids])
        events: list[Event] = []
        removed = 0
        for removal in removals:
            uuids = [u for u in removal.episode_uuids if u in present]
            if uuids:
                events.append(
                    EpisodesDeleted(
                        group_id=group_id, by="source", key=removal.source_file, episode_uuids=uuids
                    )
                )
                removed += len(uuids)
        if events:
            ws.commit(group_id, events)
    result.removed += removed


def _held(ws: Workspace, group_id: str, names: list[str]) -> set[tuple[str, str]]:
    return {(e.name, e.content_hash) for e in gr.chunk_episodes_named(ws.graph, group_id, names)}


def _present(ws: Workspace, group_id: str, uuids: list[str]) -> set[str]:
    return gr.episodes_present(ws.graph, group_id, uuids)
