"""Retrieval scores: the planted questions asked through the reads a client calls.

Ranked kinds score the reciprocal rank of the first answering row (MRR), whether one is in
the first three (hit@3) and answering rows among the first three over ``min(3, answers)``
(P@3). Set kinds (neighbors, by_source) score exactness, precision and recall of the set.
A question is *reachable* when its answer is in the graph at all; a perfect model must
score the maximum on every reachable question.

Also: how often the superseded fact ranks above its successor (current_only off), every
place the withdrawn document is served, the withdrawn document's fact still served as an
edge (deletion keeps derived edges, as the reference does), BM25-only parity (the share of
ranked questions whose BM25-only top three are all on the fused answer) and the compact
JSON bytes of each read.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import msgspec

from lcg.eval.corpus import Corpus
from lcg.eval.questions import RANKED, Question, plant_questions
from lcg.eval.scoring import GoldIndex
from lcg.projections import EdgeRow
from lcg.query import Searcher, graph_reads
from lcg.workspace import Workspace

__all__ = ["KindScores", "QuestionRow", "RetrievalScores", "score_retrieval"]

_LIMIT = 10
_encode = msgspec.json.encode


class QuestionRow(msgspec.Struct, frozen=True, kw_only=True):
    """One question's outcome."""

    qid: str
    kind: str
    ask: str
    reachable: bool
    rank: int | None = None
    rr: float = 0.0
    hit_at_3: bool = False
    p_at_3: float = 0.0
    exact: bool | None = None
    precision: float | None = None
    recall: float | None = None
    served_first: str = ""
    forbidden_served: bool = False
    bm25_parity: bool | None = None
    bytes: int = 0
    error: str | None = None


class KindScores(msgspec.Struct, frozen=True, kw_only=True):
    """The aggregate of one question kind."""

    questions: int
    reachable: int
    mrr: float | None = None
    hit_at_3: float | None = None
    p_at_3: float | None = None
    mrr_reachable: float | None = None
    exact: float | None = None
    precision: float | None = None
    recall: float | None = None


class RetrievalScores(msgspec.Struct, frozen=True, kw_only=True):
    """Every retrieval score, with one row per question."""

    by_kind: dict[str, KindScores]
    superseded_above_successor: int
    superseded_served_as_current: int
    withdrawn_served: int
    withdrawn_facts_served: int
    bm25_parity: float
    bytes_median: dict[str, float]
    bytes_mean: dict[str, float]
    rows: list[QuestionRow]


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _ranked(
    q: Question, ids: list[str], forbidden_hit: bool, reachable: bool, size: int
) -> QuestionRow:
    expected = set(q.expected)
    rank = next((i + 1 for i, x in enumerate(ids) if x in expected), None)
    top3 = sum(1 for x in ids[:3] if x in expected)
    return QuestionRow(
        qid=q.qid,
        kind=q.kind,
        ask=q.query,
        reachable=reachable,
        rank=rank,
        rr=round(1.0 / rank, 4) if rank else 0.0,
        hit_at_3=rank is not None and rank <= 3,
        p_at_3=round(top3 / min(3, len(expected)), 4) if expected else 0.0,
        served_first=ids[0] if ids else "",
        forbidden_served=forbidden_hit,
        bytes=size,
    )


def _as_set(q: Question, got: set[str], ask: str, reachable: bool, size: int) -> QuestionRow:
    want = set(q.expected)
    inter = len(want & got)
    return QuestionRow(
        qid=q.qid,
        kind=q.kind,
        ask=ask,
        reachable=reachable,
        exact=got == want,
        precision=round(inter / len(got), 4) if got else (1.0 if not want else 0.0),
        recall=round(inter / len(want), 4) if want else 1.0,
        bytes=size,
    )


