"""Purging a group from the Kuzu graph: the barrier a ``GroupPurged`` is between segments."""

from __future__ import annotations

from typing import Final

import kuzu

from lcg.projections.graph._conn import query_rows as _rows
from lcg.projections.graph._conn import run as _run
from lcg.projections.graph._index import IndexDelta

__all__ = ["purge"]

# Both hops of other groups' edges touching the purged entities go (not only the one at the
# purged end): an edge is bound with both hops or unbound with none.
_UNHOP_FOREIGN: Final = (
    "MATCH (a:Entity)-[h1:RELATES_TO]->(e:RelatesToNode_)-[h2:RELATES_TO]->(b:Entity) "
    "WHERE e.group_id <> $g AND (a.group_id = $g OR b.group_id = $g) "
    "WITH h1, h2, e.uuid AS u, e.source_node_uuid AS s, e.target_node_uuid AS t, "
    "e.group_id AS owner DELETE h1, h2 RETURN u, s, t, owner"
)
_PURGE: Final[tuple[str, ...]] = (
    "MATCH (e:RelatesToNode_) WHERE e.group_id = $g DETACH DELETE e",
    "MATCH (n:Episodic) WHERE n.group_id = $g DETACH DELETE n",
    "MATCH (n:Entity) WHERE n.group_id = $g DETACH DELETE n",
    "MATCH (s:Source) WHERE s.group_id = $g DELETE s",
)


def purge(conn: kuzu.Connection, group_id: str, index: IndexDelta) -> None:
    """Delete every row of ``group_id`` (inside the caller's transaction).

    Edges of *other* groups that point at the purged entities keep their ``RelatesToNode_``
    and lose their hops (the reference's "foreign edges survive without the hop"): they are
    unbound, and get their hops back if the entities return.
    """
    foreign = _rows(conn, _UNHOP_FOREIGN, {"g": group_id})
    for statement in _PURGE:
        _run(conn, statement, {"g": group_id})
    index.purge(group_id)
    for uuid, source, target, owner in foreign:
        index.put_rel(uuid, None)
        index.put_unbound(uuid, (source, target, owner or ""))
