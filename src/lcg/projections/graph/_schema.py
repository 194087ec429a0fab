"""The Kuzu schema of the graph projection: the reference's tables, and the database file.

The tables, names and columns are the reference's (lcg-api §5.1), so a client's Cypher runs
unchanged: ``Entity``, ``Episodic``, the reified edge ``RelatesToNode_`` reached from its
source and to its target by two property-less ``RELATES_TO`` hops
(``(src:Entity)-[:RELATES_TO]->(rn:RelatesToNode_)-[:RELATES_TO]->(dst:Entity)``),
``MENTIONS`` (Episodic→Entity) and the empty stubs ``Community``, ``Saga``, ``HAS_MEMBER``,
``HAS_EPISODE``, ``NEXT_EPISODE``. ``RELATES_TO`` is declared with the reference's direct
Entity→Entity pair and its columns so queries naming them bind; nothing writes that pair
(ADR 0086). No vector columns: vectors live in the vector projection.

Our additions beside them: ``RelatesToNode_.source_node_uuid``/``target_node_uuid`` (an edge
keeps its endpoints while one of them is absent: an unbound cross-group pointer or a foreign
endpoint purged away; such an edge has no hops, so reads do not see it, but counts and digests
do), ``Episodic.content_hash``/``extracted``, ``Entity.name_key`` (the name's lookup key,
computed in Python when the row is written: ``lcg.events.keys``, ADR 0151), ``WalPosition``
(the reference's name, the applied position of each group), ``Source`` (a group's source
trees and files: root, label, kind, last sync; ADR 0200) and ``GraphSchema`` (the version
below). A database of
another version is a stale projection: it is discarded at open and rebuilt from the streams.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple, cast

import kuzu
import pyarrow as pa

__all__ = [
    "DB_FILE",
    "DDL",
    "SCHEMA_VERSION",
    "TABLE",
    "TABLES",
    "Table",
    "arrow_fields",
    "assignments",
    "create_schema",
    "props",
    "select",
    "stored_version",
    "table_names",
]

#: The database file inside the projection's directory.
DB_FILE: Final = "graph.kuzu"

#: 1: relationships as Kuzu rels with properties, ``UnboundEdge``, ``Position`` (ADR 0014).
#: 2: the reference's schema (ADR 0086).
#: 3: ``Entity.name_key``, names are found by a key folded in Python (ADR 0151).
#: 4: ``Source``, a group's source trees by their root (ADR 0200).
SCHEMA_VERSION: Final = 4

_S, _TS, _SL, _B, _I = "STRING", "TIMESTAMP", "STRING[]", "BOOLEAN", "INT64"


class Table(NamedTuple):
    """One table of the schema: its columns in order (a node table's first is its primary
    key) and, for a rel table, the node-table pairs it connects."""

    name: str
    columns: tuple[tuple[str, str], ...]
    pairs: tuple[tuple[str, str], ...] = ()

    def column_names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(c for c, _ in self.columns)


#: The one spec of every table: the DDL, the Arrow schemas of bulk loads and the ``RETURN``
#: lists of reads are all generated from it, so a column is written once.
TABLES: Final[tuple[Table, ...]] = (
    Table("Entity", (
        ("uuid", _S), ("name", _S), ("group_id", _S), ("labels", _SL), ("created_at", _TS),
        ("summary", _S), ("attributes", _S), ("name_key", _S),
    )),
    Table("Episodic", (
        ("uuid", _S), ("name", _S), ("group_id", _S), ("created_at", _TS), ("source", _S),
        ("source_description", _S), ("content", _S), ("valid_at", _TS), ("entity_edges", _SL),
        ("content_hash", _S), ("extracted", _B),
    )),
    Table("RelatesToNode_", (
        ("uuid", _S), ("name", _S), ("group_id", _S), ("created_at", _TS), ("fact", _S),
        ("episodes", _SL), ("expired_at", _TS), ("valid_at", _TS), ("invalid_at", _TS),
        ("attributes", _S), ("relation_type", _S), ("source_node_uuid", _S),
        ("target_node_uuid", _S),
    )),
    Table("Community", (
        ("uuid", _S), ("name", _S), ("group_id", _S), ("created_at", _TS), ("summary", _S),
    )),
    Table("Saga", (("uuid", _S), ("name", _S), ("group_id", _S), ("created_at", _TS))),
    Table("RELATES_TO", (
        ("uuid", _S), ("name", _S), ("group_id", _S), ("fact", _S), ("valid_at", _TS),
        ("invalid_at", _TS), ("attributes", _S),
    ), pairs=(
        ("Entity", "RelatesToNode_"), ("RelatesToNode_", "Entity"), ("Entity", "Entity"),
    )),
    Table("MENTIONS", (("uuid", _S), ("group_id", _S), ("created_at", _TS)),
          pairs=(("Episodic", "Entity"),)),
    Table("HAS_MEMBER", (("uuid", _S), ("group_id", _S), ("created_at", _TS)),
          pairs=(("Community", "Entity"), ("Community", "Community"))),
    Table("HAS_EPISODE", (("uuid", _S), ("group_id", _S), ("created_at", _TS)),
          pairs=(("Saga", "Episodic"),)),
    Table("NEXT_EPISODE", (("uuid", _S), ("group_id", _S), ("created_at", _TS)),
          pairs=(("Episodic", "Episodic"),)),
    Table("WalPosition", (("id", _S), ("applied_seq", _I), ("generation", _S))),
    Table("Source", (
        ("uuid", _S), ("group_id", _S), ("root", _S), ("label", _S), ("kind", _S),
        ("synced_at", _TS),
    )),
    Table("GraphSchema", (("version", _I),)),
)  # fmt: skip
TABLE: Final[dict[str, Table]] = {t.name: t for t in TABLES}


def _ddl(table: Table) -> str:
    columns = [f"{name} {typ}" for name, typ in table.columns]
    if not table.pairs:
        columns[0] += " PRIMARY KEY"
        return f"CREATE NODE TABLE IF NOT EXISTS {table.name}({', '.join(columns)})"
    pairs = [f"FROM {a} TO {b}" for a, b in table.pairs]
    return f"CREATE REL TABLE IF NOT EXISTS {table.name}({', '.join(pairs + columns)})"


DDL: Final[tuple[str, ...]] = tuple(_ddl(t) for t in TABLES)


def select(alias: str, table: str, names: tuple[str, ...] | None = None) -> str:
    """A ``RETURN`` list ``alias.col, …`` of ``table``'s columns (``names``, in that order;
    every column in table order by default). A name the table lacks raises ``KeyError`` at
    import, where the list is built, not at the first query."""
    known = TABLE[table].column_names()
    chosen = known if names is None else names
    for name in chosen:
        if name not in known:
            raise KeyError(f"{table} has no column {name!r}")
    return ", ".join(f"{alias}.{name}" for name in chosen)


def _value(source: str, key: str, typ: str) -> str:
    # Parameters arrive as strings and lists; the typed columns are cast in the statement.
    return f"CAST({source}{key} AS {typ})" if typ in (_TS, _SL) else f"{source}{key}"


def props(table: str, source: str, keys: dict[str, str] | None = None) -> str:
    """A ``{col: value, …}`` property map of every column of ``table``, each value read from
    ``source`` (``"r."`` for an ``UNWIND`` row, ``"$"`` for a parameter) under its key
    (``keys`` renames)."""
    keys = keys or {}
    pairs = [f"{c}: {_value(source, keys.get(c, c), t)}" for c, t in TABLE[table].columns]
    return "{" + ", ".join(pairs) + "}"


def assignments(table: str, alias: str, source: str) -> str:
    """``alias.col = value, …`` for every column of ``table`` but its primary key."""
    return ", ".join(f"{alias}.{c} = {_value(source, c, t)}" for c, t in TABLE[table].columns[1:])


_ARROW_TYPES: Final[dict[str, pa.DataType]] = {
    _S: pa.string(),
    _TS: pa.timestamp("us"),  # Kuzu's TIMESTAMP: naive UTC, microseconds
    _SL: pa.list_(pa.string()),
    _B: pa.bool_(),
    _I: pa.int64(),
}


def arrow_fields(table: str, keys: dict[str, str] | None = None) -> tuple[tuple[str, Any], ...]:
    """The Arrow ``(key, type)`` columns of a ``COPY`` into ``table``, in table order; ``keys``
    renames a column to the key its rows carry it under."""
    keys = keys or {}
    return tuple((keys.get(name, name), _ARROW_TYPES[typ]) for name, typ in TABLE[table].columns)


def table_names(conn: kuzu.Connection) -> set[str]:
    """The names of every table of the database."""
    result = conn.execute("CALL show_tables() RETURN name")
    assert isinstance(result, kuzu.QueryResult)
    return {str(row[0]) for row in cast(list[list[Any]], result.get_all())}


def stored_version(conn: kuzu.Connection) -> int | None:
    """The schema version of a database with tables; ``None`` for an empty database.

    A database with tables but no ``GraphSchema`` row is version 1 (before the table existed).
    """
    tables = table_names(conn)
    if not tables:
        return None
    if "GraphSchema" not in tables:
        return 1
    result = conn.execute("MATCH (s:GraphSchema) RETURN max(s.version)")
    assert isinstance(result, kuzu.QueryResult)
    rows = cast(list[list[Any]], result.get_all())
    return int(rows[0][0]) if rows and rows[0][0] is not None else 1


def create_schema(conn: kuzu.Connection) -> None:
    """Create every table that does not exist yet and record the version (idempotent)."""
    for statement in DDL:
        conn.execute(statement)
    conn.execute(f"MERGE (:GraphSchema {{version: {SCHEMA_VERSION}}})")
