"""Current truth after a supersession: a read serves the successor before what it replaced.

A ``Document`` that a current ``SUPERSEDES`` edge (``invalid_at`` null, both hops bound)
from another ``Document`` points at is *superseded*; the edge is the source of truth, not
the ``superseded_by`` attribute the declared pass also writes (ADR 0211): the edge is the
graph's fact, which a replay, a client's assertion or a later sync changes in one place,
while the attribute is a copy the declared pass alone keeps, naming a tree path.

``Successions.current`` shapes a search's page by the current supersessions between
documents of its groups (a handful per group; none is the usual answer), with at most one
graph lookup per read: an answer is kept while no group's committed position
(``committed_positions``, held in memory, moved after every commit, replay and purge)
moves, so a read between writes asks nothing (the lookup, a filtered scan of the groups'
edges, cost 2-8 ms for 12,000 edges on a loaded 2-core machine).
The three shapers then reorder the page without another query, except to fetch the rows of
successors (or of ``SUPERSEDES`` facts) the page did not hold:

* ``entities_first`` — each superseded document comes after its successors (added when
  the page lacks them: a person asking about the old story learns it was replaced), its
  served attributes carrying ``superseded_by`` (the stored one, else the successor's name);
* ``facts_first`` — a fact touching a superseded document comes after the ``SUPERSEDES``
  facts naming its successors (added when absent);
* ``passages_after`` — a chunk of a superseded document's file comes after the chunks of
  its successors' files in the page (none is added: a passage answers by its text), and
  says ``superseded_by`` (the successor's file).

Chains (C supersedes B supersedes A) are followed; a cycle is cut where it closes. Every
answer keeps at most the ``num_results`` it was asked for, the tail giving way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import msgspec

from lcg.errors import ProjectionError
from lcg.events import attributes_of, chunk_file
from lcg.projections import EdgeRow, EntityRow, GraphProjection, GroupFailures
from lcg.query._passage_rules import PassageRow

__all__ = [
    "Succession",
    "Successions",
    "entities_first",
    "facts_first",
    "passages_after",
]

_RELATION: Final = "SUPERSEDES"
_DOCUMENT: Final = "Document"
#: How far a chain of supersessions is followed from a row of the page.
_MAX_CHAIN: Final = 16
#: Groups whose supersessions are remembered at most (then the memory starts again).
_MAX_GROUPS: Final = 10_000
_Paged = TypeVar("_Paged", EntityRow, EdgeRow, PassageRow)
_QUERY: Final = (
    "MATCH (n:Entity)-[:RELATES_TO]->(e:RelatesToNode_)-[:RELATES_TO]->(o:Entity) "
    "WHERE e.relation_type = $rel AND e.invalid_at IS NULL AND {groups} "
    "AND list_contains(n.labels, $doc) AND list_contains(o.labels, $doc) "
    "RETURN e.uuid, e.group_id, n.uuid, n.name, n.attributes, o.uuid, o.attributes "
    "ORDER BY n.name, n.uuid, e.uuid"
)


def _file(attrs: dict[str, Any]) -> str | None:
    """A declared document's file as its chunks' sources name it (``<label>/<path>``)."""
    source, path = attrs.get("source"), attrs.get("path")
    if isinstance(source, str) and isinstance(path, str) and source and path:
        return f"{source}/{path}"
    return None


class _Edge(msgspec.Struct, frozen=True, kw_only=True):
    """One current supersession: ``new`` supersedes ``old`` by the edge ``uuid``."""

    uuid: str
    new: str
    new_name: str
    new_file: str | None
    old: str
    old_file: str | None


class Succession:
    """The current supersessions between the documents of some groups."""

    def __init__(self, edges: Sequence[_Edge] = ()) -> None:
        #: Superseded document uuid -> its supersessions, successors by name.
        self.of: dict[str, list[_Edge]] = {}
        #: Superseded document file -> its successors' files.
        self.files: dict[str, list[str]] = {}
        for e in edges:
            if e.new == e.old:
                continue
            self.of.setdefault(e.old, []).append(e)
            if e.old_file is not None and e.new_file is not None:
                self.files.setdefault(e.old_file, []).append(e.new_file)

    def __bool__(self) -> bool:
        return bool(self.of)

    def successors(self, uuid: str) -> list[str]:
        """The documents that supersede ``uuid`` directly (by name)."""
        return [e.new for e in self.of.get(uuid, [])]

    def chain(self, start: Sequence[str]) -> list[str]:
        """Every document that supersedes one of ``start``, directly or along a chain."""
        seen: set[str] = set(start)
        out: list[str] = []
        frontier = list(start)
        for _ in range(_MAX_CHAIN):
            nxt = [s for u in frontier for s in self.successors(u) if s not in seen]
            if not nxt:
                break
            for s in nxt:
                if s not in seen:
                    seen.add(s)
                    out.append(s)
            frontier = nxt
        return out


def _read(graph: GraphProjection, group_ids: Sequence[str]) -> dict[str, list[_Edge]]:
    """The supersessions of each of ``group_ids``, in one query."""
    out: dict[str, list[_Edge]] = {g: [] for g in group_ids}
    if not group_ids:
        return out
    rows = graph.query(
        _QUERY.format(groups="e.group_id IN $groups"),
        {"rel": _RELATION, "doc": _DOCUMENT, "groups": sorted(out)},
    )
    for uuid, group, new, new_name, new_attrs, old, old_attrs in rows:
        out.setdefault(str(group), []).append(
            _Edge(
                uuid=str(uuid),
                new=str(new),
                new_name=str(new_name or ""),
                new_file=_file(attributes_of(new_attrs)),
                old=str(old),
                old_file=_file(attributes_of(old_attrs)),
            )
        )
    return out


class Successions:
    """The supersessions of each group, remembered while no group's committed position moves.

    Keyed on every group's position, not the page's groups' alone: a Cypher mutation is
    logged to the default group whatever group's rows it changes, so only "nothing was
    committed anywhere" proves a remembered answer current.
    """

    def __init__(self, graph: GraphProjection) -> None:
        self.graph = graph
        self._lock = threading.Lock()
        self._at: dict[str, tuple[int, str]] | None = None
        self._held: dict[str, list[_Edge]] = {}

    def current(
        self,
        failures: GroupFailures,
        rows: list[_Paged],
        shape: Callable[[Succession], list[_Paged]],
    ) -> list[_Paged]:
        """``rows`` shaped by the supersessions of their groups; as they are, the read's
        ``succession`` leg reported missing (``failures``), when the graph cannot answer."""
        try:
            return shape(self.of_groups([r.group_id for r in rows]))
        except ProjectionError as exc:
            failures.skip_leg("succession", exc)
            return rows

    def of_groups(self, group_ids: Sequence[str]) -> Succession:
        """The current supersessions of ``group_ids``: one query for the groups not read
        since the last commit (none when every one was)."""
        # Taken before the read: a commit in between moves it, so the next read asks again.
        at = self.graph.committed_positions()
        wanted = sorted(set(group_ids))
        with self._lock:
            if at != self._at:
                self._at, self._held = at, {}
            held = {g: self._held[g] for g in wanted if g in self._held}
        stale = [g for g in wanted if g not in held]
        if stale:
            fresh = _read(self.graph, stale)
            held.update(fresh)
            with self._lock:
                if at == self._at and len(self._held) + len(fresh) <= _MAX_GROUPS:
                    self._held.update(fresh)
        return Succession([e for g in wanted for e in held.get(g, [])])


def _mark(row: EntityRow, succession: Succession) -> EntityRow:
    """``row`` with ``superseded_by`` in its served attributes when it is superseded."""
    edges = succession.of.get(row.uuid)
    if not edges:
        return row
    attrs = attributes_of(row.attributes)
    if attrs.get("superseded_by"):
        return row
    attrs["superseded_by"] = edges[0].new_name
    return msgspec.structs.replace(row, attributes=msgspec.json.encode(attrs).decode())


def entities_first(
    rows: list[EntityRow],
    succession: Succession,
    read: Callable[[list[str]], list[EntityRow]],
    limit: int,
) -> list[EntityRow]:
    """``rows`` with each superseded document after its successors (read with ``read`` when
    the page lacks them) and marked ``superseded_by``; at most ``limit`` rows."""
    if not succession or not any(r.uuid in succession.of for r in rows):
        return rows
    have = {r.uuid: r for r in rows}
    missing = [u for u in succession.chain([r.uuid for r in rows]) if u not in have]
    have.update((r.uuid, r) for r in read(missing))
    out: list[EntityRow] = []
    placed: set[str] = set()

    def place(uuid: str, depth: int) -> None:
        row = have.get(uuid)
        if row is None or uuid in placed:
            return
        placed.add(uuid)  # before its successors: a cycle closes here
        if depth < _MAX_CHAIN:
            for s in succession.successors(uuid):
                place(s, depth + 1)
        out.append(_mark(row, succession))

    for r in rows:
        place(r.uuid, 0)
    return out[:limit]


def facts_first(
    rows: list[EdgeRow],
    succession: Succession,
    read: Callable[[list[str]], list[EdgeRow]],
    limit: int,
) -> list[EdgeRow]:
    """``rows`` with each fact that touches a superseded document after the ``SUPERSEDES``
    facts naming its successors (read with ``read`` when the page lacks them); at most
    ``limit`` rows."""

    def ends(row: EdgeRow) -> list[str]:
        return [row.source_node_uuid, row.target_node_uuid]

    if not succession or not any(u in succession.of for r in rows for u in ends(r)):
        return rows
    # The supersession facts needed, along chains, without reading a row yet.
    needed: list[_Edge] = []
    seen_docs: set[str] = set()
    frontier = [u for r in rows for u in ends(r) if u in succession.of]
    for _ in range(_MAX_CHAIN):
        nxt: list[str] = []
        for doc in frontier:
            if doc in seen_docs:
                continue
            seen_docs.add(doc)
            for e in succession.of.get(doc, []):
                needed.append(e)
                nxt.append(e.new)
        if not nxt:
            break
        frontier = nxt
    have = {r.uuid: r for r in rows}
    have.update((r.uuid, r) for r in read([e.uuid for e in needed if e.uuid not in have]))
    out: list[EdgeRow] = []
    placed: set[str] = set()

    def place(uuid: str, depth: int) -> None:
        row = have.get(uuid)
        if row is None or uuid in placed:
            return
        placed.add(uuid)
        if depth < _MAX_CHAIN:
            for doc in ends(row):
                for e in succession.of.get(doc, []):
                    place(e.uuid, depth + 1)
        out.append(row)

    for r in rows:
        place(r.uuid, 0)
    return out[:limit]


def _passage_file(row: PassageRow) -> str:
    """The source a passage's episode names (``<label>/<path>`` for a file's chunk)."""
    return chunk_file(row.name, row.source_description) or row.source_description


def passages_after(rows: list[PassageRow], succession: Succession) -> list[PassageRow]:
    """``rows`` with each chunk of a superseded document's file after the last chunk of its
    successors' files in the page, marked ``superseded_by`` (the first successor's file)."""
    if not succession.files:
        return rows
    files = [_passage_file(r) for r in rows]
    if not any(f in succession.files for f in files):
        return rows
    order = list(range(len(rows)))
    # Move a superseded chunk after its successors' last chunk until none is before one;
    # each move only pushes a row later, and a cycle stops at the bound.
    for _ in range(len(rows) * _MAX_CHAIN):
        moved = False
        for pos, i in enumerate(order):
            after = set(succession.files.get(files[i], []))
            last = max((p for p, j in enumerate(order) if files[j] in after), default=-1)
            if last > pos:
                order.insert(last, order.pop(pos))
                moved = True
                break
        if not moved:
            break
    out: list[PassageRow] = []
    for i in order:
        row = rows[i]
        successors = succession.files.get(files[i])
        if successors:
            row = msgspec.structs.replace(row, superseded_by=successors[0])
        out.append(row)
    return out
