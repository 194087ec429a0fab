"""Compaction: write the current state of groups as a new stream with a fresh generation.

A dump is the shortest stream that reproduces the projections: entities (``EntityAsserted``,
tombstones included), relationships (``RelationshipAsserted``, or ``CrossGroupEdgeAdded`` for
edges with cross-group pointers), then episodes (``EpisodeAdded``, followed by an
``EpisodeExtracted`` carrying the mentions of each extracted episode), then the group's
sources (``SourceRegistered``), then the declared mentions (``StructureDeclared``; the
declared documents and edges are entities and relationships like the others). Replaying a dump gives
the same digests as the original. The target must be empty (or absent).

A dump is written into a hidden temporary directory beside the target,
``.<target name>.dump-<pid>.tmp``, and renamed onto the target only when every group is
written and synced (ADR 0077): a dump that fails or is killed leaves no target that looks like
a valid stream. A failed dump removes its temporary directory; one left by a killed process is
removed by the next dump to the same target.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import msgspec

from lcg.errors import StreamError
from lcg.events import (
    CrossGroupEdgeAdded,
    EntityAsserted,
    EpisodeAdded,
    EpisodeExtracted,
    Event,
    SourceRegistered,
    WalStore,
    fsync_dir,
    list_segments,
    remove_tree,
    rename_into_place,
    sweep_removals,
)
from lcg.ingest.declared import declared_mentions
from lcg.ingest.sources import registered_sources
from lcg.projections import graph_pointers as pointers
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

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
        if pointers.ATTRIBUTE in edge.attributes or not (edge.source_uuid and edge.target_uuid):
            events.append(CrossGroupEdgeAdded(group_id=group_id, edge=edge))
        else:
            from lcg.events import RelationshipAsserted

            events.append(RelationshipAsserted(group_id=group_id, edge=edge, created=True))
    episodes = gr.all_episodes(ws.graph, group_id)
    # An extraction's search keys (the names and facts it found) live in the text projection
    # alone: the entities and edges above are asserted apart, so the keys are carried as such.
    keys = ws.text.keys_of(group_id, [ep.uuid for ep in episodes if ep.extracted])
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
            found = keys.get(ep.uuid)
            events.append(
                EpisodeExtracted(
                    group_id=group_id,
                    episode_uuid=ep.uuid,
                    mentions=ep.mentions,
                    keys=None if found is None else found.split("\n"),
                )
            )
    for source in registered_sources(ws, group_id):
        events.append(
            SourceRegistered(
                group_id=group_id,
                root=source.root,
                label=source.label,
                kind=source.kind,
                synced_at=source.synced_at,
            )
        )
    # Declared mentions are MENTIONS no extraction states: they go after the episodes.
    events.extend(declared_mentions(ws, group_id))
    return events, len(entities) + len(episodes), len(edges)


def _temp_dir(target_dir: Path) -> Path:
    return target_dir.parent / f".{target_dir.name}.dump-{os.getpid()}.tmp"


def _sweep_dead_dumps(target_dir: Path) -> None:
    """Remove temporary directories of dumps to ``target_dir`` whose process is gone."""
    prefix = f".{target_dir.name}.dump-"
    if not target_dir.parent.is_dir():
        return
    sweep_removals(target_dir.parent, of=prefix)  # temporaries a killed removal left
    for entry in target_dir.parent.iterdir():
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp") and entry.is_dir()):
            continue
        pid_text = name[len(prefix) : -len(".tmp")]
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            remove_tree(entry, durable=False)
        except PermissionError:
            continue  # another user's live process


def dump_groups(ws: Workspace, target_dir: Path, groups: list[str] | None = None) -> DumpResult:
    """Dump ``groups`` (default: every group) into a new stream root at ``target_dir``."""
    exists = target_dir.exists()
    if exists and (not target_dir.is_dir() or any(target_dir.iterdir())):
        raise StreamError(
            f"dump target {target_dir} is not empty; choose a new directory or empty it first"
        )
    chosen = groups if groups is not None else ws.known_groups(record_only=True)
    target_dir.parent.mkdir(parents=True, exist_ok=True)
    _sweep_dead_dumps(target_dir)
    tmp = _temp_dir(target_dir)
    remove_tree(tmp, durable=False)
    tmp.mkdir()
    store = WalStore(
        tmp,
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
        store.close()
        for gdir in tmp.iterdir():
            if gdir.is_dir():
                fsync_dir(gdir)
        fsync_dir(tmp)
        # The rename is the commit point: before it, the target does not exist.
        if exists:
            target_dir.rmdir()
        rename_into_place(tmp, target_dir)
    except BaseException:
        store.close()
        with contextlib.suppress(OSError):  # the failure raised below is the one to report
            remove_tree(tmp, durable=False)
        raise
    files = sum(len(list_segments(target_dir / d.name)) for d in target_dir.iterdir() if d.is_dir())
    return DumpResult(
        nodes_dumped=nodes,
        edges_dumped=edges,
        files_written=files,
        target_dir=str(target_dir),
        groups=list(chosen),
    )