def score_retrieval(
    ws: Workspace, group: str, corpus: Corpus, questions: list[Question] | None = None
) -> RetrievalScores:
    """Ask every planted question of the scored workspace and score the answers."""
    qs = questions if questions is not None else plant_questions(corpus.gold)
    rows: list[QuestionRow] = []
    bytes_by_read: dict[str, list[int]] = {}
    with ws.reading():
        asker = _Asker(ws, group, corpus)
        for q in qs:
            row = asker.ask(q)
            rows.append(row)
            bytes_by_read.setdefault(q.read, []).append(row.bytes)
    parity = asker.parity
    return RetrievalScores(
        by_kind=_by_kind(rows),
        superseded_above_successor=asker.above,
        superseded_served_as_current=asker.as_current,
        withdrawn_served=asker.w_served,
        withdrawn_facts_served=asker.w_facts,
        bm25_parity=round(sum(parity) / len(parity), 4) if parity else 1.0,
        bytes_median={k: float(statistics.median(v)) for k, v in sorted(bytes_by_read.items())},
        bytes_mean={k: round(statistics.fmean(v), 1) for k, v in sorted(bytes_by_read.items())},
        rows=rows,
    )


def _by_kind(rows: list[QuestionRow]) -> dict[str, KindScores]:
    """The aggregate of each question kind, in the order the kinds first come."""
    by_kind: dict[str, KindScores] = {}
    for kind in dict.fromkeys(r.kind for r in rows):
        kr = [r for r in rows if r.kind == kind]
        reached = [r for r in kr if r.reachable]
        if kind in RANKED:
            by_kind[kind] = KindScores(
                questions=len(kr),
                reachable=len(reached),
                mrr=_mean([r.rr for r in kr]),
                hit_at_3=_mean([float(r.hit_at_3) for r in kr]),
                p_at_3=_mean([r.p_at_3 for r in kr]),
                mrr_reachable=_mean([r.rr for r in reached]),
            )
        else:
            by_kind[kind] = KindScores(
                questions=len(kr),
                reachable=len(reached),
                exact=_mean([float(bool(r.exact)) for r in kr]),
                precision=_mean([r.precision or 0.0 for r in kr]),
                recall=_mean([r.recall or 0.0 for r in kr]),
            )
    return by_kind


