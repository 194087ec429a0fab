"""Compaction: write the current state of groups as a new stream with a fresh generation.

A dump is the shortest stream that reproduces the projections: entities (``EntityAsserted``,
tombstones included), relationships (``RelationshipAsserted``, or ``CrossGroupEdgeAdded`` for
edges with cross-group pointers), then episodes (``EpisodeAdded``, followed by an
``EpisodeExtracted`` carrying the mentions of each extracted episode). Replaying a dump gives
the same digests as the original. The target must be empty; a failed dump removes what it wrote.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from lcg.errors import StreamError
from lcg.events.model import (
    CrossGroupEdgeAdded,
    EntityAsserted,
    EpisodeAdded,
    EpisodeExtracted,
    Event,
)
from lcg.events.segments import list_segments
from lcg.events.store import WalStore
from lcg.projections import graph_records as gr
from lcg.projections.workspace import Workspace

__all__ = ["DumpResult", "dump_groups"]

_PAGE = 500


class DumpResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_dump_wal`` / ``lcg dump``."""

    success: bool = True
    nodes_dumped: int
    edges_dumped: int
    files_written: int
    target_dir: str
    groups: list[str] = []


def _events_of_group(ws: Workspace, group_id: str) -> tuple[list[Event], int, int]:
    events: list[Event] = []
    entities = gr.all_entities(ws.graph, group_id)
    for entity in entities:
        events.append(EntityAsserted(group_id=group_id, entity=entity, created=True))
    edges = gr.all_edges(ws.graph, group_id)
    for edge in edges:
        if "cross_group_pointers" in edge.attributes or not (edge.source_uuid and edge.target_uuid):
            events.append(CrossGroupEdgeAdded(group_id=group_id, edge=edge))
        else:
            from lcg.events.model import RelationshipAsserted

            events.append(RelationshipAsserted(group_id=group_id, edge=edge, created=True))
    episodes = gr.all_episodes(ws.graph, group_id)
    for ep in episodes:
        events.append(
            EpisodeAdded(
                group_id=group_id,
                uuid=ep.uuid,
                name=ep.name,
                source=ep.source if ep.source in ("text", "json", "message") else "text",  # type: ignore[arg-type]
                source_description=ep.source_description,
                content=ep.content,
                created_at=ep.created_at,
                valid_at=ep.valid_at,
                content_hash=ep.content_hash,
            )
        )
        if ep.extracted:
            events.append(
                EpisodeExtracted(group_id=group_id, episode_uuid=ep.uuid, mentions=ep.mentions)
            )
    return events, len(entities) + len(episodes), len(edges)


def dump_groups(ws: Workspace, target_dir: Path, groups: list[str] | None = None) -> DumpResult:
    """Dump ``groups`` (default: every group) into a new stream root at ``target_dir``."""
    created = not target_dir.exists()
    if not created and any(target_dir.iterdir()):
        raise StreamError(
            f"dump target {target_dir} is not empty; choose a new directory or empty it first"
        )
    chosen = (
        groups if groups is not None else sorted(set(ws.store.groups()) | set(ws.graph.positions()))
    )
    target_dir.mkdir(parents=True, exist_ok=True)
    store = WalStore(
        target_dir,
        fsync="batch",
        max_events_per_file=ws.config.wal_max_events_per_file,
        max_bytes_per_file=0,
    )
    nodes = edges = 0
    try:
        for group_id in chosen:
            with ws.reading():
                events, n_nodes, n_edges = _events_of_group(ws, group_id)
            nodes += n_nodes
            edges += n_edges
            for start in range(0, len(events), _PAGE):
                store.append(group_id, events[start : start + _PAGE])
            if not events:
                store.writer(group_id)  # an empty group still gets a stream and a generation
            store.writer(group_id).sync()
    except BaseException:
        store.close()
        if created:
            shutil.rmtree(target_dir, ignore_errors=True)
        else:
            for seg_dir in target_dir.iterdir():
                for seg in list_segments(seg_dir):
                    seg.path.unlink(missing_ok=True)
        raise
    store.close()
    files = sum(len(list_segments(target_dir / d.name)) for d in target_dir.iterdir() if d.is_dir())
    return DumpResult(
        nodes_dumped=nodes,
        edges_dumped=edges,
        files_written=files,
        target_dir=str(target_dir),
        groups=list(chosen),
    )
