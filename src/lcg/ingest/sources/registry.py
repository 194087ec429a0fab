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
from typing import Literal

import msgspec

from lcg import timestamps
from lcg.errors import InvalidParamsError
from lcg.events import LCG_DIR, SourceRegistered, SourceRemoved
from lcg.ingest.sources.store import RemovalIn, source_manifest, sync_chunks
from lcg.ingest.sources.tree import TreeScope, chunk_source, prefix_of, source_label
from lcg.workspace import Workspace, active_watches

__all__ = [
    "ResolvedSource",
    "RegisteredSource",
    "SourceKind",
    "RemovedSource",
    "SourceRemoval",
    "SourceStatus",
    "forget_source",
    "list_sources",
    "registered_sources",
    "removal_of",
    "remove_source",
    "resolve_source",
]

#: A folder (a tree) or a single file.
SourceKind = Literal["folder", "file"]

_SOURCES = (
    "MATCH (s:Source) WHERE s.group_id = $g "
    "RETURN s.root, s.label, s.kind, s.synced_at ORDER BY s.root"
)
_CHUNKS = "MATCH (p:Episodic) WHERE p.group_id = $g RETURN p.name, p.source_description"


class RegisteredSource(msgspec.Struct, frozen=True, kw_only=True):
    """A registered source of a group."""

    group_id: str
    root: str
    label: str
    kind: SourceKind
    synced_at: str

    @property
    def prefix(self) -> str:
        """What its episodes' sources start with: ``<label>/`` or ``<label>:``."""
        return f"{self.label}:" if self.kind == "file" else f"{self.label}/"

    @property
    def scope(self) -> TreeScope:
        """Its scope, for a scan and a manifest."""
        return TreeScope(root=self.root, label=self.label, prefix=self.prefix)

    def holds(self, root: str) -> str | None:
        """The path of ``root`` inside this source (``""``: the source itself); ``None`` when
        it is not inside."""
        if root == self.root:
            return ""
        if self.kind == "folder":
            base = self.root.rstrip("/") + "/"
            if root.startswith(base):
                return root[len(base) :]
        return None


class ResolvedSource(msgspec.Struct, kw_only=True):
    """The source a path belongs to, and what of it a sync of that path covers."""

    #: ``None``: the path is no source's and none was created.
    source: RegisteredSource | None = None
    #: The path inside the source (``""``: all of it).
    within: str = ""
    #: Paths inside the source that are sources of their own (left out of its scan).
    nested: list[str] = []
    #: Whether this call registered the source.
    created: bool = False


class SourceStatus(msgspec.Struct, kw_only=True):
    """One line of ``lcg sources``: a source and what the group holds of it."""

    group_id: str
    #: How its files are served: ``notes/`` for a folder, ``README.md`` for a file.
    source: str
    prefix: str
    label: str
    kind: SourceKind
    #: The resolved path; ``None`` for a tree an older lcg stored without one.
    root: str | None
    registered: bool
    files: int = 0
    chunks: int = 0
    #: When a sync last recorded a change (``None``: never recorded).
    synced_at: str | None = None
    #: The root is not there now (renamed, moved or deleted).
    missing: bool = False
    #: A running ``lcg watch`` keeps it in sync (it watches the root, a folder inside it, or
    #: a folder holding it, into this group).
    watching: bool = False


class SourceRemoval(msgspec.Struct, kw_only=True):
    """What removing a source takes away: its episodes, file by file."""

    group_id: str
    source: str
    root: str | None
    files: int
    chunks: int
    removals: list[RemovalIn] = []


class RemovedSource(msgspec.Struct, kw_only=True):
    """The answer of ``knowledge_source_remove`` / ``lcg sources remove``."""

    group_id: str
    source: str
    root: str | None
    files: int
    chunks_removed: int
    #: Whether a registration was removed too (``False``: a tree an older lcg stored).
    unregistered: bool


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
            root=str(root),
            label=str(label),
            kind="file" if kind == "file" else "folder",
            synced_at=timestamps.to_text(synced) if synced is not None else "",
        )
        for root, label, kind, synced in ws.graph.query(_SOURCES, {"g": group_id})
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
    for name, description in ws.graph.query(_CHUNKS, {"g": group_id}):
        source_file = chunk_source(str(name), str(description or ""))
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
