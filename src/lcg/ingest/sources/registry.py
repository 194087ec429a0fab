"""A group's sources: which folder or file each one is, the label its files are served under,
and the commands that register, list and remove them (ADR 0200).

A source is known by its group and its *root*, the resolved absolute path of the folder or
file given to ``lcg ingest``; two folders of one name are two sources. ``SourceRegistered``
(root, label, kind, last sync) records one in the group's stream, so a replay, a replica
and a dump know the same sources; the graph keeps them as ``Source`` rows. The label is
chosen once, under the group's lock, when the source is registered: the folder's own name
if no other source of the group has it, else ``<name>~2``, ``<name>~3``… A tree that an
older lcg stored (chunks under ``notes/`` and no ``Source`` row) is taken over by the first
folder named ``notes`` registered in the group: it gets the label ``notes`` and syncs those
chunks without adding them twice.

``resolve_source`` answers which source a path belongs to: the innermost registered folder
holding it (a file or folder inside an indexed tree is synced as part of that tree, never as a
second copy), else a new source for it (``create``). ``list_sources`` counts what each source
holds, and names the trees an older lcg stored (``registered: false``) so they can be removed.
``removal_of`` and ``forget_source`` remove a source: its episodes first (the ordinary
``EpisodesDeleted`` of a sync), then its registration (``SourceRemoved``).
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

import msgspec

from lcg import timestamps
from lcg.errors import InvalidParamsError
from lcg.events import LCG_DIR, SourceRegistered, SourceRemoved
from lcg.ingest.sources.model import (
    RegisteredSource,
    RemovalIn,
    RemovedSource,
    ResolvedSource,
    SourceKind,
    SourceRemoval,
    SourceStatus,
)
from lcg.ingest.sources.store import source_manifest, sync_chunks
from lcg.ingest.sources.tree import TreeScope, chunk_source, prefix_of, source_label
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace, active_watches

__all__ = [
    "forget_source",
    "list_sources",
    "registered_sources",
    "removal_of",
    "remove_source",
    "resolve_source",
]


def _check_root(root: str) -> str:
    path = PurePosixPath(root)
    if "\x00" in root or not path.is_absolute() or str(path) != root or ".." in path.parts:
        raise InvalidParamsError(f"root {root!r} must be a resolved absolute path")
    return root


def registered_sources(ws: Workspace, group_id: str) -> list[RegisteredSource]:
    """The group's registered sources, by root (the caller holds ``ws.reading()``)."""
    return [
        RegisteredSource(
            group_id=group_id,
            root=row.root,
            label=row.label,
            kind="file" if row.kind == "file" else "folder",
            synced_at=row.synced_at or "",
        )
        for row in gr.source_records(ws.graph, group_id)
    ]


def _innermost(sources: list[RegisteredSource], root: str) -> tuple[RegisteredSource, str] | None:
    best: tuple[RegisteredSource, str] | None = None
    for s in sources:
        within = s.holds(root)
        if within is not None and (best is None or len(s.root) > len(best[0].root)):
            best = (s, within)
    return best


def _nested(sources: list[RegisteredSource], owner: RegisteredSource) -> list[str]:
    inside = (owner.holds(s.root) for s in sources if s.root != owner.root)
    return sorted(p for p in inside if p)


def resolve_source(
    ws: Workspace,
    group_id: str,
    root: str,
    kind: SourceKind,
    *,
    create: bool = True,
    touch: bool = False,
) -> ResolvedSource:
    """The source ``root`` belongs to in ``group_id``: the innermost registered folder holding
    it (or the file itself), else — with ``create`` — a new source, registered here under a
    label no other source of the group has. ``touch`` records a new last sync of the source
    ``root`` is (after a sync that changed what it holds)."""
    root = _check_root(root)
    with ws.group_lock(group_id):
        with ws.reading():
            sources = registered_sources(ws, group_id)
        found = _innermost(sources, root)
        if found is not None:
            owner, within = found
            if touch:
                owner = msgspec.structs.replace(owner, synced_at=timestamps.now())
                ws.commit(group_id, [_registered(owner)])
            return ResolvedSource(source=owner, within=within, nested=_nested(sources, owner))
        if not create:
            return ResolvedSource()
        name = PurePosixPath(root).name
        taken = {s.label for s in sources}
        source = RegisteredSource(
            group_id=group_id,
            root=root,
            label=source_label(name, file=kind == "file", taken=taken),
            kind=kind,
            synced_at=timestamps.now(),
        )
        ws.commit(group_id, [_registered(source)])
    return ResolvedSource(source=source, nested=_nested(sources, source), created=True)


def _registered(source: RegisteredSource) -> SourceRegistered:
    return SourceRegistered(
        group_id=source.group_id,
        root=source.root,
        label=source.label,
        kind=source.kind,
        synced_at=source.synced_at,
    )