class _Asker:
    """Asks the questions of one scored group (under the caller's read hold), one read per
    question kind, and counts what the rows do not hold: the superseded fact above its
    successor, the withdrawn document served, BM25-only parity."""

    def __init__(self, ws: Workspace, group: str, corpus: Corpus) -> None:
        gold = corpus.gold
        self.ws, self.group, self.corpus = ws, group, corpus
        self.index = index = GoldIndex(gold)
        withdrawn = gold.withdrawn()
        self.w_id = withdrawn.doc_id if withdrawn else None
        self.w_path = withdrawn.path if withdrawn else None
        self.fact_triple = {f.key: (f.relation, f.source, f.target) for f in gold.facts}
        self.w_triples = {self.fact_triple[k] for k in withdrawn.facts} if withdrawn else set()
        self.searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
        nodes = graph_reads.nodes_by_group(ws.graph, [group])
        self.node_of: dict[str, str] = {}
        for n in nodes:
            self.node_of.setdefault(index.identity(n.name), n.uuid)
        self.ident = {n.uuid: index.identity(n.name) for n in nodes}
        self.present_triples = {
            self.triple(e) for e in graph_reads.edges_by_group(ws.graph, [group])
        }
        self.parity: list[bool] = []
        self.above = self.as_current = self.w_served = self.w_facts = 0

    def triple(self, e: EdgeRow) -> tuple[str, str, str]:
        """(relation, source identity, target identity) of an edge of the graph."""
        return (
            e.relation_type or "",
            self.ident.get(e.source_node_uuid, "?"),
            self.ident.get(e.target_node_uuid, "?"),
        )

    def served_withdrawn(self, descs: Sequence[str]) -> int:
        """How many of ``descs`` are the withdrawn document's."""
        return sum(1 for d in descs if self.w_path and d.startswith(self.w_path))

    def ask(self, q: Question) -> QuestionRow:
        """``q``'s row: its read's answer scored; a read that raises is a miss, named."""
        before = len(self.parity)
        read = {
            "entities": self.entities,
            "relationships": self.relationships,
            "passages": self.passages,
            "neighbors": self.neighbors,
        }.get(q.read, self.by_source)
        try:
            row = read(q)
        except Exception as exc:  # a read that raises is scored as a miss, and named
            row = QuestionRow(qid=q.qid, kind=q.kind, ask=q.query, reachable=True, error=repr(exc))
        if len(self.parity) > before:
            row = msgspec.structs.replace(row, bm25_parity=self.parity[-1])
        return row

    def entities(self, q: Question) -> QuestionRow:
        """``knowledge_find_entities``, ranked."""
        found = self.searcher.find_entities(q.query, [self.group], _LIMIT)
        ids = [self.index.identity(r.name) for r in found]
        reach = any(k in self.node_of for k in q.expected)
        row = _ranked(q, ids, False, reach, len(_encode(found)))
        lite = self.searcher.find_entities(q.query, [self.group], _LIMIT, mode="bm25")
        self.parity.append({r.uuid for r in lite[:3]} <= {r.uuid for r in found})
        for r in found:
            self.w_served += self.served_withdrawn(r.source_descriptions)
        return row

    def relationships(self, q: Question) -> QuestionRow:
        """``knowledge_find_relationships``, ranked; a ``current`` question also counts the
        superseded fact served as current, or above its successor without ``current_only``."""
        search, group = self.searcher, [self.group]
        found_e = search.find_relationships(q.query, group, _LIMIT, current_only=q.current_only)
        want = {self.fact_triple[k] for k in q.expected}
        bad = {self.fact_triple[k] for k in q.forbidden}
        ids = [q.expected[0] if self.triple(e) in want else f"edge:{e.fact}" for e in found_e]
        hit_bad = any(self.triple(e) in bad for e in found_e)
        self.w_facts += sum(1 for e in found_e if self.triple(e) in self.w_triples)
        reach = bool(want & self.present_triples)
        row = _ranked(q, ids, hit_bad, reach, len(_encode(found_e)))
        if q.kind == "current":
            self.as_current += int(hit_bad)
            ranks = [self.triple(e) for e in search.find_relationships(q.query, group, _LIMIT)]
            r_bad = next((i for i, t in enumerate(ranks) if t in bad), None)
            r_good = next((i for i, t in enumerate(ranks) if t in want), None)
            if r_bad is not None and (r_good is None or r_bad < r_good):
                self.above += 1
        else:
            lite_e = search.find_relationships(
                q.query, group, _LIMIT, current_only=q.current_only, mode="bm25"
            )
            self.parity.append({e.uuid for e in lite_e[:3]} <= {e.uuid for e in found_e})
        return row

    def passages(self, q: Question) -> QuestionRow:
        """``knowledge_search_passages``, ranked."""
        # The ranking is scored, not the cosine floor (min_score, ADR 0173): a client's
        # threshold depends on its embedder, the order does not.
        found_p = self.searcher.search_passages(q.query, [self.group], _LIMIT, 0.0)
        ids = [p.name for p in found_p]
        hit_bad = any(p.name in q.forbidden for p in found_p)
        self.w_served += sum(1 for p in found_p if self.w_id and p.name == self.w_id)
        reach = bool(set(q.expected) & set(corpus_ids(self.corpus, self.w_id)))
        row = _ranked(q, ids, hit_bad, reach, len(_encode(found_p)))
        lite_p = self.searcher.search_passages(q.query, [self.group], _LIMIT, mode="bm25")
        self.parity.append({p.uuid for p in lite_p[:3]} <= {p.uuid for p in found_p})
        return row

    def neighbors(self, q: Question) -> QuestionRow:
        """``knowledge_get_entity_neighbors``, as a set."""
        uuid = self.node_of.get(q.entity)
        got: set[str] = set()
        size = 0
        if uuid is not None:
            far, edges = graph_reads.entity_neighbors(self.ws.graph, uuid, 100, [self.group])
            got = {self.index.identity(x.name) for x in far}
            size = len(_encode([far, edges]))
            for x in far:
                self.w_served += self.served_withdrawn(x.source_descriptions)
        return _as_set(q, got, q.entity, uuid is not None, size)

    def by_source(self, q: Question) -> QuestionRow:
        """``knowledge_get_entities_by_source``, as a set."""
        found_s = graph_reads.entities_by_source(self.ws.graph, q.source, 100, [self.group])
        got = {self.index.identity(x.name) for x in found_s}
        for x in found_s:
            self.w_served += self.served_withdrawn(x.source_descriptions)
        return _as_set(q, got, q.source, True, len(_encode(found_s)))


def corpus_ids(corpus: Corpus, withdrawn: str | None) -> list[str]:
    """The ids of the documents still in the corpus after the withdrawal."""
    return [d.doc_id for d in corpus.documents if d.doc_id != withdrawn]
