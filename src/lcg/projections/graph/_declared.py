"""What ``StructureDeclared`` means to the graph (issue 29, ADR 0203).

Declared documents and tags are upserted like asserted entities, declared edges like asserted
relationships. Unlike any other event, it also *removes*: an entity (with its ``MENTIONS``;
another edge still naming it — an extracted one — is written back unbound, as an edge whose
endpoint is missing always is), an edge, or one ``MENTIONS`` relationship. The overlay keeps
what is removed (``Removals``) and ``write_removals`` deletes it before the segment's other
writes, so a row removed and re-created in one segment is written once, as re-created.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import kuzu

from lcg.events import EdgeRecord, EntityRecord, StructureDeclared
from lcg.projections.graph._conn import each as _each
from lcg.projections.graph._conn import run as _run
from lcg.projections.graph._index import EdgeLoc, IndexDelta
from lcg.projections.graph._statements import (
    DELETE_ENTITIES,
    DELETE_ENTITY_ONE,
    DELETE_MENTIONS,
    LOAD_MENTIONS,
    LOAD_MENTIONS_ONE,
    UNHOP_EDGES,
)
from lcg.projections.graph._states import EdgeState, EntityState, EpisodeState, norm_edge
from lcg.projections.graph._touched import Keys

__all__ = ["Removals", "plan_declared", "write_removals"]


class Removals:
    """What a segment's events removed: entities, and mentions held in the database."""

    __slots__ = ("entities", "foreign", "mentions")

    def __init__(self) -> None:
        """Nothing removed yet."""
        self.entities: set[str] = set()
        self.mentions: dict[tuple[str, str], None] = {}
        #: Other groups' bound edges naming a removed entity: unbound when it goes.
        self.foreign: dict[str, EdgeLoc] = {}


class _Segment(Protocol):
    """What this module uses of ``_apply``'s segment overlay (it imports nothing of it)."""

    conn: kuzu.Connection
    index: IndexDelta
    ents: dict[str, EntityState]
    ent_dirty: set[str]
    edges: dict[str, EdgeState]
    edge_dirty: set[str]
    eps: dict[str, EpisodeState | None]
    ep_db: set[str]
    ep_reset: set[str]
    mentions_loaded: set[str]
    mentions_db: dict[str, set[str]]
    mentions_new: dict[str, dict[str, None]]
    removals: Removals

    def _put_entity(self, group_id: str, rec: EntityRecord) -> None: ...

    def _put_edge(self, group_id: str, rec: EdgeRecord) -> None: ...


def _bound_edges_of(index: IndexDelta, entities: set[str]) -> dict[str, EdgeLoc]:
    """The bound edges with an endpoint among ``entities`` (one pass over the locator)."""
    found: dict[str, EdgeLoc] = {}
    for u in [*index.base.rels, *index.rels]:
        loc = index.rel(u)
        if loc is not None and (loc[0] in entities or loc[1] in entities):
            found[u] = loc
    return found


def plan_declared(seg: _Segment, event: StructureDeclared, keys: Keys) -> Callable[[], None]:
    """Note the rows ``event`` writes or removes in ``keys``; the step that applies it."""
    for rec in event.entities_upserted:
        keys.created_ents[rec.uuid] = None
    for u in event.entities_removed:
        keys.ents[u] = None
    for e in event.edges_upserted:
        keys.edges[e.uuid] = None
    for u in event.edges_removed:
        keys.edges[u] = None
    if event.entities_removed:
        # The group's own are taken out with the rest, so each is written back unbound (or
        # removed below); another group's lose their hops when the entity goes, as a purge
        # leaves them (``write_removals``).
        for u, loc in _bound_edges_of(seg.index, set(event.entities_removed)).items():
            if loc[2] == event.group_id:
                keys.edges[u] = None
            else:
                seg.removals.foreign[u] = loc
    for m in [*event.mentions_added, *event.mentions_removed]:
        keys.eps[m.episode_uuid] = None
    return lambda: _apply(seg, event)


def _load_mentions(seg: _Segment, episodes: list[str]) -> None:
    """Load the database's MENTIONS of ``episodes`` not loaded yet (inside the transaction)."""
    todo = [
        u
        for u in dict.fromkeys(episodes)
        if u in seg.ep_db and u not in seg.ep_reset and u not in seg.mentions_loaded
    ]
    if not todo:
        return
    seg.mentions_loaded.update(todo)
    size = len(seg.index.base.episodes)
    for ep_uuid, en_uuid in _each(
        seg.conn, LOAD_MENTIONS, LOAD_MENTIONS_ONE, todo, size, keys=True
    ):
        seg.mentions_db.setdefault(ep_uuid, set()).add(en_uuid)


def _apply(seg: _Segment, event: StructureDeclared) -> None:
    g = event.group_id
    gone = seg.removals
    for u in event.edges_removed:
        seg.edges.pop(u, None)
        seg.edge_dirty.discard(u)
    for u in event.entities_removed:
        seg.ents.pop(u, None)
        seg.ent_dirty.discard(u)
        gone.entities.add(u)
        for pending in seg.mentions_new.values():
            pending.pop(u, None)
    for rec in event.entities_upserted:
        gone.entities.discard(rec.uuid)
        seg._put_entity(g, rec)
    for edge in event.edges_upserted:
        seg._put_edge(g, norm_edge(edge))
    _load_mentions(seg, [m.episode_uuid for m in [*event.mentions_added, *event.mentions_removed]])
    for m in event.mentions_removed:
        ep, en = m.episode_uuid, m.entity_uuid
        seg.mentions_new.get(ep, {}).pop(en, None)
        held = seg.mentions_db.get(ep)
        if held is not None and en in held:
            held.discard(en)
            gone.mentions[(ep, en)] = None
    for m in event.mentions_added:
        ep, en = m.episode_uuid, m.entity_uuid
        if seg.eps.get(ep) is None or en in seg.mentions_db.get(ep, set()):
            continue
        seg.mentions_new.setdefault(ep, {})[en] = None


def write_removals(seg: _Segment) -> None:
    """Delete the removed entities (with their MENTIONS) and the removed MENTIONS; record
    the entities as gone in the locator, so edges naming them are written unbound."""
    index = seg.index
    gone = sorted(u for u in seg.removals.entities if u not in seg.ents and index.has_entity(u))
    gone_set = set(gone)
    unhop = sorted(
        u for u, loc in seg.removals.foreign.items() if loc[0] in gone_set or loc[1] in gone_set
    )
    if unhop:
        _run(seg.conn, UNHOP_EDGES, {"keys": unhop})
        for u in unhop:
            index.put_rel(u, None)
            index.put_unbound(u, seg.removals.foreign[u])
    _each(seg.conn, DELETE_ENTITIES, DELETE_ENTITY_ONE, gone, len(index.base.entities), keys=True)
    for u in gone:
        index.put_entity(u, None)
    rows = [{"ep": ep, "en": en} for ep, en in seg.removals.mentions]
    if rows:
        _run(seg.conn, DELETE_MENTIONS, {"rows": rows})
