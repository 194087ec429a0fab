"""Read a reference group's lines in order: parse each against the templates, apply it to
the in-memory tables, and count what could not be (ADR 0194).

Nothing a line says is executed by an engine: its Cypher is parsed (``statements``) into a
typed statement or refused, and only a parsed statement changes ``ReferenceGraph``. What each
line came to goes into a ``LineReport`` by reason, with a few samples (``file:line seq N``
and a short, printable excerpt): ``unparseable`` (not a five-key line), ``unrecognised`` (not
written in the templates' grammar: a read, ``COPY``, ``LOAD``, ``UNWIND``, a second statement,
…), ``failed`` (a table, column or value the reference's engine would refuse too; a duplicate
key), ``bad_time`` (a time column given no time), ``no_effect`` (a ``MATCH`` that bound
nothing). Index statements, deletes that found nothing, seq regressions and vectors are
counted as read and not carried. Each line is applied alone: one refused loses only itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from lcg.ingest.reference.layout import BadLine, RefLine
from lcg.ingest.reference.model import ApplyError, ReferenceGraph
from lcg.ingest.reference.statements import (
    NotATemplate,
    SchemaError,
    Statement,
    is_index_statement,
    parse,
)

__all__ = ["MAX_CYPHER_CHARS", "SAMPLES_PER_REASON", "LineReport", "Sample", "replay"]

#: How many samples of each reason a report keeps.
SAMPLES_PER_REASON: Final = 5
#: A line's Cypher longer than this is not parsed (the templates are a few hundred chars;
#: graphiti's literal-valued lines carry one row's text).
MAX_CYPHER_CHARS: Final = 1 << 20
#: Parsed statements kept by text (a stream repeats a few templates with other parameters);
#: a longer text (a literal-valued line) is parsed each time, so the cache stays small.
_CACHE_SIZE: Final = 4096
_CACHED_CHARS: Final = 4096


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
    #: that found nothing to delete, lines whose seq went back, vectors.
    notes: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str, where: str, detail: str) -> None:
        """Count one unmapped thing and keep a few samples per reason."""
        self.unmapped[reason] = self.unmapped.get(reason, 0) + 1
        if self.unmapped[reason] <= SAMPLES_PER_REASON:
            self.samples.append(Sample(reason, where, printable(detail[:300])))

    def note(self, what: str, n: int = 1) -> None:
        """Count something read and not carried on purpose."""
        if n:
            self.notes[what] = self.notes.get(what, 0) + n


def printable(text: str) -> str:
    """``text`` with every non-printable character escaped (a terminal shows it as read)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _preview(cypher: str) -> str:
    return printable(" ".join(cypher[:400].split())[:200])


_Parsed = Statement | NotATemplate | SchemaError


def _parsed(cache: dict[str, _Parsed], cypher: str) -> _Parsed:
    found = cache.get(cypher)
    if found is None:
        try:
            found = parse(cypher)
        except (NotATemplate, SchemaError) as exc:
            found = exc
        except RecursionError:  # a pathological nesting the depth limit did not catch
            found = NotATemplate("nested too deeply")
        if len(cypher) <= _CACHED_CHARS:
            if len(cache) >= _CACHE_SIZE:
                cache.clear()
            cache[cypher] = found
    return found


def _apply_line(
    graph: ReferenceGraph, cache: dict[str, _Parsed], line: RefLine, report: LineReport
) -> None:
    where = f"{line.where} seq {line.seq}"
    if len(line.cypher) > MAX_CYPHER_CHARS:
        report.skip("unrecognised", where, f"longer than {MAX_CYPHER_CHARS} characters")
        return
    parsed = _parsed(cache, line.cypher)
    if isinstance(parsed, NotATemplate):
        if is_index_statement(line.cypher):
            report.note("index_statements")
        else:
            report.skip(
                "unrecognised", where, f"not a template ({parsed}): {_preview(line.cypher)}"
            )
        return
    if isinstance(parsed, SchemaError):
        report.skip("failed", where, f"{parsed}: {_preview(line.cypher)}")
        return
    try:
        applied = graph.apply(parsed, line.params)
    except ApplyError as exc:
        report.skip(exc.reason, where, f"{exc}: {_preview(line.cypher)}")
        return
    report.note("vectors_dropped", applied.vectors)
    if applied.matched == 0:
        if parsed.deletes:
            report.note("deletes_of_nothing")
        else:
            report.skip("no_effect", where, f"matched nothing: {_preview(line.cypher)}")
        return
    report.replayed += 1


def replay(
    graph: ReferenceGraph,
    lines: Iterable[RefLine | BadLine],
    report: LineReport,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Apply ``lines`` to ``graph`` in order, counting in ``report`` what could not be."""
    cache: dict[str, _Parsed] = {}
    top = -1
    n = 0
    for n, line in enumerate(lines, 1):
        if progress is not None and n % 100 == 0:
            progress(100)
        report.lines += 1
        if isinstance(line, BadLine):
            report.skip("unparseable", line.where, line.detail)
            continue
        if line.seq <= top:
            report.note("seq_regressions")  # applied anyway, as the reference does
        top = max(top, line.seq)
        _apply_line(graph, cache, line, report)
    if progress is not None:
        progress(n % 100)
