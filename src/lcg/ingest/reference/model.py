"""The reference's tables in memory, changed by parsed statements (no database engine).

``ReferenceGraph`` holds the rows a reference workspace's lines lead to: node rows by table
and key, relationships by id with an index by endpoint. ``apply`` runs one parsed statement
(``statements``) with its line's parameters as the reference's engine would: ``MATCH`` binds
rows by key, ``CREATE`` refuses a key already there, ``MERGE`` creates or matches (then its
``ON CREATE``/``ON MATCH`` sets), ``SET`` converts each value to its column's type
(lcg-api §2.3: times from RFC 3339 or ``YYYY-MM-DD HH:MM:SS`` as UTC, objects as JSON text),
``DELETE`` refuses a node that still has relationships unless ``DETACH``. A statement is
all or nothing: a failure undoes what it changed. Vector values are counted, never kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from lcg import timestamps
from lcg.ingest.reference.schema import NODE_TABLES, REL_TABLES, ColumnType
from lcg.ingest.reference.statements import (
    Const,
    Create,
    Delete,
    Expr,
    ListOf,
    Match,
    Merge,
    NodePattern,
    Param,
    RelPattern,
    SetClause,
    SetItem,
    Statement,
    Timestamp,
    Vector,
    Write,
)

__all__ = ["Applied", "ApplyError", "NodeKey", "ReferenceGraph", "Rel"]

#: A node: (table, key).
NodeKey = tuple[str, str]
_Row = dict[str, Any]
_Binding = dict[str, NodeKey | int]
_K = TypeVar("_K")


class ApplyError(ValueError):
    """A statement the reference's engine would refuse with these values; ``reason`` is
    ``failed`` or ``bad_time`` (a value for a time column that is no time)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(slots=True)
class Rel:
    """One relationship: its table, its two nodes and its columns."""

    rel: str
    src: NodeKey
    dst: NodeKey
    props: _Row


@dataclass(slots=True)
class Applied:
    """What one statement did: rows its ``MATCH`` bound (``None`` without one), vectors."""

    matched: int | None
    vectors: int = 0


def _time(column: str, value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str) and value.strip():
        try:
            return timestamps.parse(value.strip()).replace(tzinfo=None)
        except ValueError:
            pass
    raise ApplyError("bad_time", f"{column} is {value!r}, not a time")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


@dataclass
class _Run:
    """One statement being applied: its parameters, vectors seen, and the undo log."""

    params: dict[str, Any]
    vectors: int = 0
    undo: list[Callable[[], object]] = field(default_factory=list)

    def value(self, expr: Expr) -> Any:
        if isinstance(expr, Param):
            if expr.name not in self.params:
                raise ApplyError("failed", f"no parameter ${expr.name} on the line")
            return self.params[expr.name]
        if isinstance(expr, Const):
            return expr.value
        if isinstance(expr, ListOf):
            return [self.value(e) for e in expr.items]
        if isinstance(expr, Vector):
            return self.value(expr.arg)
        if isinstance(expr, Timestamp):
            return _time("timestamp(…)", self.value(expr.arg))
        test = self.value(expr.test) is None
        return self.value(expr.then if test != expr.negated else expr.otherwise)

    def convert(self, owner: str, column: str, ctype: ColumnType, value: Any) -> Any:
        """``value`` as column ``column`` of ``owner`` holds it; vectors become ``None``."""
        if value is None:
            return None
        if ctype is ColumnType.TIMESTAMP:
            return _time(column, value)
        if ctype is ColumnType.STRING:
            if isinstance(value, str):
                return value
            if isinstance(value, dict):
                return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        elif ctype is ColumnType.STRINGS:
            if isinstance(value, list) and all(isinstance(v, str | dict) for v in value):
                return [
                    v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in value
                ]
        elif ctype is ColumnType.VECTOR:
            if isinstance(value, list) and all(_is_number(v) for v in value):
                self.vectors += bool(value)
                return None  # computed again from the text by the projections
        elif ctype is ColumnType.INT and isinstance(value, int) and not isinstance(value, bool):
            return value
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ApplyError("failed", f"{owner}.{column} ({ctype.value}) cannot hold {shown}")


def _discard(index: dict[_K, set[int]], key: _K, rid: int) -> None:
    ids = index.get(key)
    if ids is not None:
        ids.discard(rid)
        if not ids:
            del index[key]


