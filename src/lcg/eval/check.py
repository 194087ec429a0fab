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
figure never does. The reads go through the workspace's running service when one answers
(it holds the workspace), else to the workspace opened here: the same answers either way.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec

from lcg.eval.report import EvalRefusedError
from lcg.ingest import name_key
from lcg.query import Searcher, graph_reads
from lcg.workspace import Workspace

__all__ = [
    "CheckReads",
    "CheckReport",
    "CheckRow",
    "DirectReads",
    "GoldenQuestion",
    "MethodCaller",
    "ServiceReads",
    "load_golden",
    "run_check",
]


class MethodCaller(Protocol):
    """What ``ServiceReads`` asks through: a connected client's ``call`` (``lcg.rpc.client``
    has one; the CLI passes it, so this package needs nothing of ``rpc``)."""

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """The ``result`` of one JSON-RPC call."""
        ...


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


class CheckReads(Protocol):
    """The five reads a golden file asks: in this process, or through the running service."""

    def entities(self, query: str, groups: list[str], n: int) -> list[str]:
        """Names of the best entities for ``query``, best first."""
        ...

    def facts(self, query: str, groups: list[str], n: int) -> list[str]:
        """Facts of the best relationships for ``query``, best first."""
        ...

    def passage_sources(self, query: str, groups: list[str], n: int) -> list[str]:
        """Source descriptions of the best passages for ``query``, best first."""
        ...

    def neighbor_names(self, entity: str, groups: list[str]) -> set[str]:
        """Folded names one hop from the entity named ``entity`` in each group."""
        ...

    def source_names(self, source: str, groups: list[str]) -> set[str]:
        """Folded names of the entities mentioned by the episodes of ``source``."""
        ...


#: What the passage reads ask for (the socket method's default floor).
_MIN_SCORE = 0.5
_SLOT_LIMIT = 1000


class DirectReads:
    """The reads on a workspace open in this process (no service runs)."""

    def __init__(self, ws: Workspace) -> None:
        """Read ``ws`` (the caller holds it open)."""
        self.ws = ws
        self.searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)

    def entities(self, query: str, groups: list[str], n: int) -> list[str]:
        """``knowledge_find_entities``' names."""
        with self.ws.reading():
            return [r.name for r in self.searcher.find_entities(query, groups, n)]

    def facts(self, query: str, groups: list[str], n: int) -> list[str]:
        """``knowledge_find_relationships``' facts."""
        with self.ws.reading():
            return [e.fact for e in self.searcher.find_relationships(query, groups, n)]

    def passage_sources(self, query: str, groups: list[str], n: int) -> list[str]:
        """``knowledge_search_passages``' sources."""
        with self.ws.reading():
            found = self.searcher.search_passages(query, groups, n, _MIN_SCORE)
        return [p.source_description for p in found]

    def neighbor_names(self, entity: str, groups: list[str]) -> set[str]:
        """Names one hop from each group's entity of that name."""
        names: set[str] = set()
        with self.ws.reading():
            for g in groups:
                ent = graph_reads.find_entity_by_name(self.ws.graph, g, entity)
                if ent is not None:
                    far, _ = graph_reads.entity_neighbors(
                        self.ws.graph, ent.uuid, _SLOT_LIMIT, groups
                    )
                    names |= {name_key(x.name) for x in far}
        return names

    def source_names(self, source: str, groups: list[str]) -> set[str]:
        """``knowledge_get_entities_by_source``' names."""
        with self.ws.reading():
            rows = graph_reads.entities_by_source(self.ws.graph, source, _SLOT_LIMIT, groups)
        return {name_key(x.name) for x in rows}


class ServiceReads:
    """The same reads through the socket methods of the workspace's running service."""

    def __init__(self, client: MethodCaller) -> None:
        """Ask through ``client``."""
        self.client = client

    def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = self.client.call(method, params)
        if not isinstance(result, dict):
            raise EvalRefusedError(f"the service's {method} answered {result!r:.200}")
        return result

    def entities(self, query: str, groups: list[str], n: int) -> list[str]:
        """``knowledge_find_entities``' names."""
        found = self._call(
            "knowledge_find_entities", {"query": query, "group_ids": groups, "num_results": n}
        )
        return [str(r["name"]) for r in found["nodes"]]

    def facts(self, query: str, groups: list[str], n: int) -> list[str]:
        """``knowledge_find_relationships``' facts."""
        found = self._call(
            "knowledge_find_relationships", {"query": query, "group_ids": groups, "num_results": n}
        )
        return [str(f["fact"]) for f in found["facts"]]

    def passage_sources(self, query: str, groups: list[str], n: int) -> list[str]:
        """``knowledge_search_passages``' sources."""
        params = {"query": query, "group_ids": groups, "num_results": n, "min_score": _MIN_SCORE}
        found = self._call("knowledge_search_passages", params)
        return [str(p["source_description"]) for p in found["passages"]]

    def neighbor_names(self, entity: str, groups: list[str]) -> set[str]:
        """Names one hop from each group's entity of that name (chosen as the graph's name
        lookup does: a live entity before a ``Merged`` one, then the oldest, then uuid)."""
        names: set[str] = set()
        key = name_key(entity)
        for g in groups:
            nodes = self._call("knowledge_get_nodes_by_group", {"group_ids": [g]})["nodes"]
            same = [x for x in nodes if name_key(str(x["name"])) == key]
            if not same:
                continue
            same.sort(key=lambda x: ("Merged" in x["labels"], x["created_at"], x["uuid"]))
            far = self._call(
                "knowledge_get_entity_neighbors",
                {"entity_uuid": same[0]["uuid"], "num_results": _SLOT_LIMIT, "group_ids": groups},
            )
            names |= {name_key(str(x["name"])) for x in far["nodes"]}
        return names

    def source_names(self, source: str, groups: list[str]) -> set[str]:
        """``knowledge_get_entities_by_source``' names."""
        found = self._call(
            "knowledge_get_entities_by_source",
            {"source": source, "num_results": _SLOT_LIMIT, "group_ids": groups},
        )
        return {name_key(str(x["name"])) for x in found["nodes"]}


def run_check(
    reads: CheckReads | Workspace, questions: list[GoldenQuestion], groups: list[str]
) -> CheckReport:
    """Ask every golden question (over ``groups``) and score the answers; ``reads`` is a
    workspace open here, or the reads of the running service (``ServiceReads``)."""
    ask: CheckReads = DirectReads(reads) if isinstance(reads, Workspace) else reads
    rows: list[CheckRow] = []
    for q in questions:
        want = [x for x in (q.expect.relevant or q.expect.entities)]
        if q.read == "entities":
            keys = {name_key(w) for w in want}
            found = ask.entities(q.query, groups, 10)
            rows.append(_ranked(q.read, q.query, [name_key(r) in keys for r in found], len(want)))
        elif q.read == "relationships":
            low = [w.lower() for w in want]
            hits = [any(w in fact.lower() for w in low) for fact in ask.facts(q.query, groups, 10)]
            rows.append(_ranked(q.read, q.query, hits, len(want)))
        elif q.read == "passages":
            hits = [
                any(src == w or src.startswith(f"{w}:") for w in want)
                for src in ask.passage_sources(q.query, groups, 10)
            ]
            rows.append(_ranked(q.read, q.query, hits, len(want)))
        else:
            if q.read == "neighbors":
                got_names = ask.neighbor_names(q.entity, groups)
                asked = q.entity
            else:
                got_names = ask.source_names(q.source, groups)
                asked = q.source
            expected = {name_key(w) for w in want}
            rows.append(
                CheckRow(
                    read=q.read,
                    ask=asked,
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
