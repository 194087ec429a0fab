"""Replay reference lines into a scratch, in-memory Kuzu database in the reference's schema.

The schema is the reference's own (lcg-api §5.1) with its vector columns, so its statements
bind as written; a vector column is a list of any length (``DOUBLE[]``) since the reference's
dimension is its embedder's. Nothing here is ours: the rows are read back afterwards and turned
into events (``rows``). Every line is run on its own (auto-commit), so one that fails loses
only itself, and is reported by seq and place. A line that starts with ``MATCH`` is run with
``RETURN count(*)`` appended, as the reference's replay does, to tell one that matched nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, cast

import kuzu

from lcg.ingest.reference.cypher import BindError, is_index_statement, is_mutation, prepare
from lcg.ingest.reference.layout import BadLine, RefLine
from lcg.projections import forget_prepared, query_rows

__all__ = ["REFERENCE_DDL", "LineReport", "ScratchGraph"]

_S, _TS, _SL, _V = "STRING", "TIMESTAMP", "STRING[]", "DOUBLE[]"

#: The reference's tables (lcg-api §5.1), vectors included, none of our additions.
REFERENCE_DDL: Final[tuple[str, ...]] = (
    f"CREATE NODE TABLE Entity(uuid {_S} PRIMARY KEY, name {_S}, group_id {_S}, labels {_SL}, "
    f"created_at {_TS}, name_embedding {_V}, summary {_S}, summary_embedding {_V}, "
    f"attributes {_S})",
    f"CREATE NODE TABLE Episodic(uuid {_S} PRIMARY KEY, name {_S}, group_id {_S}, "
    f"created_at {_TS}, source {_S}, source_description {_S}, content {_S}, "
    f"content_embedding {_V}, valid_at {_TS}, entity_edges {_SL})",
    f"CREATE NODE TABLE RelatesToNode_(uuid {_S} PRIMARY KEY, name {_S}, group_id {_S}, "
    f"created_at {_TS}, fact {_S}, fact_embedding {_V}, episodes {_SL}, expired_at {_TS}, "
    f"valid_at {_TS}, invalid_at {_TS}, attributes {_S}, relation_type {_S})",
    f"CREATE NODE TABLE Community(uuid {_S} PRIMARY KEY, name {_S}, group_id {_S}, "
    f"created_at {_TS}, name_embedding {_V}, summary {_S})",
    f"CREATE NODE TABLE Saga(uuid {_S} PRIMARY KEY, name {_S}, group_id {_S}, created_at {_TS})",
    "CREATE REL TABLE RELATES_TO(FROM Entity TO RelatesToNode_, FROM RelatesToNode_ TO Entity, "
    f"FROM Entity TO Entity, uuid {_S}, name {_S}, group_id {_S}, fact {_S}, valid_at {_TS}, "
    f"invalid_at {_TS}, attributes {_S})",
    f"CREATE REL TABLE MENTIONS(FROM Episodic TO Entity, uuid {_S}, group_id {_S}, "
    f"created_at {_TS})",
    "CREATE REL TABLE HAS_MEMBER(FROM Community TO Entity, FROM Community TO Community, "
    f"uuid {_S}, group_id {_S}, created_at {_TS})",
    f"CREATE REL TABLE HAS_EPISODE(FROM Saga TO Episodic, uuid {_S}, group_id {_S}, "
    f"created_at {_TS})",
    f"CREATE REL TABLE NEXT_EPISODE(FROM Episodic TO Episodic, uuid {_S}, group_id {_S}, "
    f"created_at {_TS})",
    "CREATE NODE TABLE WalPosition(id STRING PRIMARY KEY, applied_seq INT64, generation STRING)",
)

#: How many samples of each reason a report keeps.
SAMPLES_PER_REASON: Final = 5


@dataclass
class Sample:
    """One thing not mapped: why, where (``file:line``, seq) and the error or the text."""

    reason: str
    where: str
    detail: str


@dataclass
class LineReport:
    """What the replay of one group's lines did."""

    lines: int = 0
    replayed: int = 0
    unmapped: dict[str, int] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    #: What was read and deliberately not carried (not a loss): index statements, deletes
    #: that found nothing to delete, lines whose seq went back.
    notes: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str, where: str, detail: str) -> None:
        """Count one unmapped thing and keep a few samples per reason."""
        self.unmapped[reason] = self.unmapped.get(reason, 0) + 1
        if self.unmapped[reason] <= SAMPLES_PER_REASON:
            self.samples.append(Sample(reason, where, detail[:300]))

    def note(self, what: str, n: int = 1) -> None:
        """Count something read and not carried on purpose."""
        if n:
            self.notes[what] = self.notes.get(what, 0) + n


def _preview(cypher: str) -> str:
    return " ".join(cypher.split())[:200]


class ScratchGraph:
    """An in-memory Kuzu database in the reference's schema, fed reference lines."""

    def __init__(self) -> None:
        self.db = kuzu.Database()  # in memory: a scratch copy, gone with the object
        self.conn = kuzu.Connection(self.db, num_threads=1)
        for statement in REFERENCE_DDL:
            self.conn.execute(statement)

    def close(self) -> None:
        """Drop the prepared statements and the database."""
        forget_prepared(self.conn)
        self.conn.close()
        self.db.close()

    def rows(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """The rows of a read."""
        if params:  # through one cached prepared statement per text (ADR 0085)
            return query_rows(self.conn, query, params)
        result = self.conn.execute(query)  # Kuzu's plain path frees what it builds
        assert isinstance(result, kuzu.QueryResult)
        return cast(list[list[Any]], result.get_all())

    def _run(self, cypher: str, params: dict[str, Any]) -> int | None:
        """Run one statement; the rows a ``MATCH`` matched, ``None`` for other statements."""
        if cypher.lstrip().upper().startswith("MATCH"):
            try:
                counted = self.rows(cypher + " RETURN count(*)", params)
            except RuntimeError:
                counted = None  # a form that takes no RETURN: run it plainly below
            if counted is not None:
                return int(counted[0][0]) if counted else 0
        self.rows(cypher, params)
        return None

    def replay(
        self,
        lines: Iterable[RefLine | BadLine],
        report: LineReport,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Apply ``lines`` in order, counting in ``report`` what could not be applied."""
        top = -1
        n = 0
        for n, line in enumerate(lines, 1):
            if progress is not None and n % 100 == 0:
                progress(100)
            report.lines += 1
            if isinstance(line, BadLine):
                report.skip("unparseable", line.where, line.detail)
                continue
            where = f"{line.where} seq {line.seq}"
            if line.seq <= top:
                report.note("seq_regressions")  # applied anyway, as the reference does
            top = max(top, line.seq)
            if is_index_statement(line.cypher):
                report.note("index_statements")
                continue
            if not is_mutation(line.cypher):
                report.skip("unrecognised", where, _preview(line.cypher))
                continue
            try:
                stmt = prepare(line.cypher, line.params)
            except BindError as exc:
                report.skip("bad_time", where, str(exc))
                continue
            report.note("vectors_dropped", stmt.vectors_dropped)
            try:
                matched = self._run(stmt.cypher, stmt.params)
            except RuntimeError as exc:
                report.skip("failed", where, f"{exc}: {_preview(line.cypher)}")
                continue
            if matched == 0:
                if "DELETE" in stmt.cypher.upper().split():
                    report.note("deletes_of_nothing")
                else:
                    report.skip("no_effect", where, f"matched nothing: {_preview(line.cypher)}")
                continue
            report.replayed += 1
        if progress is not None:
            progress(n % 100)
