"""What a reader outside the projection needs of the graph's schema: the column lists a
``RETURN`` selects and the decoders of the rows they select (the query side's graph reads
build their Cypher from these, so a column is named in the schema alone)."""

from __future__ import annotations

from lcg.projections.graph._schema import TABLE, select
from lcg.projections.graph._statements import EDGE_COLUMNS
from lcg.projections.graph._states import edge_from_row, entity_from_row

__all__ = ["EDGE_COLUMNS", "TABLE", "edge_from_row", "entity_from_row", "select"]
