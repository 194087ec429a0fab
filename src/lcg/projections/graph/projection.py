"""The graph projection: entities, episodes and relationships in one Kuzu database.

``apply`` writes one batch of one group's events and that group's applied position in a
single transaction, so the position always describes exactly the data (after a crash the
database reopens at the last committed batch). There is one writer connection, guarded by a
lock: Kuzu refuses a second write transaction outright, and a connection whose ``BEGIN``
failed must never be used again (the next query on it crashes the process), so such a
connection is replaced. Reads use their own connections from a small pool and may run
concurrently with each other and with a write (Kuzu gives them a snapshot).

``load_group`` is the rebuild path: it folds a whole stream into a group that holds no rows
and writes it once with ``COPY`` (same result as ``apply``, several times faster).

The database file is ``<db_dir>/graph.kuzu``; see ``_schema`` for the tables and
``_apply`` for how events become statements, ``_index`` for the in-memory
locator (which rows exist, which edges are bound) that spares them table scans. The tables
are the reference's (``RelatesToNode_`` reached by two ``RELATES_TO`` hops; ADR 0086), so a
client's Cypher written for the reference runs unchanged.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import kuzu
import msgspec

from lcg.errors import ProjectionError, ProjectionIOError, RebuildRefusedError
from lcg.events import Event, Position, remove_tree
from lcg.projections.base import Batch, Capabilities
from lcg.projections.graph._apply import apply_events, fold_events
from lcg.projections.graph._conn import execute, forget_prepared
from lcg.projections.graph._guard import abandon, is_io_failure, reserve_room
from lcg.projections.graph._index import GraphIndex, IndexDelta
from lcg.projections.graph._purge import purge
from lcg.projections.graph._schema import DB_FILE, SCHEMA_VERSION, create_schema, stored_version
from lcg.projections.graph._sources import SOURCE_COLUMNS
from lcg.projections.graph._statements import EDGE_COLUMNS
from lcg.projections.graph._states import edge_from_row, ts_text
from lcg.projections.graph.rows import GraphCounts

__all__ = ["GraphProjection", "StaleGraphError"]

_SET_POSITION = "MERGE (p:WalPosition {id: $g}) SET p.applied_seq = $seq, p.generation = $gen"


def _is_no_txn(exc: BaseException) -> bool:
    return "No active transaction" in str(exc)


def _remove_database(path: Path) -> None:
    """Delete a closed Kuzu database: its file and its side files (``.wal``, ``.shadow``…)."""
    for side in path.parent.glob(f"{path.name}*"):
        if side.is_dir():
            remove_tree(side)  # whole or gone after a crash (ADR 0156)
        else:
            side.unlink()


class StaleGraphError(ProjectionError):
    """A read-only open found the graph in another schema (a writing open would rebuild it)."""


class GraphProjection:
    """The Kuzu-backed graph projection of every group's stream (the projection of record)."""

    name = "graph"
    #: An event that fails to apply fails its transaction alone: the projector bisects.
    capabilities = Capabilities(isolates_events=True)

    def __init__(
        self,
        db_dir: Path,
        *,
        read_only: bool = False,
        buffer_pool_mb: int = 0,
        max_threads: int = 0,
    ) -> None:
        """Open (or create) ``<db_dir>/graph.kuzu`` and its schema.

        ``read_only`` (``lcg status``/``verify``): an existing database, opened in Kuzu's
        read-only mode (nothing written, not even a checkpoint); one in another schema raises
        ``StaleGraphError`` instead of being dropped. ``buffer_pool_mb`` and ``max_threads``
        bound Kuzu's buffer pool and query threads (0: Kuzu's defaults, ~80% of RAM and
        every core; the Cypher sandbox sets both, ADR 0152).
        """
        self.path = Path(db_dir) / DB_FILE
        self._pool_bytes = buffer_pool_mb << 20
        self._threads = max_threads
        try:
            Path(db_dir).mkdir(parents=True, exist_ok=True)
            self._db = self._open_db(read_only)
            self._writer: kuzu.Connection = kuzu.Connection(self._db)
            version = stored_version(self._writer)
            if read_only and version != SCHEMA_VERSION:
                self._writer.close()
                self._db.close()
                raise StaleGraphError(
                    f"the graph database {self.path} is in schema {version}, this lcg's is "
                    f"{SCHEMA_VERSION}: `lcg serve` rebuilds it from the streams"
                )
            if version is not None and version != SCHEMA_VERSION:
                # A projection in another schema is stale, not damaged: drop it, and the
                # catch-up at open replays every group's stream into the current schema.
                self._writer.close()
                self._db.close()
                _remove_database(self.path)
                self._db = self._open_db(False)
                self._writer = kuzu.Connection(self._db)
            if not read_only and version != SCHEMA_VERSION:
                # Only a new (or dropped) database is written here: an up-to-date one opens
                # without a write, so it opens on a full disk too (ADR 0081).
                reserve_room(self.path)
                create_schema(self._writer)
            #: Committed locator; only the writer (under ``_write_lock``) touches it.
            self._index = GraphIndex.scan(self._writer)
        except ProjectionError:
            raise
        except Exception as exc:
            if is_io_failure(exc) and getattr(self, "_db", None) is not None:
                abandon(self._db)  # Kuzu aborts the process destroying it (ADR 0081)
            raise ProjectionError(f"cannot open the graph database {self.path}: {exc}") from exc
        self._write_lock = threading.Lock()
        self._readers: queue.SimpleQueue[kuzu.Connection] = queue.SimpleQueue()
        #: Clients' Cypher (knowledge_query_cypher) runs here and nowhere else (ADR 0070).
        self._client_conn: kuzu.Connection | None = None
        self._client_lock = threading.Lock()
        self._closed = False
        #: Set once Kuzu failed a write on I/O: no more writes, and no close (ADR 0081).
        self.io_failure: str | None = None
        #: Committed ``(applied seq, generation)`` per group, kept beside the ``WalPosition``
        #: rows so that the Cypher sandbox learns what it must have applied without a query.
        self._positions: dict[str, tuple[int, str]] = {
            g: (p.seq, p.generation)
            for g, p in self.positions().items()
            if p.seq is not None and p.generation
        }
        #: Called with a group's id after a purge of it committed (the Cypher sandbox
        #: rebuilds that group of its read model).
        self.on_purge: Callable[[str], None] | None = None

    def _open_db(self, read_only: bool) -> kuzu.Database:
        return kuzu.Database(
            str(self.path),
            read_only=read_only,
            buffer_pool_size=self._pool_bytes,
            max_num_threads=self._threads,
        )

    # ---- connections ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ProjectionError("the graph projection is closed")

    @contextmanager
    def reader(self) -> Iterator[kuzu.Connection]:
        """A read connection for the duration of the block (pooled; one thread at a time)."""
        self._check_open()
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = kuzu.Connection(self._db)
        try:
            yield conn
        finally:
            self._readers.put(conn)

    def query(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """All rows of a read query; Kuzu errors become ``ProjectionError``.

        A query with parameters runs through the connection's prepared-statement cache:
        Kuzu 0.11.3 never frees the statement it prepares for ``execute(text, params)``
        (≈ 8.8 KB per call, ADR 0085), while re-executing a cached one allocates nothing.
        A query without parameters goes through Kuzu's plain query path, which frees it.
        """
        with self.reader() as conn:
            try:
                if params:
                    result = execute(conn, cypher, params)
                else:
                    plain = conn.execute(cypher)
                    assert isinstance(plain, kuzu.QueryResult)
                    result = plain
                return cast(list[list[Any]], result.get_all())
            except Exception as exc:
                raise ProjectionError(f"graph query failed: {exc}") from exc

    def query_read_only(
        self,
        cypher: str,
        timeout_ms: int = 30_000,
        max_rows: int = 100_000,
        each: Callable[[list[Any]], Any] | None = None,
    ) -> list[Any]:
        """All rows of a client's (already guarded) query, run on a connection used for
        nothing else inside ``BEGIN TRANSACTION READ ONLY``, so Kuzu itself refuses any
        database write the guard let through; stopped after ``timeout_ms``, refused past
        ``max_rows`` rows (ADR 0070). One query at a time: a caller waits at most one
        timeout for the one before it. ``each`` turns every row into what is kept, as the
        rows are read (it may refuse the result by raising ``ProjectionError``, ADR 0195)."""
        if not self._client_lock.acquire(timeout=timeout_ms / 1000):
            raise ProjectionError(
                "graph query failed: another knowledge_query_cypher query held the client "
                f"connection for {timeout_ms} ms; retry once it has finished"
            )
        try:
            self._check_open()
            if self._client_conn is None:
                self._client_conn = kuzu.Connection(self._db)
            conn = self._client_conn
            conn.set_query_timeout(timeout_ms)
            try:
                conn.execute("BEGIN TRANSACTION READ ONLY")
            except Exception as exc:
                # Never touch a connection whose BEGIN failed again (see the module doc).
                self._client_conn = None
                raise ProjectionError(f"cannot start a read-only transaction: {exc}") from exc
            try:
                result = conn.execute(cypher)
                if not isinstance(result, kuzu.QueryResult):
                    raise ProjectionError("graph query failed: one statement at a time")
                if result.get_num_tuples() > max_rows:
                    raise ProjectionError(
                        f"graph query failed: it returns {result.get_num_tuples():,} rows, more "
                        f"than {max_rows:,} (LCG_CYPHER_MAX_ROWS); add LIMIT or narrow it"
                    )
                rows: list[Any] = []
                while result.has_next():
                    values = cast(list[Any], result.get_next())
                    rows.append(values if each is None else each(values))
                return rows
            except ProjectionError:
                raise
            except Exception as exc:
                if "Interrupted" in str(exc):
                    raise ProjectionError(
                        f"graph query failed: it ran past {timeout_ms} ms and was stopped "
                        "(LCG_CYPHER_TIMEOUT_MS); narrow it (WHERE, LIMIT) or raise the limit"
                    ) from exc
                raise ProjectionError(f"graph query failed: {exc}") from exc
            finally:
                try:
                    conn.execute("COMMIT")
                except Exception as exc:
                    # A failed statement already ended the transaction.
                    if not _is_no_txn(exc):
                        self._client_conn = None
        finally:
            self._client_lock.release()

    @contextmanager
    def _transaction(self, what: str) -> Iterator[tuple[kuzu.Connection, IndexDelta]]:
        """A write transaction and its locator delta, folded in only once ``COMMIT`` succeeded."""
        with self._write_lock:
            self._check_open()
            if self.io_failure is not None:
                raise ProjectionIOError(self.io_failure)
            reserve_room(self.path)
            conn = self._writer
            try:
                conn.execute("BEGIN TRANSACTION")
            except Exception as exc:
                # Never touch a connection whose BEGIN failed again.
                self._replace_writer()
                raise ProjectionError(f"cannot start a graph transaction ({what}): {exc}") from exc
            delta = IndexDelta(self._index)
            try:
                yield conn, delta
                conn.execute("COMMIT")
            except BaseException as exc:
                self._rollback(conn)
                if is_io_failure(exc):
                    self.io_failure = (
                        f"the graph database failed writing {self.path} ({exc}); Kuzu cannot "
                        "write again in this process: restart lcg (the stream holds every "
                        "write and the graph catches up on open)"
                    )
                    raise ProjectionIOError(self.io_failure) from exc
                if isinstance(exc, ProjectionError):
                    raise
                if isinstance(exc, Exception):
                    raise ProjectionError(
                        f"graph {what} failed and was rolled back: {exc}"
                    ) from exc
                raise
            self._index.commit(delta)

    def _replace_writer(self) -> None:
        forget_prepared(self._writer)
        self._writer = kuzu.Connection(self._db)

    def _rollback(self, conn: kuzu.Connection) -> None:
        try:
            conn.execute("ROLLBACK")
        except Exception as exc:
            # Kuzu rolls a transaction back by itself when a statement in it fails.
            if not _is_no_txn(exc):
                self._replace_writer()

    # ---- positions -------------------------------------------------------------------

    def position(self, group_id: str) -> Position:
        """The recorded position of ``group_id`` (``Position.none`` if none is): from the
        committed positions kept in memory, else the ``WalPosition`` row."""
        held = self._positions.get(group_id)
        if held is not None:
            # Every write of a position (apply, skip, bulk load, purge) keeps this in step;
            # a query per fed batch was most of a live catch-up's time (ADR 0206).
            return Position(group_id=group_id, generation=held[1], seq=held[0])
        rows = self.query(
            "MATCH (p:WalPosition {id: $g}) RETURN p.applied_seq, p.generation", {"g": group_id}
        )
        if not rows:
            return Position.none(group_id)
        return Position(group_id=group_id, generation=rows[0][1], seq=rows[0][0])

    def positions(self) -> dict[str, Position]:
        """Every recorded group position."""
        rows = self.query("MATCH (p:WalPosition) RETURN p.id, p.applied_seq, p.generation")
        return {g: Position(group_id=g, generation=gen, seq=seq) for g, seq, gen in rows}

    def committed_positions(self) -> dict[str, tuple[int, str]]:
        """``positions()`` as of the last commit, from memory (no query): every write
        acknowledged before this call is in it."""
        return dict(self._positions)

    def groups(self) -> list[str]:
        """Every group with a recorded position."""
        return list(self.positions())

    @property
    def damaged(self) -> dict[str, str]:
        """Nothing: a damaged database fails its open instead (``Projection``)."""
        return {}

    # ---- writes ----------------------------------------------------------------------

    def apply_batch(self, batch: Batch) -> None:
        """Apply ``batch``'s events (``Projection``; the graph reads events, not ops); a batch
        of no events (each was skipped) only moves the position to its ``last_seq``."""
        g, gen, seq = batch.group_id, batch.generation, batch.last_seq
        if batch.events:
            self.apply(g, gen, list(batch.events))
            return
        with self._transaction(f"position of {g!r} past skipped seqs to {seq}") as (c, _):
            execute(c, _SET_POSITION, {"g": g, "seq": seq, "gen": gen})
        self._positions[g] = (seq, gen)

    def begin_bulk(self, group_id: str) -> None:
        """Nothing to defer: ``load_group`` is the graph's bulk path (``Projection``)."""

    def end_bulk(self, group_id: str) -> None:
        """Nothing deferred (``Projection``)."""

    def save(self) -> None:
        """Nothing to save: every apply commits (``Projection``)."""

    def holds_rows(self, group_id: str) -> bool:
        """True if an entity, episode or edge of ``group_id`` is held."""
        counts = self.counts(group_id)
        return bool(counts.entities or counts.episodes or counts.edges)

    def bulk_loadable(self, group_id: str) -> bool:
        """True if ``group_id`` holds no entity (``load_group`` may fold its stream)."""
        return self.counts(group_id).entities == 0

    def apply(self, group_id: str, generation: str, events: list[Event]) -> None:
        """Apply ``events`` of one group and set its position to the last seq, atomically.

        On any failure nothing of the batch is kept (data and position as before) and a
        ``ProjectionError`` is raised. An empty batch changes nothing.
        """
        if not events:
            return
        for event in events:
            if event.group_id != group_id:
                raise ProjectionError(
                    f"event seq {event.seq} belongs to group {event.group_id!r}, not {group_id!r}"
                )
        what = f"apply of {group_id!r} seq {events[0].seq}..{events[-1].seq}"
        with self._transaction(what) as (c, delta):
            apply_events(c, group_id, events, delta)
            execute(c, _SET_POSITION, {"g": group_id, "seq": events[-1].seq, "gen": generation})
        self._positions[group_id] = (events[-1].seq, generation)

    def load_group(self, group_id: str, generation: str, batches: Iterable[list[Event]]) -> int:
        """Fold a whole stream into a group that holds no rows, in one transaction.

        The rebuild path: every batch is applied to one in-memory overlay (reading the
        database only for what the stream does not create itself) and the result is written
        once, new rows by ``COPY`` from Arrow tables, with the position of the last event.
        The graph equals what ``apply`` of the same batches gives (same digest). Memory
        grows with the group's size, not with the number of batches. Returns the number of
        events; a group with rows is refused (``RebuildRefusedError``).
        """
        held = self.counts(group_id)
        if held.entities or held.edges or held.episodes:
            raise RebuildRefusedError(
                f"group {group_id!r} holds data; purge it before loading it in bulk"
            )
        last: list[Event] = []

        def checked() -> Iterator[list[Event]]:
            for batch in batches:
                for event in batch:
                    if event.group_id != group_id:
                        raise ProjectionError(
                            f"event seq {event.seq} belongs to group {event.group_id!r}, "
                            f"not {group_id!r}"
                        )
                if batch:
                    last[:] = [batch[-1]]
                yield batch

        with self._transaction(f"bulk load of {group_id!r}") as (c, delta):
            count = fold_events(c, group_id, checked(), delta)
            if last:
                execute(c, _SET_POSITION, {"g": group_id, "seq": last[0].seq, "gen": generation})
        if last:
            self._positions[group_id] = (last[0].seq, generation)
        return count

    def purge_group(self, group_id: str) -> None:
        """Delete every row of ``group_id`` and its position (one transaction)."""
        with self._transaction(f"purge of {group_id!r}") as (c, delta):
            purge(c, group_id, delta)
            execute(c, "MATCH (p:WalPosition {id: $g}) DELETE p", {"g": group_id})
        self._positions.pop(group_id, None)
        if self.on_purge is not None:
            self.on_purge(group_id)

    # ---- digest and counts -------------------------------------------------------------

    def digest(self, group_id: str) -> str:
        """Canonical sha256 of the group's entities, edges (unbound too), episodes, mentions
        and sources.

        Rows are sorted by uuid and include every column; timestamps are hashed as RFC 3339
        with microseconds. Whether an edge is bound (has its hops) does not matter.
        """
        g = {"g": group_id}
        h = hashlib.sha256()
        enc = msgspec.json.Encoder()

        def section(name: str, rows: list[Any]) -> None:
            h.update(f"#{name} {len(rows)}\n".encode())
            for row in rows:
                h.update(enc.encode(row))
                h.update(b"\n")

        entities = self.query(
            "MATCH (e:Entity) WHERE e.group_id = $g RETURN e.uuid, e.name, e.group_id, "
            "e.labels, e.created_at, e.summary, e.attributes ORDER BY e.uuid",
            g,
        )
        section("entities", [[*r[:4], ts_text(r[4]), *r[5:]] for r in entities])
        # Every edge of the group, with its hops or without (unbound): the digest hashes the
        # records, not how they are stored.
        edges = [
            edge_from_row(r)[1]
            for r in self.query(
                f"MATCH (e:RelatesToNode_) WHERE e.group_id = $g RETURN {EDGE_COLUMNS}", g
            )
        ]
        edges.sort(key=lambda e: (e.uuid, e.source_uuid, e.target_uuid))
        section("edges", edges)
        episodes = self.query(
            "MATCH (p:Episodic) WHERE p.group_id = $g RETURN p.uuid, p.name, p.group_id, "
            "p.created_at, p.source, p.source_description, p.content, p.valid_at, "
            "p.entity_edges, p.content_hash, p.extracted ORDER BY p.uuid",
            g,
        )
        section(
            "episodes",
            [[*r[:3], ts_text(r[3]), *r[4:7], ts_text(r[7]), *r[8:]] for r in episodes],
        )
        mentions = self.query(
            "MATCH (p:Episodic)-[m:MENTIONS]->(n:Entity) WHERE m.group_id = $g "
            "RETURN m.uuid, p.uuid, n.uuid, m.group_id, m.created_at",
            g,
        )
        section(
            "mentions", sorted([[*r[:4], ts_text(r[4])] for r in mentions], key=lambda r: r[:3])
        )
        sources = self.query(
            f"MATCH (s:Source) WHERE s.group_id = $g RETURN {SOURCE_COLUMNS} ORDER BY s.root", g
        )
        if sources:  # a group with no source digests as before sources were recorded
            section("sources", [[*r[:3], ts_text(r[3])] for r in sources])
        return h.hexdigest()

    def counts(self, group_id: str | None = None) -> GraphCounts:
        """Row counts of one group (or of all groups); ``edges`` includes unbound edges."""
        where = "" if group_id is None else " WHERE x.group_id = $g"
        params = {} if group_id is None else {"g": group_id}

        def count(pattern: str, extra: str = "") -> int:
            cond = where
            if extra:
                cond = f"{where} AND {extra}" if where else f" WHERE {extra}"
            rows = self.query(f"MATCH {pattern}{cond} RETURN count(*)", params)
            return int(rows[0][0])

        edges = count("(x:RelatesToNode_)")
        # Bound edges by their source hop (an edge has both hops or none).
        bound = count("(:Entity)-[:RELATES_TO]->(x:RelatesToNode_)")
        return GraphCounts(
            entities=count("(x:Entity)"),
            edges=edges,
            episodes=count("(x:Episodic)"),
            pending_episodes=count("(x:Episodic)", "x.extracted = false"),
            unbound_edges=edges - bound,
        )

    def close(self) -> None:
        """Close every connection and the database (idempotent)."""
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            while True:
                try:
                    reader = self._readers.get_nowait()
                except queue.Empty:
                    break
                forget_prepared(reader)
                reader.close()
            with self._client_lock:
                if self._client_conn is not None:
                    self._client_conn.close()
                    self._client_conn = None
            forget_prepared(self._writer)
            self._writer.close()
            if self.io_failure is not None:
                abandon(self._db)  # Kuzu aborts the process closing it (ADR 0081)
            else:
                self._db.close()