def _chunks_by_prefix(ws: Workspace, group_id: str) -> dict[str, dict[str, int]]:
    """prefix → source file → chunks, of every chunk of a source tree the group holds."""
    out: dict[str, dict[str, int]] = {}
    for episode in gr.chunk_episodes(ws.graph, group_id):
        source_file = chunk_source(episode.name, episode.source_description)
        if source_file is not None:
            files = out.setdefault(prefix_of(source_file), {})
            files[source_file] = files.get(source_file, 0) + 1
    return out


def _watched_roots(ws: Workspace) -> dict[str, list[str]]:
    """The roots running watchers keep in sync, by group."""
    out: dict[str, list[str]] = {}
    for claim in active_watches(ws.config.workspace / LCG_DIR):
        out.setdefault(claim.group_id, []).extend(claim.roots)
    return out


def _overlaps(root: str, watched: str) -> bool:
    """Whether a watch of ``watched`` syncs (part of) the source at ``root``."""
    a, b = PurePosixPath(root), PurePosixPath(watched)
    return a == b or a in b.parents or b in a.parents


def list_sources(ws: Workspace, group_ids: list[str] | None = None) -> list[SourceStatus]:
    """Every source of the groups (default: every group), registered or stored by an older
    lcg, with the files and chunks the group holds of it."""
    groups = ws.known_groups(record_only=True) if group_ids is None else group_ids
    watched = _watched_roots(ws)
    out: list[SourceStatus] = []
    for group_id in groups:
        with ws.reading():
            sources = registered_sources(ws, group_id)
            held = _chunks_by_prefix(ws, group_id)
        for s in sources:
            files = held.pop(s.prefix, {})
            out.append(
                SourceStatus(
                    group_id=group_id,
                    source=s.prefix.rstrip(":"),
                    prefix=s.prefix,
                    label=s.label,
                    kind=s.kind,
                    root=s.root,
                    registered=True,
                    files=len(files),
                    chunks=sum(files.values()),
                    synced_at=s.synced_at or None,
                    missing=not os.path.lexists(s.root),
                    watching=any(_overlaps(s.root, r) for r in watched.get(group_id, ())),
                )
            )
        for prefix, files in sorted(held.items()):
            out.append(
                SourceStatus(
                    group_id=group_id,
                    source=prefix.rstrip(":"),
                    prefix=prefix,
                    label=prefix[:-1],
                    kind="file" if prefix.endswith(":") else "folder",
                    root=None,
                    registered=False,
                    files=len(files),
                    chunks=sum(files.values()),
                )
            )
    return out


def removal_of(ws: Workspace, group_id: str, prefix: str) -> SourceRemoval:
    """What removing the source served under ``prefix`` takes away (nothing is recorded)."""
    label = prefix[:-1]
    if len(prefix) < 2 or prefix[-1] not in "/:" or "/" in label:
        raise InvalidParamsError(f"prefix {prefix!r} names no source")
    kind = "file" if prefix.endswith(":") else "folder"
    with ws.reading():
        registered = [
            s for s in registered_sources(ws, group_id) if s.label == label and s.kind == kind
        ]
    root = registered[0].root if registered else None
    scope = TreeScope(root=root or "", label=label, prefix=prefix)
    files: dict[str, list[str]] = {}
    for chunk in source_manifest(ws, group_id, scope):
        files.setdefault(chunk.source_file, []).append(chunk.episode_uuid)
    return SourceRemoval(
        group_id=group_id,
        source=prefix.rstrip(":"),
        root=root,
        files=len(files),
        chunks=sum(len(u) for u in files.values()),
        removals=[RemovalIn(source_file=f, episode_uuids=u) for f, u in sorted(files.items())],
    )


def forget_source(ws: Workspace, group_id: str, root: str) -> bool:
    """Record that ``root`` is no longer a source of the group (after its episodes were
    removed); whether it was one."""
    with ws.group_lock(group_id):
        with ws.reading():
            known = any(s.root == root for s in registered_sources(ws, group_id))
        if known:
            ws.commit(group_id, [SourceRemoved(group_id=group_id, root=root)])
    return known


def remove_source(ws: Workspace, group_id: str, prefix: str) -> RemovedSource:
    """Remove the source served under ``prefix`` from the group: its episodes (recorded in
    parts, as a sync's removals are), then its registration."""
    removal = removal_of(ws, group_id, prefix)
    result = sync_chunks(ws, group_id, [], removal.removals)
    return RemovedSource(
        group_id=group_id,
        source=removal.source,
        root=removal.root,
        files=removal.files,
        chunks_removed=result.removed,
        unregistered=removal.root is not None and forget_source(ws, group_id, removal.root),
    )
