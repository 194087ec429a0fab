"""A group's sources in the graph: the ``Source`` rows that ``SourceRegistered`` and
``SourceRemoved`` write (ADR 0200).

A row is keyed by its group and its root (a uuid5 of both, computed here from the event's
own group), so a group's events reach only that group's rows (ADR 0196) and two groups may
hold the same folder. Within a segment only the last event for a root counts; the rows are
written after the segment's other rows, by deleting the roots' rows and creating the
registered ones again — a handful of rows, in the live and the bulk path alike.
"""

from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any, Final

import kuzu

from lcg.events import SourceRegistered, SourceRemoved
from lcg.projections.graph._conn import run as _run
from lcg.projections.graph._schema import props, select
from lcg.projections.graph._states import norm_ts

__all__ = ["SOURCE_COLUMNS", "SourceRows", "source_uuid"]

#: Namespace of the ``Source`` row keys (uuid5 of the JSON ``[group, root]``).
_SOURCE_NS: Final = uuidlib.UUID("0f5d8f7e-3c1a-4e52-9a57-2d0b6c1e7a30")

#: The columns a read of a group's sources returns, in this order.
SOURCE_COLUMNS: Final = select("s", "Source", ("root", "label", "kind", "synced_at"))

_DELETE: Final = "MATCH (s:Source) WHERE s.group_id = $g AND s.root IN $roots DELETE s"
_CREATE: Final = f"UNWIND $rows AS r CREATE (:Source {props('Source', 'r.')})"


def source_uuid(group_id: str, root: str) -> str:
    """The key of the ``Source`` row of ``root`` in ``group_id``."""
    return str(uuidlib.uuid5(_SOURCE_NS, json.dumps([group_id, root])))


class SourceRows:
    """The source rows a segment's events leave: root → row (``None``: removed)."""

    __slots__ = ("rows",)

    def __init__(self) -> None:
        """No source event yet."""
        self.rows: dict[str, dict[str, Any] | None] = {}

    def remove(self, event: SourceRemoved) -> None:
        """The root is no source of the group any more."""
        self.rows[event.root] = None

    def register(self, event: SourceRegistered) -> None:
        """The root is a source of the group, as the event says (the latest one holds)."""
        self.rows[event.root] = {
            "uuid": source_uuid(event.group_id, event.root),
            "group_id": event.group_id,
            "root": event.root,
            "label": event.label,
            "kind": event.kind,
            "synced_at": norm_ts(event.synced_at),
        }

    def write(self, conn: kuzu.Connection, group_id: str) -> None:
        """Replace the rows of every root the events named (inside the caller's transaction)."""
        if not self.rows:
            return
        _run(conn, _DELETE, {"g": group_id, "roots": sorted(self.rows)})
        created = [row for _, row in sorted(self.rows.items()) if row is not None]
        if created:
            _run(conn, _CREATE, {"rows": created})
        self.rows = {}
