"""The service side of declared structure: a source's declared graph, made to match its files.

``declare_structure`` reads what the group holds of a source's declared structure (its
``Document`` entities, the group's declared ``Tag`` entities, the declared edges and the
``MENTIONS`` from the source's chunks to its documents), compares it with the
``DeclaredStructure`` the files state now, and records the difference as one
``StructureDeclared`` event, under the group's lock; nothing when they agree (ADR 0203).

Identity: a document is keyed by its tree-relative path within its source, and keeps its
uuid while it stays there, or when the sync saw it move (``moved_from``); a tag is keyed by
its name in the group (sources share it) and goes when no declared edge uses it; an edge is
keyed by its relation type and endpoints. What the files no longer declare is removed: the
file is the truth for what it declares now, its history is git's. Only rows whose attributes
say ``"origin": "declared"`` are read or written here; extracted and asserted rows are never
touched.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Final

import msgspec

from lcg import timestamps
from lcg.errors import InvalidParamsError
from lcg.events import (
    EdgeRecord,
    EntityRecord,
    MentionRecord,
    StructureDeclared,
    attributes_of,
)
from lcg.ingest._common import attributes_text, new_uuid
from lcg.ingest.declared.model import (
    DECLARED_RELATIONS,
    DeclaredDocument,
    DeclaredStructure,
    DeclareResult,
)
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

__all__ = [
    "DECLARED_ORIGIN",
    "declare_structure",
    "declared_mentions",
    "is_declared",
]

#: The ``origin`` attribute of every row this pass writes.
DECLARED_ORIGIN: Final = "declared"
#: Attribute keys the pass writes itself; a front-matter field of one of these names is kept
#: under ``fm:<name>`` instead of overwriting it.
_RESERVED: Final = frozenset({"origin", "source", "path", "id", "aliases", "superseded_by"})


def is_declared(attributes: str) -> bool:
    """Whether a row's attributes (JSON object text) say the declared pass wrote it."""
    return attributes_of(attributes).get("origin") == DECLARED_ORIGIN


class _Held(msgspec.Struct, kw_only=True):
    """A row the group holds: its record and parsed attributes."""

    uuid: str
    name: str
    labels: list[str]
    summary: str
    attributes: dict[str, Any]
    created_at: str


class _Reading:
    """What the group holds of the source's declared structure (read under the lock)."""

    def __init__(self, ws: Workspace, group_id: str, root: str, chunk_ids: list[str]) -> None:
        g = ws.graph
        labels = [s.label for s in gr.source_records(g, group_id) if s.root == root]
        if not labels:
            raise InvalidParamsError(f"no source of group {group_id!r} has the root {root!r}")
        self.label = labels[0]
        self.docs: dict[str, _Held] = {}
        self.tags: dict[str, _Held] = {}
        for entity in gr.declared_kind_entities(g, group_id):
            attrs = attributes_of(entity.attributes)
            if attrs.get("origin") != DECLARED_ORIGIN:
                continue
            held = _Held(
                uuid=entity.uuid,
                name=entity.name,
                labels=list(entity.labels),
                summary=entity.summary,
                attributes=attrs,
                created_at=entity.created_at or timestamps.now(),
            )
            if "Tag" in held.labels:
                self.tags.setdefault(held.name, held)
            elif attrs.get("source") == self.label and isinstance(attrs.get("path"), str):
                self.docs.setdefault(attrs["path"], held)
        #: This source's declared edges, and the tags other sources' edges use.
        self.edges: list[EdgeRecord] = []
        self.tags_elsewhere: set[str] = set()
        tag_names = {t.uuid: name for name, t in self.tags.items()}
        for edge in gr.edges_of_types(g, group_id, list(DECLARED_RELATIONS)):
            attrs = attributes_of(edge.attributes)
            if attrs.get("origin") != DECLARED_ORIGIN:
                continue
            rel = str(edge.relation_type)
            if attrs.get("source") != self.label:
                if rel == "TAGGED" and edge.target_uuid in tag_names:
                    self.tags_elsewhere.add(tag_names[edge.target_uuid])
                continue
            self.edges.append(
                EdgeRecord(
                    uuid=edge.uuid,
                    name=edge.name,
                    source_uuid=edge.source_uuid or "",
                    target_uuid=edge.target_uuid or "",
                    fact=edge.fact,
                    relation_type=rel,
                    attributes=attributes_text(attrs),
                    created_at=edge.created_at or timestamps.now(),
                )
            )
        doc_uuids = [d.uuid for d in self.docs.values()]
        #: Declared MENTIONS (episode, document) held, and those extraction also states.
        self.mentions: set[tuple[str, str]] = set()
        self.extracted: set[tuple[str, str]] = set()
        for m in gr.mentions_of_entities(g, group_id, doc_uuids):
            key = (m.episode_uuid, m.entity_uuid)
            (self.extracted if m.extracted else self.mentions).add(key)
        self.episodes: dict[str, list[str]] = {}
        for episode in gr.chunk_episodes_named(g, group_id, chunk_ids):
            self.episodes.setdefault(episode.name, []).append(episode.uuid)


