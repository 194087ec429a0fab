"""The graph projection (Kuzu): the projection itself, the row shapes graph reads return,
and — as submodules — the client reads (``reads``) and the record reads ingest decides on
(``records``). The ``_``-prefixed modules (schema, apply, index, guard) are its insides."""

from __future__ import annotations

from lcg.projections.graph._conn import forget_prepared, query_rows
from lcg.projections.graph._schema import DB_FILE
from lcg.projections.graph.projection import GraphProjection, StaleGraphError
from lcg.projections.graph.rows import (
    EdgeRow,
    EntityRow,
    EpisodeRow,
    GraphCounts,
    GroupCounts,
    render_ts,
)

__all__ = [
    "DB_FILE",
    "EdgeRow",
    "EntityRow",
    "EpisodeRow",
    "GraphCounts",
    "GraphProjection",
    "GroupCounts",
    "StaleGraphError",
    "forget_prepared",
    "query_rows",
    "render_ts",
]
