"""Inserting new rows: batched ``UNWIND … CREATE``, or ``COPY`` from Arrow tables for the
bulk load of a rebuild (``fold_events``); Arrow columns come from the table spec."""

from __future__ import annotations

# kuzu's Arrow scan calls importlib.util without importing it (kuzu 0.11.3).
import importlib.util  # noqa: F401
from datetime import datetime
from typing import Any, Final

import kuzu
import pyarrow as pa

from lcg import timestamps
from lcg.projections.graph._conn import each as _each
from lcg.projections.graph._conn import run as _run
from lcg.projections.graph._schema import arrow_fields
from lcg.projections.graph._statements import (
    CREATE_ENTITIES,
    CREATE_EPISODES,
    CREATE_MENTION_ONE,
    CREATE_MENTIONS,
    CREATE_REL_ONE,
    CREATE_RELS,
    EDGE_KEYS,
)

__all__ = ["copy_edges", "create"]

_TS: Final = pa.timestamp("us")
#: The Arrow columns of each table in DDL order (a relationship's endpoints first), named by
#: the keys of the rows written (an edge's endpoints by ``EDGE_KEYS``; a mention's rows
#: carry theirs as ``ep`` and ``en``).
_ARROW: Final[dict[str, tuple[tuple[str, Any], ...]]] = {
    "Entity": arrow_fields("Entity"),
    "Episodic": arrow_fields("Episodic"),
    "RelatesToNode_": arrow_fields("RelatesToNode_", EDGE_KEYS),
    "MENTIONS": (("ep", pa.string()), ("en", pa.string()), *arrow_fields("MENTIONS")),
}
_UNWIND_CREATE: Final = {
    "Entity": CREATE_ENTITIES,
    "Episodic": CREATE_EPISODES,
    "RelatesToNode_": CREATE_RELS,
    "MENTIONS": CREATE_MENTIONS,
}
#: Creating a bound edge or a mention matches its two endpoints: per row by primary key when
#: few.
_ONE_CREATE: Final = {"RelatesToNode_": CREATE_REL_ONE, "MENTIONS": CREATE_MENTION_ONE}
#: The columns of ``RELATES_TO`` after its endpoints, all null on a hop (the reference's
#: direct-rel columns; lcg-api §5.1).
_HOP_NULLS: Final = arrow_fields("RELATES_TO")


def _dt(value: str | None) -> datetime | None:
    # Kuzu's TIMESTAMP is naive UTC.
    return None if value is None else timestamps.parse(value).replace(tzinfo=None)


def create(
    conn: kuzu.Connection, table: str, rows: list[dict[str, Any]], bulk: bool, size: int
) -> None:
    """Insert new rows: ``UNWIND … CREATE``, or ``COPY`` from an Arrow table when ``bulk``.

    ``COPY`` has a large fixed cost per statement but loads many rows fast; it pays off when
    a whole stream is folded into one write (``fold_events``). A few bound edges and mentions
    are created one statement each (endpoints matched by primary key, no scan; ``size`` is the
    number of rows the ``UNWIND`` form would scan).
    """
    if not bulk:
        one = _ONE_CREATE.get(table)
        if one is None:
            _run(conn, _UNWIND_CREATE[table], {"rows": rows})
        else:
            _each(conn, _UNWIND_CREATE[table], one, rows, size)
        return
    _copy(conn, table, _arrow(table, rows))


def _arrow(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    columns = {}
    for name, typ in _ARROW[table]:
        values = [r[name] for r in rows]
        if typ == _TS:
            values = [_dt(v) for v in values]
        columns[name] = pa.array(values, type=typ)
    return pa.table(columns)


def _copy(
    conn: kuzu.Connection, target: str, data: pa.Table, pair: tuple[str, str] | None = None
) -> None:
    """``COPY`` an Arrow table into ``target`` (``pair``: the FROM/TO tables of a rel group)."""
    options = "" if pair is None else f" (from='{pair[0]}', to='{pair[1]}')"
    # Not cached: Kuzu binds an Arrow parameter when it prepares the statement.
    conn.execute(f"COPY {target} FROM $arrow{options}", {"arrow": data})


def _hops(ends: tuple[list[str], list[str]]) -> pa.Table:
    """The Arrow table of ``RELATES_TO`` hops from ``ends[0][i]`` to ``ends[1][i]``."""
    n = len(ends[0])
    columns = {"from": pa.array(ends[0], pa.string()), "to": pa.array(ends[1], pa.string())}
    for name, typ in _HOP_NULLS:
        columns[name] = pa.nulls(n, typ)
    return pa.table(columns)


def copy_edges(
    conn: kuzu.Connection, bound: list[dict[str, Any]], unbound: list[dict[str, Any]]
) -> None:
    """``COPY`` new edges: every ``RelatesToNode_``, then the two hops of the bound ones."""
    _copy(conn, "RelatesToNode_", _arrow("RelatesToNode_", [*bound, *unbound]))
    if not bound:
        return
    uuids = [r["uuid"] for r in bound]
    sources = [r["source_uuid"] for r in bound]
    targets = [r["target_uuid"] for r in bound]
    _copy(conn, "RELATES_TO", _hops((sources, uuids)), ("Entity", "RelatesToNode_"))
    _copy(conn, "RELATES_TO", _hops((uuids, targets)), ("RelatesToNode_", "Entity"))