def _doc_attributes(label: str, doc: DeclaredDocument, superseded_by: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for key, value in doc.fields.items():
        attrs[f"fm:{key}" if key in _RESERVED else key] = value
    attrs.update(origin=DECLARED_ORIGIN, source=label, path=doc.path, aliases=list(doc.aliases))
    if doc.doc_id is not None:
        attrs["id"] = doc.doc_id
    if superseded_by is not None:
        attrs["superseded_by"] = superseded_by
    return attrs


def _entity(
    held: _Held | None, uuid: str, name: str, labels: list[str], attrs: dict[str, Any]
) -> EntityRecord | None:
    """The record to upsert, or ``None`` when ``held`` already states it."""
    if (
        held is not None
        and held.name == name
        and held.labels == labels
        and held.summary == ""
        and held.attributes == attrs
    ):
        return None
    return EntityRecord(
        uuid=uuid,
        name=name,
        labels=labels,
        attributes=attributes_text(attrs),
        created_at=held.created_at if held is not None else timestamps.now(),
    )


def _plan(group_id: str, root: str, s: DeclaredStructure, held: _Reading) -> StructureDeclared:
    """The event that makes the held declared structure ``s``: its entities, edges and
    mentions upserted, added or removed."""
    doc_uuid = _doc_uuids(s, held)
    upserts = _document_upserts(s, held, doc_uuid)
    tags_used = set(s.tags) | {e.target for e in s.edges if e.relation_type == "TAGGED"}
    tag_uuid = {t: held.tags[t].uuid if t in held.tags else new_uuid() for t in sorted(tags_used)}
    for t, u in tag_uuid.items():
        rec = _entity(held.tags.get(t), u, t, ["Entity", "Tag"], {"origin": DECLARED_ORIGIN})
        if rec is not None:
            upserts.append(rec)
    live = set(doc_uuid.values())
    removed = [h.uuid for h in held.docs.values() if h.uuid not in live]
    removed += [
        h.uuid for t, h in held.tags.items() if t not in tags_used and t not in held.tags_elsewhere
    ]
    edges_upserted, edges_removed = _edge_changes(s, held, doc_uuid, tag_uuid)
    mentions = _mentions(s, held, doc_uuid)
    gone = set(removed)
    return StructureDeclared(
        group_id=group_id,
        root=root,
        label=held.label,
        entities_upserted=upserts,
        entities_removed=removed,
        edges_upserted=edges_upserted,
        edges_removed=edges_removed,
        mentions_added=[
            MentionRecord(episode_uuid=ep, entity_uuid=en)
            for ep, en in sorted(mentions - held.mentions - held.extracted)
        ],
        mentions_removed=[
            MentionRecord(episode_uuid=ep, entity_uuid=en)
            for ep, en in sorted(held.mentions - mentions)
            if en not in gone
        ],
    )


def _doc_uuids(s: DeclaredStructure, held: _Reading) -> dict[str, str]:
    """Each declared document's uuid by its path: the held one where it stays, or where the
    sync saw it move from (once), else a new one."""
    paths = [d.path for d in s.documents]
    if len(set(paths)) != len(paths):
        raise InvalidParamsError("structure: a document path is listed twice")
    doc_uuid: dict[str, str] = {}
    claimed = set(paths)
    for d in s.documents:
        if d.path in held.docs:
            doc_uuid[d.path] = held.docs[d.path].uuid
        elif d.moved_from in held.docs and d.moved_from not in claimed:
            doc_uuid[d.path] = held.docs[d.moved_from].uuid
            claimed.add(d.moved_from)
        else:
            doc_uuid[d.path] = new_uuid()
    return doc_uuid


def _document_upserts(
    s: DeclaredStructure, held: _Reading, doc_uuid: dict[str, str]
) -> list[EntityRecord]:
    """The records of the declared documents the group does not hold as they are now (a
    superseded document names its successor, the least path if several)."""
    held_by_uuid = {h.uuid: h for h in held.docs.values()}
    successor: dict[str, str] = {}
    for e in s.edges:
        if e.relation_type == "SUPERSEDES":
            successor[e.target] = min(e.source, successor.get(e.target, e.source))
    upserts: list[EntityRecord] = []
    for d in s.documents:
        u = doc_uuid[d.path]
        rec = _entity(
            held_by_uuid.get(u),
            u,
            d.name,
            ["Entity", "Document"],
            _doc_attributes(held.label, d, successor.get(d.path)),
        )
        if rec is not None:
            upserts.append(rec)
    return upserts


def _edge_changes(
    s: DeclaredStructure, held: _Reading, doc_uuid: dict[str, str], tag_uuid: dict[str, str]
) -> tuple[list[EdgeRecord], list[str]]:
    """The declared edges to upsert and the uuids of the held ones to remove, edges keyed
    by relation type and endpoints."""
    want: dict[tuple[str, str, str], str] = {}
    for e in s.edges:
        src = doc_uuid.get(e.source)
        dst = tag_uuid.get(e.target) if e.relation_type == "TAGGED" else doc_uuid.get(e.target)
        if src is None or dst is None:
            raise InvalidParamsError(
                f"structure: {e.relation_type} edge {e.source!r} -> {e.target!r} names no "
                "document or tag of the structure"
            )
        want.setdefault((e.relation_type, src, dst), e.fact)
    edge_attrs = attributes_text({"origin": DECLARED_ORIGIN, "source": held.label})
    have: dict[tuple[str, str, str], EdgeRecord] = {}
    edges_removed: list[str] = []
    for edge in held.edges:
        key = (edge.relation_type or edge.name, edge.source_uuid, edge.target_uuid)
        if key in want and key not in have:
            have[key] = edge
        else:
            edges_removed.append(edge.uuid)
    now = timestamps.now()
    edges_upserted: list[EdgeRecord] = []
    for (rel, src, dst), fact in want.items():
        old = have.get((rel, src, dst))
        if (
            old is not None
            and old.fact == fact
            and old.name == rel
            and old.attributes == edge_attrs
        ):
            continue
        edges_upserted.append(
            EdgeRecord(
                uuid=old.uuid if old is not None else new_uuid(),
                name=rel,
                source_uuid=src,
                target_uuid=dst,
                fact=fact,
                relation_type=rel,
                attributes=edge_attrs,
                created_at=old.created_at if old is not None else now,
            )
        )
    return edges_upserted, edges_removed


def _mentions(
    s: DeclaredStructure, held: _Reading, doc_uuid: dict[str, str]
) -> set[tuple[str, str]]:
    """The declared ``(episode, document)`` mentions: a chunk's episodes, the target
    document by its path, else by its front-matter id."""
    by_id = {d.doc_id: doc_uuid[d.path] for d in s.documents if d.doc_id}
    mentions: set[tuple[str, str]] = set()
    for m in s.mentions:
        doc = doc_uuid.get(m.target) or by_id.get(m.target)
        if doc is not None:
            for ep in held.episodes.get(m.chunk_id, []):
                mentions.add((ep, doc))
    return mentions


def _changes(event: StructureDeclared) -> DeclareResult:
    return DeclareResult(
        entities_upserted=len(event.entities_upserted),
        entities_removed=len(event.entities_removed),
        edges_upserted=len(event.edges_upserted),
        edges_removed=len(event.edges_removed),
        mentions_added=len(event.mentions_added),
        mentions_removed=len(event.mentions_removed),
    )


def declare_structure(
    ws: Workspace, group_id: str, root: str, structure: DeclaredStructure
) -> DeclareResult:
    """Make the group's declared structure of the source at ``root`` match ``structure``:
    one ``StructureDeclared`` event with the difference, none when there is none.

    ``InvalidParamsError`` when ``root`` is no source of the group, or the structure names
    an edge endpoint it does not list.
    """
    chunk_ids = sorted({m.chunk_id for m in structure.mentions})
    with ws.group_lock(group_id):
        with ws.reading():
            held = _Reading(ws, group_id, root, chunk_ids)
        event = _plan(group_id, root, structure, held)
        result = _changes(event)
        result.mentions_unheld = sum(
            1 for m in structure.mentions if m.chunk_id not in held.episodes
        )
        if not (
            event.entities_upserted
            or event.entities_removed
            or event.edges_upserted
            or event.edges_removed
            or event.mentions_added
            or event.mentions_removed
        ):
            return result
        backlog = ws.vectors.backlog
        defer = backlog.drained_in_background
        with ws.text_embedder.deferring() if defer else nullcontext():
            ws.commit(group_id, [event])
        if defer and group_id in ws.projector.embedder_failures:
            backlog.add(group_id, len(event.entities_upserted) + len(event.edges_upserted))
    result.appended = True
    return result


def declared_mentions(ws: Workspace, group_id: str) -> list[StructureDeclared]:
    """The group's declared mentions (``MENTIONS`` to a declared document that extraction
    did not state), one ``StructureDeclared`` per source: what a dump writes after the
    episodes so its replay holds them too. The caller holds ``ws.reading()``."""
    roots = {s.label: s.root for s in gr.source_records(ws.graph, group_id)}
    by_label: dict[str, list[MentionRecord]] = {}
    for m in gr.episode_mentions(ws.graph, group_id):
        attrs = attributes_of(m.attributes)
        if attrs.get("origin") != DECLARED_ORIGIN or m.extracted:
            continue
        by_label.setdefault(str(attrs.get("source", "")), []).append(
            MentionRecord(episode_uuid=m.episode_uuid, entity_uuid=m.entity_uuid)
        )
    return [
        StructureDeclared(
            group_id=group_id, root=roots.get(label, ""), label=label, mentions_added=mentions
        )
        for label, mentions in sorted(by_label.items())
    ]
