"""Applying a batch of events to the Kuzu graph: load the touched rows, apply in memory, write.

A batch is cut into *segments* at every ``GroupPurged`` (a purge is a barrier: it runs as
its own statements between two segments). For one segment:

1. every uuid the events touch is collected, and the current rows are loaded with a handful
   of ``UNWIND $keys … MATCH`` reads (inside the write transaction, so they see its writes);
2. the events are applied, in order, to that in-memory overlay — plain Python, so the
   semantics of each event type read as code;
3. the net difference is written with a fixed number of batched statements (``UNWIND …
   CREATE`` for new rows, ``UNWIND … MATCH … SET`` for changed ones), never one statement
   per row, whatever the number of events.

An edge is a ``RelatesToNode_`` with two ``RELATES_TO`` hops when both endpoints exist, the
node alone when one is missing (unbound; ADR 0086). Loading a touched edge takes it out by
its primary key (node and hops; the write re-creates it, bound or unbound), and only when it
touches an existing edge: ``edges_created`` of extraction and merges carry uuids their
command minted, fresh, which the in-memory locator answers without a query; a line that
repeats one (a stream is input too) upserts the edge instead of failing the batch on a
duplicate primary key (ADR 0150).

The statements are in ``_statements``, how they run (prepared-statement cache, single-row
or batched form) in ``_conn``, the inserts (``UNWIND … CREATE`` or Arrow ``COPY``) in
``_bulk``, the purge barrier in ``_purge``, and the keys each event touches — refused when
another group holds one of their rows (ADR 0196) — in ``_touched``; this module is what each
event means to the graph.

The overlay keeps timestamps as normalised RFC 3339 strings (``…T….ffffffZ``) and the
statements cast them with ``CAST(… AS TIMESTAMP)``; every value is a plain Python value
(kuzu accepts no numpy arrays).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, assert_never

import kuzu
import msgspec

from lcg.events import (
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    EdgeInvalidation,
    EdgeRecord,
    EntitiesMerged,
    EntityAsserted,
    EntityRecord,
    EntityTypesChanged,
    EpisodeAdded,
    EpisodeExtracted,
    EpisodesDeleted,
    Event,
    GroupPurged,
    MergeOutcome,
    PointersRebound,
    RelationshipAsserted,
    RelationTypesChanged,
    SourceRegistered,
    SourceRemoved,
    StructureDeclared,
    lookup_key,
)
from lcg.projections.graph._bulk import copy_edges as _copy_edges
from lcg.projections.graph._bulk import create as _create
from lcg.projections.graph._conn import RELS_PER_SCAN as _RELS_PER_SCAN
from lcg.projections.graph._conn import each as _each
from lcg.projections.graph._conn import run as _run
from lcg.projections.graph._declared import Removals, plan_declared, write_removals
from lcg.projections.graph._index import IndexDelta
from lcg.projections.graph._purge import purge
from lcg.projections.graph._sources import SourceRows
from lcg.projections.graph._statements import (
    CREATE_UNBOUND,
    DELETE_EPISODE_ONE,
    DELETE_EPISODES,
    LOAD_ENTITIES,
    LOAD_ENTITY_ONE,
    LOAD_EPISODE_ONE,
    LOAD_EPISODES,
    LOAD_MENTIONS,
    LOAD_MENTIONS_ONE,
    TAKE_EDGE_ONE,
    TAKE_EDGES,
    UPDATE_ENTITIES,
    UPDATE_ENTITY_ONE,
    UPDATE_EPISODE_ONE,
    UPDATE_EPISODES,
)
from lcg.projections.graph._states import EdgeState as _Edge
from lcg.projections.graph._states import (
    EntityState,
    EpisodeState,
    edge_from_row,
    mention_uuid,
    norm_ts,
)
from lcg.projections.graph._states import edge_params as _edge_row
from lcg.projections.graph._states import entity_from_row as _entity_from_row
from lcg.projections.graph._states import episode_from_row as _episode_from_row
from lcg.projections.graph._states import norm_edge as _norm_edge
from lcg.projections.graph._touched import Keys as _Keys
from lcg.projections.graph._touched import refuse_foreign

__all__ = ["apply_events", "fold_events"]

# ---- one segment ----------------------------------------------------------------------

#: One planned event: applies it to the overlay once its rows are loaded.
_Step = Callable[[], None]


class _Segment:
    """The overlay of one segment: the rows it touches, before and after its events."""

    def __init__(self, conn: kuzu.Connection, group_id: str, index: IndexDelta) -> None:
        self.conn = conn
        self.group_id = group_id
        self.index = index
        #: Keys already looked up in the database (found or not): never looked up again.
        self.known_ents: set[str] = set()
        self.known_eps: set[str] = set()
        self.known_edges: set[str] = set()
        #: Episodes whose MENTIONS were loaded.
        self.mentions_loaded: set[str] = set()
        self.ents: dict[str, EntityState] = {}
        self.ent_db: set[str] = set()
        self.ent_dirty: set[str] = set()
        self.eps: dict[str, EpisodeState | None] = {}
        self.ep_db: set[str] = set()
        self.ep_dirty: set[str] = set()
        #: Episodes deleted (and maybe re-added) in the segment that existed before it.
        self.ep_reset: set[str] = set()
        #: Edges of the overlay: every loaded edge was taken out of the database (node and
        #: hops) and is dirty, so it is written back bound or unbound.
        self.edges: dict[str, _Edge] = {}
        self.edge_dirty: set[str] = set()
        self.mentions_db: dict[str, set[str]] = {}
        self.mentions_new: dict[str, dict[str, None]] = {}
        #: The group's source rows the events leave (keyed by the group: always its own).
        self.sources = SourceRows()
        #: What ``StructureDeclared`` events removed (``_declared``).
        self.removals = Removals()

    # -- loading --------------------------------------------------------------------------

    def load(self, events: list[Event]) -> list[_Step]:
        """Load the rows ``events`` touch that the overlay does not know yet; their steps.

        The locator says which keys exist, so a fresh uuid is never looked up, and an
        endpoint or a mention needs no row at all (only existence). Edges are taken by their
        primary key: the ones the events name, and the unbound ones waiting for an entity the
        events create (they get their hops when written back). The steps, run in order by
        ``apply``, apply the events to the overlay once their rows are loaded.
        """
        index = self.index
        base = index.base
        keys = _Keys()
        steps = []
        for event in events:
            mine = _Keys()
            steps.append(self._plan(event, mine))
            refuse_foreign(index, self.group_id, event, mine)
            keys.absorb(mine)
        ent_keys, ep_keys, edge_keys = keys.ents, keys.eps, keys.edges
        for k in keys.created_ents:
            if k not in self.ents:
                for u in index.waiting_on(k):
                    edge_keys.setdefault(u, None)
        take: list[str] = []
        for k in edge_keys:
            if k in self.edges or k in self.known_edges:
                continue
            self.known_edges.add(k)
            if index.rel(k) is not None or index.unbound_edge(k) is not None:
                take.append(k)
        size = len(base.rels) + len(base.unbound)
        for row in _each(
            self.conn, TAKE_EDGES, TAKE_EDGE_ONE, take, size, keys=True, per_scan=_RELS_PER_SCAN
        ):
            group, record = edge_from_row(row)
            index.put_rel(record.uuid, None)
            index.put_unbound(record.uuid, None)
            self.edges[record.uuid] = _Edge(group_id=group, record=record)
            self.edge_dirty.add(record.uuid)
        ent_keys.pop("", None)
        ent_list = [
            k
            for k in ent_keys
            if k not in self.ents and k not in self.known_ents and index.has_entity(k)
        ]
        self.known_ents.update(ent_keys)
        for row in _each(
            self.conn, LOAD_ENTITIES, LOAD_ENTITY_ONE, ent_list, len(base.entities), keys=True
        ):
            ent = _entity_from_row(row)
            self.ents[ent.uuid] = ent
            self.ent_db.add(ent.uuid)
        ep_list = [
            k
            for k in ep_keys
            if k not in self.eps and k not in self.known_eps and index.has_episode(k)
        ]
        self.known_eps.update(ep_keys)
        for row in _each(
            self.conn, LOAD_EPISODES, LOAD_EPISODE_ONE, ep_list, len(base.episodes), keys=True
        ):
            ep = _episode_from_row(row)
            self.eps[ep.uuid] = ep
            self.ep_db.add(ep.uuid)
        # An episode extracted before, or given declared mentions, may already hold MENTIONS.
        again = [u for u in keys.extracted_eps if u in self.ep_db and u not in self.mentions_loaded]
        if again:
            self.mentions_loaded.update(again)
            for ep_uuid, en_uuid in _each(
                self.conn, LOAD_MENTIONS, LOAD_MENTIONS_ONE, again, len(base.episodes), keys=True
            ):
                self.mentions_db.setdefault(ep_uuid, set()).add(en_uuid)
        return steps

    def has_entity(self, uuid: str) -> bool:
        """Whether entity ``uuid`` exists in the overlay or in the database."""
        return uuid in self.ents or self.index.has_entity(uuid)

    # -- applying -------------------------------------------------------------------------

    def apply(self, steps: list[_Step]) -> None:
        """Apply the planned events to the overlay, in order (``load`` returns the steps)."""
        for step in steps:
            step()

    def _plan(self, event: Event, keys: _Keys) -> _Step:
        """Note in ``keys`` the rows ``event`` needs; return the step that applies it.

        One case per event type holds both halves, so what an event reads is collected where
        what it does is written (they cannot disagree), and strict mypy fails on a type with
        no case (``assert_never``). ``ents``: entities whose state the event reads (an
        endpoint or a mention only needs to exist, which the locator answers); ``edges``:
        edges that may already exist (``edges_created`` too: fresh ones cost a locator probe,
        no query); ``created_ents``: entities the event writes in full.
        """
        g = event.group_id
        match event:
            case EpisodeAdded():
                keys.eps[event.uuid] = None
                return lambda: self._add_episode(event)
            case EpisodeExtracted():
                keys.eps[event.episode_uuid] = None
                keys.extracted_eps.append(event.episode_uuid)
                for rec in event.entities_created:
                    keys.created_ents[rec.uuid] = None
                for upd in event.entities_updated:
                    keys.ents[upd.uuid] = None
                for rs in event.edges_restated:
                    keys.edges[rs.uuid] = None
                for made in event.edges_created:
                    keys.edges[made.uuid] = None
                for inv in event.edges_invalidated:
                    keys.edges[inv.uuid] = None
                return lambda: self._extracted(event)
            case EntityAsserted():
                keys.created_ents[event.entity.uuid] = None
                return lambda: self._put_entity(g, event.entity)
            case RelationshipAsserted() | CrossGroupEdgeAdded():
                keys.edges[event.edge.uuid] = None
                return lambda: self._put_edge(g, _norm_edge(event.edge))
            case EntitiesMerged():
                keys.merge(event.merge)
                return lambda: self._merge(g, event.merge)
            case CorrectionsApplied():
                for m in event.merges:
                    keys.merge(m)
                for inv in event.retractions:
                    keys.edges[inv.uuid] = None
                return lambda: self._corrections(event)
            case EpisodesDeleted():
                for u in event.episode_uuids:
                    keys.eps[u] = None
                return lambda: self._delete_episodes(event.episode_uuids)
            case RelationTypesChanged():
                for rt in event.changes:
                    keys.edges[rt.uuid] = None
                return lambda: self._retype_edges(event)
            case EntityTypesChanged():
                for et in event.changes:
                    keys.ents[et.uuid] = None
                return lambda: self._retype_entities(event)
            case PointersRebound():
                for rb in event.rebinds:
                    keys.edges[rb.uuid] = None
                return lambda: self._rebind(event)
            case SourceRegistered():
                return lambda: self.sources.register(event)
            case SourceRemoved():
                return lambda: self.sources.remove(event)
            case StructureDeclared():
                return plan_declared(self, event, keys)
            case GroupPurged():  # pragma: no cover - split off by _segments
                raise AssertionError("GroupPurged is a segment barrier")
            case _:
                assert_never(event)

    def _add_episode(self, event: EpisodeAdded) -> None:
        if self.eps.get(event.uuid) is None:
            self.eps[event.uuid] = EpisodeState(
                uuid=event.uuid,
                name=event.name,
                group_id=event.group_id,
                created_at=norm_ts(event.created_at),
                source=event.source,
                source_description=event.source_description,
                content=event.content,
                valid_at=norm_ts(event.valid_at),
                entity_edges=[],
                content_hash=event.content_hash,
                extracted=False,
            )
            self.ep_dirty.add(event.uuid)

    def _corrections(self, event: CorrectionsApplied) -> None:
        for merge in event.merges:
            self._merge(event.group_id, merge)
        self._invalidate(event.retractions)

    def _delete_episodes(self, uuids: list[str]) -> None:
        for u in uuids:
            if self.eps.get(u) is None and u not in self.ep_db:
                continue
            self.eps[u] = None
            self.ep_dirty.add(u)
            if u in self.ep_db:
                self.ep_reset.add(u)
            self.mentions_new.pop(u, None)
            self.mentions_db.pop(u, None)

    def _retype_edges(self, event: RelationTypesChanged) -> None:
        for rt in event.changes:
            self._edit_edge(rt.uuid, relation_type=rt.relation_type)

    def _retype_entities(self, event: EntityTypesChanged) -> None:
        for et in event.changes:
            ent = self.ents.get(et.uuid)
            if ent is not None:
                ent.labels = list(et.labels)
                self.ent_dirty.add(et.uuid)

    def _rebind(self, event: PointersRebound) -> None:
        for rb in event.rebinds:
            edge = self.edges.get(rb.uuid)
            if edge is None:
                continue
            invalid = norm_ts(rb.invalid_at)
            self._edit_edge(
                rb.uuid,
                source_uuid=rb.source_uuid,
                target_uuid=rb.target_uuid,
                attributes=rb.attributes,
                invalid_at=invalid if invalid is not None else edge.record.invalid_at,
            )

    def _extracted(self, event: EpisodeExtracted) -> None:
        g = event.group_id
        for rec in event.entities_created:
            self._put_entity(g, rec)
        for upd in event.entities_updated:
            ent = self.ents.get(upd.uuid)
            if ent is not None:
                ent.summary = upd.summary
                self.ent_dirty.add(upd.uuid)
        for edge in event.edges_created:
            episodes = edge.episodes or [event.episode_uuid]
            self._put_edge(g, _norm_edge(edge, episodes=episodes))
        for rs in event.edges_restated:
            current = self.edges.get(rs.uuid)
            if current is not None and rs.episode_uuid not in current.record.episodes:
                self._edit_edge(rs.uuid, episodes=[*current.record.episodes, rs.episode_uuid])
        self._invalidate(event.edges_invalidated)
        ep = self.eps.get(event.episode_uuid)
        if ep is None:
            return
        ep.entity_edges = list(event.mentions)
        ep.extracted = True
        self.ep_dirty.add(ep.uuid)
        have = self.mentions_db.get(ep.uuid, set())
        pending = self.mentions_new.setdefault(ep.uuid, {})
        for en in event.mentions:
            if en not in have:
                pending[en] = None

    def _put_entity(self, group_id: str, rec: EntityRecord) -> None:
        self.ents[rec.uuid] = EntityState(
            uuid=rec.uuid,
            name=rec.name,
            group_id=group_id,
            labels=list(rec.labels),
            created_at=norm_ts(rec.created_at),
            summary=rec.summary,
            attributes=rec.attributes,
        )
        self.ent_dirty.add(rec.uuid)

    def _put_edge(self, group_id: str, rec: EdgeRecord) -> None:
        self.edges[rec.uuid] = _Edge(group_id=group_id, record=rec)
        self.edge_dirty.add(rec.uuid)

    def _edit_edge(self, uuid: str, **changes: Any) -> None:
        edge = self.edges.get(uuid)
        if edge is None:
            return
        edge.record = msgspec.structs.replace(edge.record, **changes)
        self.edge_dirty.add(uuid)

    def _invalidate(self, invalidations: Iterable[EdgeInvalidation]) -> None:
        for inv in invalidations:
            self._edit_edge(inv.uuid, invalid_at=norm_ts(inv.invalid_at))

    def _merge(self, group_id: str, merge: MergeOutcome) -> None:
        for alias in merge.aliases:
            ent = self.ents.get(alias.uuid)
            if ent is not None:
                ent.labels = list(alias.labels)
                ent.attributes = alias.attributes
                self.ent_dirty.add(alias.uuid)
        canonical = self.ents.get(merge.canonical_uuid)
        if canonical is not None:
            canonical.created_at = norm_ts(merge.canonical_created_at)
            if merge.canonical_summary is not None:
                canonical.summary = merge.canonical_summary
            self.ent_dirty.add(canonical.uuid)
        for edge in merge.edges_created:
            self._put_edge(group_id, _norm_edge(edge))
        self._invalidate(merge.edges_invalidated)

    # -- writing --------------------------------------------------------------------------

    def write(self, *, bulk: bool = False) -> None:
        """Write the overlay's net changes (new rows by ``COPY`` from Arrow when ``bulk``).

        Only statements with rows to write run; every row written is recorded in the
        transaction's locator delta.
        """
        conn = self.conn
        index = self.index
        n_ents = len(index.base.entities)
        n_eps = len(index.base.episodes)
        drop_eps = sorted(
            u
            for u in self.ep_dirty
            if u in self.ep_db and (self.eps[u] is None or u in self.ep_reset)
        )
        _each(conn, DELETE_EPISODES, DELETE_EPISODE_ONE, drop_eps, n_eps, keys=True)
        for u in drop_eps:
            index.put_episode(u, None)
        write_removals(self)
        new_ents: list[dict[str, Any]] = []
        changed_ents: list[dict[str, Any]] = []
        for u in sorted(self.ent_dirty):
            ent = self.ents[u]
            row = msgspec.structs.asdict(ent)
            # Derived from the name at every write, so it can never disagree with it.
            row["name_key"] = lookup_key(ent.name)
            exists = u in self.ent_db or index.has_entity(u)
            (changed_ents if exists else new_ents).append(row)
            index.put_entity(u, ent.group_id)
        _each(conn, UPDATE_ENTITIES, UPDATE_ENTITY_ONE, changed_ents, n_ents)
        if new_ents:
            _create(conn, "Entity", new_ents, bulk, n_ents)
        new_eps: list[dict[str, Any]] = []
        changed_eps: list[dict[str, Any]] = []
        for u in sorted(self.ep_dirty):
            ep = self.eps[u]
            if ep is None:
                continue
            row = msgspec.structs.asdict(ep)
            if u in self.ep_db and u not in self.ep_reset:
                changed_eps.append(row)
            else:
                new_eps.append(row)
            index.put_episode(u, ep.group_id)
        _each(conn, UPDATE_EPISODES, UPDATE_EPISODE_ONE, changed_eps, n_eps)
        if new_eps:
            _create(conn, "Episodic", new_eps, bulk, n_eps)
        self._write_edges(bulk)
        self._write_mentions(bulk)
        self.sources.write(conn, self.group_id)

    def _write_edges(self, bulk: bool) -> None:
        """Create every dirty edge: with its hops when both endpoints exist, else unbound."""
        index = self.index
        rels: list[dict[str, Any]] = []
        unbound: list[dict[str, Any]] = []
        for u in sorted(self.edge_dirty):
            edge = self.edges[u]
            src, dst = edge.record.source_uuid, edge.record.target_uuid
            loc = (src, dst, edge.group_id)
            if self.has_entity(src) and self.has_entity(dst):
                rels.append(_edge_row(edge))
                index.put_rel(u, loc)
            else:
                unbound.append(_edge_row(edge))
                index.put_unbound(u, loc)
        if bulk:
            if rels or unbound:
                _copy_edges(self.conn, rels, unbound)
            return
        if rels:
            _create(self.conn, "RelatesToNode_", rels, False, len(index.base.entities))
        if unbound:
            _run(self.conn, CREATE_UNBOUND, {"rows": unbound})

    def _write_mentions(self, bulk: bool) -> None:
        rows: list[dict[str, Any]] = []
        for ep_uuid, entities in self.mentions_new.items():
            ep = self.eps.get(ep_uuid)
            if ep is None:
                continue
            for en in entities:
                if self.has_entity(en):
                    rows.append(
                        {
                            "ep": ep_uuid,
                            "en": en,
                            "uuid": mention_uuid(ep_uuid, en),
                            "group_id": ep.group_id,
                            "created_at": ep.created_at,
                        }
                    )
        if rows:
            size = len(self.index.base.entities) + len(self.index.base.episodes)
            _create(self.conn, "MENTIONS", rows, bulk, size)


# ---- the batch ------------------------------------------------------------------------


def _segments(events: list[Event]) -> Iterator[list[Event] | GroupPurged]:
    current: list[Event] = []
    for event in events:
        if isinstance(event, GroupPurged):
            if current:
                yield current
                current = []
            yield event
        else:
            current.append(event)
    if current:
        yield current


def apply_events(
    conn: kuzu.Connection, group_id: str, events: list[Event], index: IndexDelta
) -> None:
    """Apply ``events`` of ``group_id`` inside the caller's open write transaction.

    ``index`` is the transaction's locator delta: read for existence and edge locations,
    and given every row written.
    """
    for part in _segments(events):
        if isinstance(part, GroupPurged):
            purge(conn, group_id, index)
            continue
        segment = _Segment(conn, group_id, index)
        segment.apply(segment.load(part))
        segment.write()


def fold_events(
    conn: kuzu.Connection, group_id: str, batches: Iterable[list[Event]], index: IndexDelta
) -> int:
    """Apply every batch to one overlay and write it once, with ``COPY`` for new rows.

    For a group with no rows yet (a rebuild): the database is read only for keys the stream
    does not create itself. Returns the number of events folded.
    """
    overlay = _Segment(conn, group_id, index)
    count = 0
    for batch in batches:
        count += len(batch)
        for part in _segments(batch):
            if isinstance(part, GroupPurged):
                overlay.write(bulk=True)
                purge(conn, group_id, index)
                overlay = _Segment(conn, group_id, index)
                continue
            overlay.apply(overlay.load(part))
    overlay.write(bulk=True)
    return count
