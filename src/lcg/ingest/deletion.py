"""Deletions: episodes by uuid, source or chunk id; whole groups; the whole workspace.

Deleting episodes keeps the entities they mentioned (as the reference). Each deletion is one
``EpisodesDeleted`` event in the group that owns the episodes; a purge is one ``GroupPurged``
(plus ``PointersRebound`` in each group whose cross-group pointers it unbinds). A deletion that
matches nothing appends nothing. ``clear_all`` with ``preserve_wal`` appends nothing: it empties
the projections only.
"""

from __future__ import annotations

import msgspec

from lcg.errors import InvalidParamsError
from lcg.events import DEFAULT_GROUP, EpisodesDeleted, GroupPurged
from lcg.ingest.cross_group import rebind_pointers
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

__all__ = [
    "ClearAllResult",
    "DeleteByGroupResult",
    "DeleteBySourceResult",
    "DeleteChunkResult",
    "GroupCounts",
    "UnboundImpact",
    "clear_all",
    "delete_by_group",
    "delete_by_source",
    "delete_chunk_episode",
    "delete_episode",
]


class DeleteBySourceResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_delete_by_source``."""

    success: bool = True
    source_file: str
    deleted_count: int
    deleted_uuids: list[str]


class DeleteChunkResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_delete_chunk_episode``."""

    success: bool = True
    chunk_id: str
    deleted_count: int
    deleted_uuids: list[str]


class GroupCounts(msgspec.Struct, kw_only=True):
    """What a group held before a purge."""

    group_id: str
    entities: int
    episodes: int
    edges: int


class UnboundImpact(msgspec.Struct, kw_only=True):
    """Cross-group pointers of another group that a purge leaves unbound."""

    group_id: str
    pointer_count: int


class DeleteByGroupResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_delete_by_group``."""

    success: bool = True
    dry_run: bool
    groups: list[GroupCounts]
    unbound_impacts: list[UnboundImpact]
    applied_seq_reset: bool = False


class ClearAllResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_clear_all``."""

    success: bool = True
    message: str = "Graph cleared and reinitialized successfully"


def _delete(ws: Workspace, by: str, key: str, matches: dict[str, list[str]]) -> list[str]:
    deleted: list[str] = []
    for group_id, uuids in matches.items():
        if not uuids:
            continue
        with ws.group_lock(group_id):
            ws.commit(
                group_id,
                [EpisodesDeleted(group_id=group_id, by=by, key=key, episode_uuids=uuids)],  # type: ignore[arg-type]
            )
        deleted.extend(uuids)
    return deleted


def delete_episode(ws: Workspace, episode_uuid: str) -> str:
    """Delete one episode (its entities stay); returns the owning group (default if none)."""
    with ws.reading():
        found = gr.episode_group(ws.graph, episode_uuid) if episode_uuid else None
    if found is None:
        return DEFAULT_GROUP
    _delete(ws, "uuid", episode_uuid, {found: [episode_uuid]})
    return found


def delete_by_source(ws: Workspace, source_file: str, group_ids: list[str]) -> DeleteBySourceResult:
    """Delete the episodes whose source is ``source_file`` (or ``source_file:<chunk>``)."""
    if not source_file:
        raise InvalidParamsError("source_file is required")
    with ws.reading():
        matches = gr.episodes_by_source(ws.graph, source_file, group_ids)
    deleted = _delete(ws, "source", source_file, matches)
    return DeleteBySourceResult(
        source_file=source_file, deleted_count=len(deleted), deleted_uuids=deleted
    )


def delete_chunk_episode(ws: Workspace, chunk_id: str, group_ids: list[str]) -> DeleteChunkResult:
    """Delete the episodes named ``chunk_id``."""
    if not chunk_id:
        raise InvalidParamsError("chunk_id is required")
    with ws.reading():
        matches = gr.episodes_by_chunk(ws.graph, chunk_id, group_ids)
    deleted = _delete(ws, "chunk", chunk_id, matches)
    return DeleteChunkResult(chunk_id=chunk_id, deleted_count=len(deleted), deleted_uuids=deleted)


def delete_by_group(
    ws: Workspace, group_ids: list[str], *, confirm: bool, dry_run: bool
) -> DeleteByGroupResult:
    """Purge whole groups (or, with ``dry_run``, report what a purge would remove)."""
    if not confirm and not dry_run:
        raise InvalidParamsError(
            "Must set 'confirm' to true to purge group data (or 'dry_run' to preview)"
        )
    with ws.reading():
        counts = [gr.group_counts(ws.graph, g) for g in group_ids]
        impacts = gr.unbound_impacts(ws.graph, group_ids)
    result = DeleteByGroupResult(
        dry_run=dry_run,
        groups=[
            GroupCounts(group_id=g, entities=c.entities, episodes=c.episodes, edges=c.edges)
            for g, c in zip(group_ids, counts, strict=True)
        ],
        unbound_impacts=[UnboundImpact(group_id=g, pointer_count=n) for g, n in impacts.items()],
    )
    if dry_run:
        return result
    purged: list[str] = []
    for group_id, c in zip(group_ids, counts, strict=True):
        if (
            c.entities == 0
            and c.episodes == 0
            and c.edges == 0
            and not ws.store.group_dir(group_id).is_dir()
        ):
            continue
        purged.append(group_id)
        with ws.group_lock(group_id):
            ws.commit(
                group_id,
                [
                    GroupPurged(
                        group_id=group_id,
                        reason="delete_by_group",
                        entities=c.entities,
                        episodes=c.episodes,
                        edges=c.edges,
                    )
                ],
            )
    # Pointers of other groups into a purged one now name deleted entities: a forced rebind
    # unbinds them, recorded as ``PointersRebound`` in each owning group, so a replay of
    # those groups reproduces it (reference §5.10).
    for group_id in purged:
        rebind_pointers(ws, group_id, forced=True)
    return result


def clear_all(ws: Workspace, *, confirm: bool, preserve_wal: bool) -> ClearAllResult:
    """Empty the workspace: its projections only (``preserve_wal``) or its streams too.

    With ``preserve_wal`` nothing is appended: the streams keep every event, the projections
    are emptied and stay so (later events apply on top) until ``knowledge_rebuild_from_wal``
    replays them, as the reference (ADR 0100).
    """
    if confirm is not True:
        raise InvalidParamsError("Must set 'confirm' to true to clear graph")
    if preserve_wal:
        with ws.rw.write():
            ws.projector.clear_projections(ws.known_groups())
    else:
        ws.wipe()
    return ClearAllResult()
