"""The in-memory locator of the graph projection: which rows exist, and which edges are bound.

Kuzu 0.11.3 plans every ``UNWIND``-keyed lookup
(``UNWIND $keys AS k MATCH (e:Entity {uuid: k})``) as a hash join over a full scan of
the table; only a primary-key match on a plain parameter (``MATCH (e:Entity {uuid: $k})``)
uses the hash index. So the projection keeps, in memory:

* every ``Entity`` and ``Episodic`` uuid with its group (existence checks cost nothing, and a
  fresh uuid is never looked up);
* every bound edge (a ``RelatesToNode_`` with its two ``RELATES_TO`` hops) with
  ``(source, target, group)``;
* every unbound edge (a ``RelatesToNode_`` without hops: an endpoint is missing) with
  ``(source, target, group)``, and which unbound edges wait on each endpoint uuid.

It is built by one scan per table when the projection opens. A write transaction works on a
``IndexDelta`` layered over the index; the delta is folded in only after ``COMMIT`` succeeds,
so a rolled-back transaction leaves the index as it was.
"""

from __future__ import annotations

from typing import Any, Final, cast

import kuzu

__all__ = ["EdgeLoc", "GraphIndex", "IndexDelta"]

#: ``(source uuid, target uuid, group id)`` of an edge.
EdgeLoc = tuple[str, str, str]

_SCANS: Final = (
    "MATCH (e:Entity) RETURN e.uuid, e.group_id",
    "MATCH (p:Episodic) RETURN p.uuid, p.group_id",
    "MATCH (e:RelatesToNode_) RETURN e.uuid, e.source_node_uuid, e.target_node_uuid, e.group_id",
    # Bound edges by their source hop: an edge has both hops or none.
    "MATCH (:Entity)-[:RELATES_TO]->(e:RelatesToNode_) RETURN e.uuid",
)


def _all(conn: kuzu.Connection, query: str) -> list[list[Any]]:
    """The rows of ``query`` as columns → rows via Arrow (several times faster than
    ``get_all`` for the hundreds of thousands of rows of an open)."""
    result = conn.execute(query)
    assert isinstance(result, kuzu.QueryResult)
    table = result.get_as_arrow()
    columns = [cast(list[Any], table.column(i).to_pylist()) for i in range(table.num_columns)]
    return [list(row) for row in zip(*columns, strict=True)]


class GraphIndex:
    """Committed state: entity/episode uuids → group, edge uuids → location."""

    def __init__(self) -> None:
        """An empty index (use ``scan`` to build one from a database)."""
        self.entities: dict[str, str] = {}
        self.episodes: dict[str, str] = {}
        self.rels: dict[str, EdgeLoc] = {}
        self.unbound: dict[str, EdgeLoc] = {}
        #: Endpoint uuid → unbound edges naming it (may hold stale uuids; check ``unbound``).
        self.waiting: dict[str, set[str]] = {}

    @classmethod
    def scan(cls, conn: kuzu.Connection) -> GraphIndex:
        """The index of everything ``conn`` sees (one scan per table)."""
        index = cls()
        ents, eps, edges, hopped = (_all(conn, q) for q in _SCANS)
        index.entities = {u: g or "" for u, g in ents}
        index.episodes = {u: g or "" for u, g in eps}
        bound = {row[0] for row in hopped}
        for u, s, t, g in edges:
            if u in bound:
                index.rels[u] = (s, t, g or "")
            else:
                index._put_unbound(u, (s, t, g or ""))
        return index

    def _put_unbound(self, uuid: str, loc: EdgeLoc) -> None:
        self.unbound[uuid] = loc
        self.waiting.setdefault(loc[0], set()).add(uuid)
        self.waiting.setdefault(loc[1], set()).add(uuid)

    def snapshot(
        self,
    ) -> tuple[dict[str, str], dict[str, str], dict[str, EdgeLoc], dict[str, EdgeLoc]]:
        """The index's content (for comparing with a fresh ``scan``)."""
        return dict(self.entities), dict(self.episodes), dict(self.rels), dict(self.unbound)

    def commit(self, delta: IndexDelta) -> None:
        """Fold a committed transaction's changes in."""
        for table, changes in (
            (self.entities, delta.entities),
            (self.episodes, delta.episodes),
            (self.rels, delta.rels),
        ):
            for key, value in changes.items():
                if value is None:
                    table.pop(key, None)
                else:
                    table[key] = value  # type: ignore[assignment]
        for key, loc in delta.unbound.items():
            old = self.unbound.pop(key, None)
            if old is not None:
                for end in old[:2]:
                    waiters = self.waiting.get(end)
                    if waiters is not None:
                        waiters.discard(key)
                        if not waiters:
                            del self.waiting[end]
            if loc is not None:
                self._put_unbound(key, loc)


