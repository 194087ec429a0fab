"""The rules of a workspace's stream maintenance: marks (named checkpoints) and checkpoints.

Both surfaces call them: the service's WAL methods (``rpc/methods_wal``) and the commands
that run without a service (``lcg mark``), so each rule and its wording is written once (issue
20 item 4, ADR 0184). The rebuild's own rules (what it refuses, what it replays) are the
projector's: ``Projector.check_rebuild``, which ``rebuild`` starts with.

A service marks the seq its projections have *applied*; with no service, a mark names the
stream's last seq (what a service applies on opening) or a seq the stream holds. Callers
without a service hold the workspace for writing (``writing_offline``) around these.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from lcg.config import Config
from lcg.errors import MarkError
from lcg.events import (
    MarkInfo,
    MarkRecord,
    create_mark,
    delete_mark,
    effective_generation,
    encode_group,
    list_marks,
    list_segments,
    read_bounds,
)
from lcg.workspace.workspace import Workspace

__all__ = [
    "SegmentsClosed",
    "close_segments",
    "create_applied_mark",
    "create_stream_mark",
    "delete_group_mark",
    "group_marks",
]


class SegmentsClosed(msgspec.Struct, kw_only=True, frozen=True):
    """What ``close_segments`` did: the segments it closed and the segment files there are."""

    files_flushed: int
    files_total: int


def _group_dir(config: Config, group_id: str) -> Path:
    return config.wal_dir / encode_group(group_id)


def close_segments(ws: Workspace) -> SegmentsClosed:
    """Close every open writer's current segment (``knowledge_prepare_checkpoint``), so each
    segment file is whole and final; the next append of a group starts a new one."""
    flushed = 0
    for g in ws.store.groups():
        if ws.store.has_writer(g) and ws.store.writer(g).close_segment():
            flushed += 1
    total = sum(len(list_segments(ws.store.group_dir(g))) for g in ws.store.groups())
    return SegmentsClosed(files_flushed=flushed, files_total=total)


def create_applied_mark(ws: Workspace, group_id: str, name: str) -> MarkRecord:
    """Mark the seq ``ws``'s projections have applied in ``group_id`` (a service's mark).

    ``MarkError`` when nothing is applied: no applied position, no mark (as the reference);
    and nothing is created, so a mark never makes a group directory (nor one beside another's
    case).
    """
    applied = ws.projector.applied_seq(group_id)
    if applied is None:
        if ws.store.bounds(group_id).max_seq is not None:
            raise MarkError(
                f"group {group_id!r} has no applied position yet; wait for the service to "
                "catch up, then create the mark"
            )
        raise MarkError(
            f"group {group_id!r} has never been written (no applied position): write to it "
            "first, or check the group id (group ids are case-sensitive)"
        )
    generation = ws.store.generation(group_id)
    return create_mark(ws.store.group_dir(group_id), name, applied, generation)


def create_stream_mark(
    config: Config, group_id: str, name: str, seq: int | None = None
) -> MarkRecord:
    """Mark ``seq`` of ``group_id``'s stream, by default its last (what a service applies
    on opening; ``None`` on an empty stream), with no service: ``MarkError`` past the end."""
    gdir = _group_dir(config, group_id)
    bounds = read_bounds(gdir)
    if seq is None:
        seq = bounds.max_seq
    elif bounds.max_seq is None or seq > bounds.max_seq:
        raise MarkError(
            f"seq {seq} is past the end of the stream of group {group_id!r} "
            f"(max seq {bounds.max_seq})"
        )
    return create_mark(gdir, name, seq, effective_generation(gdir))


def group_marks(config: Config, group_id: str) -> list[MarkInfo]:
    """``group_id``'s active marks, each judged reachable against the stream's bounds and
    generation (the one the stream's files name, ADR 0115: a dropped sidecar is named by the
    lines). Reads only: the bounds cache is not rewritten, so a service may be running."""
    gdir = _group_dir(config, group_id)
    bounds = read_bounds(gdir, write_cache=False)
    return list_marks(
        gdir,
        wal_min_seq=bounds.min_seq,
        wal_max_seq=bounds.max_seq,
        generation=effective_generation(gdir),
    )


def delete_group_mark(config: Config, group_id: str, name: str) -> None:
    """Delete the mark ``name`` of ``group_id`` (a tombstone; the name can be reused)."""
    delete_mark(_group_dir(config, group_id), name)
