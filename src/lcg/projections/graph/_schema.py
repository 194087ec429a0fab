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
do), ``Episodic.content_hash``/``extracted``, ``WalPosition`` (the reference's name, the
applied position of each group) and ``GraphSchema`` (the version below). A database of
another version is a stale projection: it is discarded at open and rebuilt from the streams.
"""

from __future__ import annotations

from typing import Any, Final, cast

import kuzu

__all__ = ["DB_FILE", "DDL", "SCHEMA_VERSION", "create_schema", "stored_version", "table_names"]

#: The database file inside the projection's directory.
DB_FILE: Final = "graph.kuzu"

#: 1: relationships as Kuzu rels with properties, ``UnboundEdge``, ``Position`` (ADR 0014).
#: 2: the reference's schema (ADR 0086).
SCHEMA_VERSION: Final = 2

DDL: Final[tuple[str, ...]] = (
    "CREATE NODE TABLE IF NOT EXISTS Entity(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, labels STRING[], created_at TIMESTAMP, summary STRING, "
    "attributes STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Episodic(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, created_at TIMESTAMP, source STRING, source_description STRING, "
    "content STRING, valid_at TIMESTAMP, entity_edges STRING[], content_hash STRING, "
    "extracted BOOLEAN)",
    "CREATE NODE TABLE IF NOT EXISTS RelatesToNode_(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, created_at TIMESTAMP, fact STRING, episodes STRING[], "
    "expired_at TIMESTAMP, valid_at TIMESTAMP, invalid_at TIMESTAMP, attributes STRING, "
    "relation_type STRING, source_node_uuid STRING, target_node_uuid STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Community(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, created_at TIMESTAMP, summary STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Saga(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS RELATES_TO(FROM Entity TO RelatesToNode_, "
    "FROM RelatesToNode_ TO Entity, FROM Entity TO Entity, uuid STRING, name STRING, "
    "group_id STRING, fact STRING, valid_at TIMESTAMP, invalid_at TIMESTAMP, "
    "attributes STRING)",
    "CREATE REL TABLE IF NOT EXISTS MENTIONS(FROM Episodic TO Entity, uuid STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS HAS_MEMBER(FROM Community TO Entity, "
    "FROM Community TO Community, uuid STRING, group_id STRING, created_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS HAS_EPISODE(FROM Saga TO Episodic, uuid STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS NEXT_EPISODE(FROM Episodic TO Episodic, uuid STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE NODE TABLE IF NOT EXISTS WalPosition(id STRING PRIMARY KEY, applied_seq INT64, "
    "generation STRING)",
    "CREATE NODE TABLE IF NOT EXISTS GraphSchema(version INT64 PRIMARY KEY)",
)


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