class IndexDelta:
    """One write transaction's view of the index: its own changes over the committed state."""

    def __init__(self, base: GraphIndex) -> None:
        """An empty delta over ``base``."""
        self.base = base
        self.entities: dict[str, str | None] = {}
        self.episodes: dict[str, str | None] = {}
        self.rels: dict[str, EdgeLoc | None] = {}
        self.unbound: dict[str, EdgeLoc | None] = {}
        self.waiting: dict[str, set[str]] = {}

    def has_entity(self, uuid: str) -> bool:
        """Whether an ``Entity`` row ``uuid`` exists in the transaction."""
        if uuid in self.entities:
            return self.entities[uuid] is not None
        return uuid in self.base.entities

    def has_episode(self, uuid: str) -> bool:
        """Whether an ``Episodic`` row ``uuid`` exists in the transaction."""
        if uuid in self.episodes:
            return self.episodes[uuid] is not None
        return uuid in self.base.episodes

    def rel(self, uuid: str) -> EdgeLoc | None:
        """Where relationship ``uuid`` is, or ``None`` if there is none."""
        if uuid in self.rels:
            return self.rels[uuid]
        return self.base.rels.get(uuid)

    def unbound_edge(self, uuid: str) -> EdgeLoc | None:
        """Where unbound edge ``uuid`` points, or ``None`` if there is none."""
        if uuid in self.unbound:
            return self.unbound[uuid]
        return self.base.unbound.get(uuid)

    def entity_owner(self, uuid: str) -> str | None:
        """The group of entity ``uuid`` in the transaction (``None``: there is none)."""
        if uuid in self.entities:
            return self.entities[uuid]
        return self.base.entities.get(uuid)

    def episode_owner(self, uuid: str) -> str | None:
        """The group of episode ``uuid`` in the transaction (``None``: there is none)."""
        if uuid in self.episodes:
            return self.episodes[uuid]
        return self.base.episodes.get(uuid)

    def edge_owner(self, uuid: str) -> str | None:
        """The group of edge ``uuid``, bound or unbound (``None``: there is none)."""
        loc = self.rel(uuid) or self.unbound_edge(uuid)
        return None if loc is None else loc[2]

    def waiting_on(self, entity_uuid: str) -> list[str]:
        """The unbound edges naming ``entity_uuid`` as an endpoint."""
        found = self.base.waiting.get(entity_uuid, set()) | self.waiting.get(entity_uuid, set())
        return sorted(
            u for u in found if (loc := self.unbound_edge(u)) is not None and entity_uuid in loc[:2]
        )

    def put_entity(self, uuid: str, group_id: str | None) -> None:
        """Record an entity written (``None``: deleted)."""
        self.entities[uuid] = group_id

    def put_episode(self, uuid: str, group_id: str | None) -> None:
        """Record an episode written (``None``: deleted)."""
        self.episodes[uuid] = group_id

    def put_rel(self, uuid: str, loc: EdgeLoc | None) -> None:
        """Record a relationship written (``None``: deleted)."""
        self.rels[uuid] = loc

    def put_unbound(self, uuid: str, loc: EdgeLoc | None) -> None:
        """Record an unbound edge written (``None``: deleted)."""
        self.unbound[uuid] = loc
        if loc is not None:
            self.waiting.setdefault(loc[0], set()).add(uuid)
            self.waiting.setdefault(loc[1], set()).add(uuid)

    def purge(self, group_id: str) -> None:
        """Record the deletion of every row of ``group_id`` (foreign moves are put separately)."""
        for u in [*self.base.entities, *self.entities]:
            if self.entities.get(u, self.base.entities.get(u)) == group_id:
                self.entities[u] = None
        for u in [*self.base.episodes, *self.episodes]:
            if self.episodes.get(u, self.base.episodes.get(u)) == group_id:
                self.episodes[u] = None
        for u in [*self.base.rels, *self.rels]:
            loc = self.rel(u)
            if loc is not None and loc[2] == group_id:
                self.rels[u] = None
        for u in [*self.base.unbound, *self.unbound]:
            loc = self.unbound_edge(u)
            if loc is not None and loc[2] == group_id:
                self.unbound[u] = None