class ReferenceGraph:
    """The reference's rows, as its lines leave them."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, _Row]] = {t: {} for t in NODE_TABLES}
        self.rels: dict[int, Rel] = {}
        self._touching: dict[NodeKey, set[int]] = {}
        #: (table, from, to) -> the relationships between the two (``MERGE`` looks here).
        self._between: dict[tuple[str, NodeKey, NodeKey], set[int]] = {}
        self._next_rel = 0

    # ---- reads (``rows``) -------------------------------------------------------------

    def rels_of(self, key: NodeKey) -> Iterator[Rel]:
        """The relationships from or to the node ``key``."""
        for rid in sorted(self._touching.get(key, ())):
            yield self.rels[rid]

    def all_rels(self, rel: str) -> Iterator[Rel]:
        """Every relationship of table ``rel``, in creation order."""
        return (r for r in self.rels.values() if r.rel == rel)

    # ---- changes, each with its undo ---------------------------------------------------

    def _add_node(self, run: _Run, table: str, key: str, row: _Row) -> None:
        rows = self.nodes[table]
        rows[key] = row
        run.undo.append(lambda: rows.pop(key, None))

    def _set(self, run: _Run, row: _Row, column: str, value: Any) -> None:
        had, old = column in row, row.get(column)
        row[column] = value
        run.undo.append(lambda: row.__setitem__(column, old) if had else row.pop(column, None))

    def _add_rel(self, run: _Run, rel: str, src: NodeKey, dst: NodeKey, props: _Row) -> int:
        rid = self._next_rel
        self._next_rel += 1
        self._link(rid, Rel(rel, src, dst, props))
        run.undo.append(lambda: self._unlink(rid))
        return rid

    def _link(self, rid: int, r: Rel) -> None:
        self.rels[rid] = r
        self._touching.setdefault(r.src, set()).add(rid)
        self._touching.setdefault(r.dst, set()).add(rid)
        self._between.setdefault((r.rel, r.src, r.dst), set()).add(rid)

    def _unlink(self, rid: int) -> Rel:
        r = self.rels.pop(rid)
        _discard(self._touching, r.src, rid)
        _discard(self._touching, r.dst, rid)
        _discard(self._between, (r.rel, r.src, r.dst), rid)
        return r

    def _delete_rel(self, run: _Run, rid: int) -> None:
        r = self._unlink(rid)
        run.undo.append(lambda: self._link(rid, r))

    def _delete_node(self, run: _Run, key: NodeKey, detach: bool) -> None:
        table, pk = key
        if pk not in self.nodes[table]:
            return  # deleted by an earlier row of the same statement
        touching = sorted(self._touching.get(key, ()))
        if touching and not detach:
            raise ApplyError("failed", f"{table} {pk} still has relationships (no DETACH)")
        for rid in touching:
            self._delete_rel(run, rid)
        row = self.nodes[table].pop(pk)
        run.undo.append(lambda: self.nodes[table].__setitem__(pk, row))

    # ---- applying a statement ----------------------------------------------------------

    def apply(self, stmt: Statement, params: dict[str, Any]) -> Applied:
        """Apply ``stmt`` with ``params``; ``ApplyError`` (nothing changed) if refused."""
        run = _Run(params)
        try:
            rows = self._match(run, stmt.matches)
            for write in stmt.writes:
                for binding in rows:
                    self._write(run, write, binding)
        except ApplyError:
            for undo in reversed(run.undo):
                undo()
            raise
        return Applied(len(rows) if stmt.matches else None, run.vectors)

    def _candidates(self, run: _Run, m: Match) -> list[str]:
        spec = NODE_TABLES[m.node.table]
        rows = self.nodes[m.node.table]
        conditions = [(c, False, e) for c, e in m.node.props]
        conditions += [(p.column, p.within, p.value) for p in m.where]
        keys: list[str] | None = None
        rest = []
        for column, within, expr in conditions:
            value = run.value(expr)
            if column == spec.key and keys is None:
                wanted = value if within else [value]
                if not isinstance(wanted, list):
                    raise ApplyError("failed", f"{m.node.table}.{column} IN needs a list")
                keys = [k for k in dict.fromkeys(w for w in wanted if isinstance(w, str))]
                keys = [k for k in keys if k in rows]
            else:
                rest.append((column, within, value))
        found = list(rows) if keys is None else keys
        for column, within, value in rest:
            wanted = value if within else [value]
            if not isinstance(wanted, list):
                raise ApplyError("failed", f"{m.node.table}.{column} IN needs a list")
            coerced = [run.convert(m.node.table, column, spec.columns[column], w) for w in wanted]
            found = [k for k in found if rows[k].get(column) in coerced]
        return found

    def _match(self, run: _Run, matches: tuple[Match, ...]) -> list[_Binding]:
        rows: list[_Binding] = [{}]
        for m in matches:
            found = self._candidates(run, m)
            var = m.node.var
            rows = [
                {**b, var: (m.node.table, k)} if var is not None else b for b in rows for k in found
            ]
            if not rows:
                return []
        return rows

    def _props(self, run: _Run, owner: str, columns: dict[str, ColumnType],
               props: tuple[tuple[str, Expr], ...]) -> _Row:  # fmt: skip
        return {c: run.convert(owner, c, columns[c], run.value(e)) for c, e in props}

    def _node_of(self, binding: _Binding, var: str) -> NodeKey:
        key = binding[var]
        if isinstance(key, int) or key[1] not in self.nodes[key[0]]:
            raise ApplyError("failed", f"({var}) was deleted earlier in the statement")
        return key

    def _create_node(self, run: _Run, node: NodePattern, binding: _Binding) -> None:
        spec = NODE_TABLES[node.table]
        row = self._props(run, node.table, spec.columns, node.props)
        key = row.get(spec.key)
        if not isinstance(key, str):
            raise ApplyError("failed", f"CREATE ({node.table}) without its key {spec.key!r}")
        if key in self.nodes[node.table]:
            raise ApplyError("failed", f"duplicate primary key {key!r} in {node.table}")
        self._add_node(run, node.table, key, row)
        if node.var is not None:
            binding[node.var] = (node.table, key)

    def _create_rel(self, run: _Run, rel: RelPattern, binding: _Binding) -> int:
        props = self._props(run, rel.rel, REL_TABLES[rel.rel].columns, rel.props)
        rid = self._add_rel(run, rel.rel, self._node_of(binding, rel.src),
                            self._node_of(binding, rel.dst), props)  # fmt: skip
        if rel.var is not None:
            binding[rel.var] = rid
        return rid

    def _merge(self, run: _Run, merge: Merge, binding: _Binding) -> None:
        item = merge.item
        created = False
        if isinstance(item, NodePattern):
            spec = NODE_TABLES[item.table]
            [(_, expr)] = item.props
            key = run.value(expr)
            if not isinstance(key, str):
                raise ApplyError("failed", f"MERGE ({item.table}) with a key that is {key!r}")
            if key not in self.nodes[item.table]:
                self._add_node(run, item.table, key, {spec.key: key})
                created = True
            if item.var is not None:
                binding[item.var] = (item.table, key)
        else:
            props = self._props(run, item.rel, REL_TABLES[item.rel].columns, item.props)
            src, dst = self._node_of(binding, item.src), self._node_of(binding, item.dst)
            found = [
                rid
                for rid in sorted(self._between.get((item.rel, src, dst), ()))
                if all(self.rels[rid].props.get(c) == v for c, v in props.items())
            ]
            if found:
                rid = found[0]
            else:
                rid = self._add_rel(run, item.rel, src, dst, props)
                created = True
            if item.var is not None:
                binding[item.var] = rid
        self._sets(run, merge.on_create if created else merge.on_match, binding)

    def _target(self, binding: _Binding, stmt_var: str) -> tuple[str, dict[str, ColumnType], _Row]:
        key = binding[stmt_var]
        if isinstance(key, int):
            if key not in self.rels:
                raise ApplyError("failed", f"[{stmt_var}] was deleted earlier in the statement")
            r = self.rels[key]
            return r.rel, REL_TABLES[r.rel].columns, r.props
        table, pk = self._node_of(binding, stmt_var)
        return table, NODE_TABLES[table].columns, self.nodes[table][pk]

    def _sets(self, run: _Run, items: tuple[SetItem, ...], binding: _Binding) -> None:
        for item in items:
            owner, columns, row = self._target(binding, item.var)
            value = run.value(item.value)
            if item.column is not None:
                self._set(
                    run,
                    row,
                    item.column,
                    run.convert(owner, item.column, columns[item.column], value),
                )
                continue
            # ``SET n = $props``: each key of the map, as §5.4's replay flattens it.
            if not isinstance(value, dict):
                raise ApplyError("failed", f"SET {item.var} = … needs a map, not {value!r:.60}")
            key = NODE_TABLES[owner].key
            for column, v in value.items():
                if column not in columns or column == key:
                    raise ApplyError("failed", f"{owner} has no settable column {column!r}")
                self._set(run, row, column, run.convert(owner, column, columns[column], v))

    def _write(self, run: _Run, write: Write, binding: _Binding) -> None:
        if isinstance(write, Create):
            for item in write.items:
                if isinstance(item, NodePattern):
                    self._create_node(run, item, binding)
                else:
                    self._create_rel(run, item, binding)
        elif isinstance(write, Merge):
            self._merge(run, write, binding)
        elif isinstance(write, SetClause):
            self._sets(run, write.items, binding)
        elif isinstance(write, Delete):
            for var in write.vars:
                key = binding[var]
                if isinstance(key, int):
                    if key in self.rels:
                        self._delete_rel(run, key)
                else:
                    self._delete_node(run, key, write.detach)
