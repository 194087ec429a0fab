"""``lcg eval check``: questions you write about your own workspace, asked at no LLM cost.

A golden file is a JSON list of questions::

    [{"read": "entities", "query": "Ilse", "expect": {"relevant": ["Ilse Varga"]}},
     {"read": "relationships", "query": "who leads Kestrel",
      "expect": {"relevant": ["leads Project Kestrel"]}},
     {"read": "passages", "query": "kestrel budget", "expect": {"relevant": ["notes/a.md"]}},
     {"read": "neighbors", "entity": "Ilse Varga", "expect": {"entities": ["Harrow Foundry"]}},
     {"read": "by_source", "source": "notes/a.md", "expect": {"entities": ["Ilse Varga"]}}]

Ranked reads (entities by name, relationships by a fact substring, passages by source file)
are scored by reciprocal rank, hit@3 and P@3; slot reads (neighbors, by_source) must return
exactly the expected names (case-insensitive). A slot miss fails the check; a ranking
figure never does.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Literal

import msgspec

from lcg.eval.report import EvalRefusedError
from lcg.ingest.resolution import name_key
from lcg.projections.graph import reads as graph_reads
from lcg.projections.search import Searcher
from lcg.workspace import Workspace

__all__ = ["CheckReport", "CheckRow", "GoldenQuestion", "load_golden", "run_check"]


class Expect(msgspec.Struct, frozen=True, kw_only=True):
    """What a golden question expects."""

    relevant: list[str] = []
    entities: list[str] = []


class GoldenQuestion(msgspec.Struct, frozen=True, kw_only=True):
    """One question of a golden file."""

    read: Literal["entities", "relationships", "passages", "neighbors", "by_source"]
    query: str = ""
    entity: str = ""
    source: str = ""
    expect: Expect


class CheckRow(msgspec.Struct, frozen=True, kw_only=True):
    """One golden question's outcome."""

    read: str
    ask: str
    rank: int | None = None
    rr: float | None = None
    hit_at_3: bool | None = None
    p_at_3: float | None = None
    exact: bool | None = None
    missing: list[str] = []
    extra: list[str] = []


class CheckReport(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of a golden file: rows, the ranking summary, and whether slots held."""

    kind: str = "local"
    questions: int
    slots_ok: bool
    mrr: float | None
    hit_at_3: float | None
    p_at_3: float | None
    rows: list[CheckRow]


def load_golden(path: Path) -> list[GoldenQuestion]:
    """Read a golden file; ``EvalRefusedError`` naming the file and the problem."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=list[GoldenQuestion])
    except OSError as exc:
        raise EvalRefusedError(f"golden file {path} unreadable: {exc}") from exc
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise EvalRefusedError(f"golden file {path} is not a list of questions: {exc}") from exc


def _ranked(read: str, ask: str, hits: list[bool], n_expected: int) -> CheckRow:
    rank = next((i + 1 for i, h in enumerate(hits) if h), None)
    return CheckRow(
        read=read,
        ask=ask,
        rank=rank,
        rr=round(1 / rank, 4) if rank else 0.0,
        hit_at_3=rank is not None and rank <= 3,
        p_at_3=round(sum(hits[:3]) / min(3, max(1, n_expected)), 4),
    )


def run_check(ws: Workspace, questions: list[GoldenQuestion], groups: list[str]) -> CheckReport:
    """Ask every golden question of ``ws`` (over ``groups``) and score the answers."""
    searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
    rows: list[CheckRow] = []
    with ws.reading():
        for q in questions:
            want = [x for x in (q.expect.relevant or q.expect.entities)]
            if q.read == "entities":
                found = searcher.find_entities(q.query, groups, 10)
                keys = {name_key(w) for w in want}
                rows.append(
                    _ranked(q.read, q.query, [name_key(r.name) in keys for r in found], len(want))
                )
            elif q.read == "relationships":
                edges = searcher.find_relationships(q.query, groups, 10)
                low = [w.lower() for w in want]
                hits = [any(w in e.fact.lower() for w in low) for e in edges]
                rows.append(_ranked(q.read, q.query, hits, len(want)))
            elif q.read == "passages":
                found_p = searcher.search_passages(q.query, groups, 10)
                hits = [
                    any(
                        p.source_description == w or p.source_description.startswith(f"{w}:")
                        for w in want
                    )
                    for p in found_p
                ]
                rows.append(_ranked(q.read, q.query, hits, len(want)))
            else:
                if q.read == "neighbors":
                    got_names: set[str] = set()
                    for g in groups:
                        ent = graph_reads.find_entity_by_name(ws.graph, g, q.entity)
                        if ent is not None:
                            far, _ = graph_reads.entity_neighbors(ws.graph, ent.uuid, 1000, groups)
                            got_names |= {name_key(x.name) for x in far}
                    ask = q.entity
                else:
                    rows_s = graph_reads.entities_by_source(ws.graph, q.source, 1000, groups)
                    got_names = {name_key(x.name) for x in rows_s}
                    ask = q.source
                expected = {name_key(w) for w in want}
                rows.append(
                    CheckRow(
                        read=q.read,
                        ask=ask,
                        exact=got_names == expected,
                        missing=sorted(expected - got_names),
                        extra=sorted(got_names - expected),
                    )
                )
    ranked = [r for r in rows if r.rr is not None]

    def mean(values: list[float]) -> float | None:
        return round(statistics.fmean(values), 4) if values else None

    return CheckReport(
        questions=len(rows),
        slots_ok=all(r.exact is not False for r in rows),
        mrr=mean([r.rr or 0.0 for r in ranked]),
        hit_at_3=mean([float(bool(r.hit_at_3)) for r in ranked]),
        p_at_3=mean([r.p_at_3 or 0.0 for r in ranked]),
        rows=rows,
    )
