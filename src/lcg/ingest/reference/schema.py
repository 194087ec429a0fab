"""The reference's graph schema (lcg-api §5.1) as data: its tables, their columns and types.

The reference's lines are checked against it when they are parsed (a table, a column or a
relationship the reference never had is refused) and values are converted to a column's type
when a line is applied (``model``). Vector columns are declared so a line that sets one is
understood, but their values are never kept: the projections compute vectors again.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

__all__ = ["NODE_TABLES", "REL_TABLES", "ColumnType", "NodeTable", "RelTable"]


class ColumnType(Enum):
    """The column types the reference's schema uses."""

    STRING = "STRING"
    STRINGS = "STRING[]"
    TIMESTAMP = "TIMESTAMP"
    VECTOR = "FLOAT[]"
    INT = "INT64"


@dataclass(frozen=True, slots=True)
class NodeTable:
    """A node table: its primary key and its columns by name."""

    name: str
    key: str
    columns: dict[str, ColumnType]


@dataclass(frozen=True, slots=True)
class RelTable:
    """A relationship table: the (from, to) node tables it joins and its columns."""

    name: str
    ends: frozenset[tuple[str, str]]
    columns: dict[str, ColumnType]


_S, _SL, _TS, _V = ColumnType.STRING, ColumnType.STRINGS, ColumnType.TIMESTAMP, ColumnType.VECTOR


def _node(table: str, key: str, /, **columns: ColumnType) -> NodeTable:
    return NodeTable(table, key, {key: _S, **columns})


#: The reference's node tables, vectors included, none of lcg's additions.
NODE_TABLES: Final[dict[str, NodeTable]] = {
    t.name: t
    for t in (
        _node(
            "Entity", "uuid", name=_S, group_id=_S, labels=_SL, created_at=_TS,
            name_embedding=_V, summary=_S, summary_embedding=_V, attributes=_S,
        ),
        _node(
            "Episodic", "uuid", name=_S, group_id=_S, created_at=_TS, source=_S,
            source_description=_S, content=_S, content_embedding=_V, valid_at=_TS,
            entity_edges=_SL,
        ),
        _node(
            "RelatesToNode_", "uuid", name=_S, group_id=_S, created_at=_TS, fact=_S,
            fact_embedding=_V, episodes=_SL, expired_at=_TS, valid_at=_TS, invalid_at=_TS,
            attributes=_S, relation_type=_S,
        ),
        _node(
            "Community", "uuid", name=_S, group_id=_S, created_at=_TS, name_embedding=_V,
            summary=_S,
        ),
        _node("Saga", "uuid", name=_S, group_id=_S, created_at=_TS),
        _node("WalPosition", "id", applied_seq=ColumnType.INT, generation=_S),
    )
}  # fmt: skip

_STAMPED: Final = {"uuid": _S, "group_id": _S, "created_at": _TS}

#: The reference's relationship tables.
REL_TABLES: Final[dict[str, RelTable]] = {
    t.name: t
    for t in (
        RelTable(
            "RELATES_TO",
            frozenset({
                ("Entity", "RelatesToNode_"), ("RelatesToNode_", "Entity"), ("Entity", "Entity"),
            }),
            {"uuid": _S, "name": _S, "group_id": _S, "fact": _S, "valid_at": _TS,
             "invalid_at": _TS, "attributes": _S},
        ),
        RelTable("MENTIONS", frozenset({("Episodic", "Entity")}), dict(_STAMPED)),
        RelTable(
            "HAS_MEMBER",
            frozenset({("Community", "Entity"), ("Community", "Community")}),
            dict(_STAMPED),
        ),
        RelTable("HAS_EPISODE", frozenset({("Saga", "Episodic")}), dict(_STAMPED)),
        RelTable("NEXT_EPISODE", frozenset({("Episodic", "Episodic")}), dict(_STAMPED)),
    )
}  # fmt: skip
