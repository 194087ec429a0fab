"""The Kuzu schema of the graph projection: table DDL and the database file name.

Relationships carry their properties (no reified ``RelatesToNode_``). Edges whose endpoints
are not both present as ``Entity`` rows (an unbound cross-group pointer, or a foreign
endpoint purged away) cannot be a Kuzu relationship; they live in ``UnboundEdge`` with the
full msgspec-encoded ``EdgeRecord`` so that reads do not see them but counts and digests do.
"""

from __future__ import annotations

from typing import Final

import kuzu

__all__ = ["DB_FILE", "DDL", "create_schema"]

#: The database file inside the projection's directory.
DB_FILE: Final = "graph.kuzu"

DDL: Final[tuple[str, ...]] = (
    "CREATE NODE TABLE IF NOT EXISTS Entity(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, labels STRING[], created_at TIMESTAMP, summary STRING, "
    "attributes STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Episodic(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, created_at TIMESTAMP, source STRING, source_description STRING, "
    "content STRING, valid_at TIMESTAMP, entity_edges STRING[], content_hash STRING, "
    "extracted BOOLEAN)",
    "CREATE REL TABLE IF NOT EXISTS RELATES_TO(FROM Entity TO Entity, uuid STRING, "
    "name STRING, relation_type STRING, fact STRING, valid_at TIMESTAMP, "
    "invalid_at TIMESTAMP, expired_at TIMESTAMP, episodes STRING[], attributes STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS MENTIONS(FROM Episodic TO Entity, uuid STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE NODE TABLE IF NOT EXISTS UnboundEdge(uuid STRING PRIMARY KEY, group_id STRING, "
    "source_uuid STRING, target_uuid STRING, data STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Position(group_id STRING PRIMARY KEY, "
    "applied_seq INT64, generation STRING)",
)


def create_schema(conn: kuzu.Connection) -> None:
    """Create every table that does not exist yet (idempotent)."""
    for statement in DDL:
        conn.execute(statement)
