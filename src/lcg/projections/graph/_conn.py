"""Running the graph's statements on a Kuzu connection: the per-connection prepared-statement
cache every parameterised statement goes through (ADR 0085), and the choice between a
statement's single-row and batched forms."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Final, cast

import kuzu

__all__ = [
    "PREPARED_PER_CONNECTION",
    "RELS_PER_SCAN",
    "each",
    "execute",
    "forget_prepared",
    "prepared_count",
    "query_rows",
    "run",
]

#: Up to this many rows (plus one per ``_ROWS_PER_SCAN`` rows of the table) are written or
#: read with one single-row statement each (≈ 0.5–2 ms apiece); more use one ``UNWIND``
#: statement, whose cost is a fixed ≈ 15–40 ms of planning plus a scan of the table.
_PER_ROW_BASE: Final = 16
_ROWS_PER_SCAN: Final = 4_000
#: Taking edges with one ``UNWIND`` is a hash join over a scan of ``RelatesToNode_``; one by
#: one, each is a primary-key lookup (≈ 1–2 ms with its ``DETACH DELETE``), so the per-row
#: form wins up to one row per 1,000 edges.
RELS_PER_SCAN: Final = 1_000


def _per_row(count: int, table_size: int, per_scan: int = _ROWS_PER_SCAN) -> bool:
    return count <= _PER_ROW_BASE + table_size // per_scan


def each(
    conn: kuzu.Connection,
    many: str,
    one: str,
    items: list[Any],
    table_size: int,
    *,
    keys: bool = False,
    per_scan: int = _ROWS_PER_SCAN,
) -> list[list[Any]]:
    """Run ``many`` once over ``items`` or ``one`` per item; all rows returned.

    ``keys``: ``items`` are plain keys (``$keys`` / ``$k``), else row dicts (``$rows`` / one
    parameter per field).
    """
    if not items:
        return []
    if not _per_row(len(items), table_size, per_scan):
        return query_rows(conn, many, {"keys" if keys else "rows": items})
    out: list[list[Any]] = []
    for item in items:
        out.extend(query_rows(conn, one, {"k": item} if keys else item))
    return out


#: Prepared statements per connection: planning costs ≈ 1 ms for a single-row statement and
#: tens of ms for an ``UNWIND`` join (more under load); a cached plan is re-executed with new
#: parameters (their types may differ between calls; Kuzu binds them per execution). The
#: cache is also what keeps memory flat: Kuzu 0.11.3 never frees a prepared statement
#: (``execute(text, params)`` prepares one per call and leaks ≈ 8.8 KB, a dropped
#: ``PreparedStatement`` ≈ 6 KB; see ADR 0085), so every parameterised statement of the
#: projection, reads included, goes through here. Our statement texts are a fixed set; the
#: bound only stops a caller that builds texts from data from growing the cache forever.
_PREPARED: weakref.WeakKeyDictionary[kuzu.Connection, dict[str, kuzu.PreparedStatement]] = (
    weakref.WeakKeyDictionary()
)
_PREPARED_LOCK = threading.Lock()
#: Statements kept per connection (oldest evicted first).
PREPARED_PER_CONNECTION: Final = 512


def execute(conn: kuzu.Connection, query: str, params: dict[str, Any]) -> kuzu.QueryResult:
    """Run ``query`` with ``params`` on ``conn`` through a prepared statement cached per conn.

    A connection is used by one thread at a time; the lock only guards the map of caches.
    """
    with _PREPARED_LOCK:
        cache = _PREPARED.get(conn)
        if cache is None:
            cache = _PREPARED[conn] = {}
    statement = cache.get(query)
    if statement is None:
        statement = kuzu.PreparedStatement(conn, query)
        if not statement.is_success():
            raise RuntimeError(statement.get_error_message())
        if len(cache) >= PREPARED_PER_CONNECTION:
            del cache[next(iter(cache))]
        cache[query] = statement
    result = conn.execute(statement, params)
    assert isinstance(result, kuzu.QueryResult)
    return result


def prepared_count(conn: kuzu.Connection) -> int:
    """How many statements ``conn`` has cached (for tests and diagnostics)."""
    with _PREPARED_LOCK:
        return len(_PREPARED.get(conn, {}))


def forget_prepared(conn: kuzu.Connection) -> None:
    """Drop ``conn``'s cached statements (before it is closed or abandoned).

    Needed because each ``PreparedStatement`` holds its connection, so the weak key alone
    would never let the entry go.
    """
    with _PREPARED_LOCK:
        _PREPARED.pop(conn, None)


def query_rows(conn: kuzu.Connection, query: str, params: dict[str, Any]) -> list[list[Any]]:
    """Every row of ``query``."""
    return cast(list[list[Any]], execute(conn, query, params).get_all())


def run(conn: kuzu.Connection, query: str, params: dict[str, Any]) -> None:
    """Run ``query`` for its effect."""
    execute(conn, query, params)
