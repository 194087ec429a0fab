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
from lcg.projections import EdgeRow, Searcher, graph_reads
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
    gold = corpus.gold
    index = GoldIndex(gold)
    qs = questions if questions is not None else plant_questions(gold)
    withdrawn = gold.withdrawn()
    w_id = withdrawn.doc_id if withdrawn else None
    w_path = withdrawn.path if withdrawn else None
    w_triples = (
        {(gold.fact(k).relation, gold.fact(k).source, gold.fact(k).target) for k in withdrawn.facts}
        if withdrawn
        else set()
    )
    fact_triple = {f.key: (f.relation, f.source, f.target) for f in gold.facts}
    rows: list[QuestionRow] = []
    bytes_by_read: dict[str, list[int]] = {}
    parity: list[bool] = []
    above = as_current = w_served = w_facts = 0
    searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
    with ws.reading():
        nodes = graph_reads.nodes_by_group(ws.graph, [group])
        node_of: dict[str, str] = {}
        for n in nodes:
            node_of.setdefault(index.identity(n.name), n.uuid)
        all_edges = graph_reads.edges_by_group(ws.graph, [group])
        ident = {n.uuid: index.identity(n.name) for n in nodes}

        def triple(e: EdgeRow) -> tuple[str, str, str]:
            return (
                e.relation_type or "",
                ident.get(e.source_node_uuid, "?"),
                ident.get(e.target_node_uuid, "?"),
            )

        present_triples = {triple(e) for e in all_edges}

        def served_withdrawn(descs: Sequence[str]) -> int:
            return sum(1 for d in descs if w_path and d.startswith(w_path))

        for q in qs:
            row: QuestionRow
            before = len(parity)
            try:
                if q.read == "entities":
                    found = searcher.find_entities(q.query, [group], _LIMIT)
                    ids = [index.identity(r.name) for r in found]
                    size = len(_encode(found))
                    reach = any(k in node_of for k in q.expected)
                    row = _ranked(q, ids, False, reach, size)
                    lite = searcher.find_entities(q.query, [group], _LIMIT, mode="bm25")
                    parity.append({r.uuid for r in lite[:3]} <= {r.uuid for r in found})
                    for r in found:
                        w_served += served_withdrawn(r.source_descriptions)
                elif q.read == "relationships":
                    found_e = searcher.find_relationships(
                        q.query, [group], _LIMIT, current_only=q.current_only
                    )
                    want = {fact_triple[k] for k in q.expected}
                    bad = {fact_triple[k] for k in q.forbidden}
                    ids = [
                        q.expected[0] if triple(e) in want else f"edge:{e.fact}" for e in found_e
                    ]
                    hit_bad = any(triple(e) in bad for e in found_e)
                    w_facts += sum(1 for e in found_e if triple(e) in w_triples)
                    size = len(_encode(found_e))
                    row = _ranked(q, ids, hit_bad, bool(want & present_triples), size)
                    if q.kind == "current":
                        as_current += int(hit_bad)
                        every = searcher.find_relationships(q.query, [group], _LIMIT)
                        ranks = [triple(e) for e in every]
                        r_bad = next((i for i, t in enumerate(ranks) if t in bad), None)
                        r_good = next((i for i, t in enumerate(ranks) if t in want), None)
                        if r_bad is not None and (r_good is None or r_bad < r_good):
                            above += 1
                    else:
                        lite_e = searcher.find_relationships(
                            q.query, [group], _LIMIT, current_only=q.current_only, mode="bm25"
                        )
                        parity.append({e.uuid for e in lite_e[:3]} <= {e.uuid for e in found_e})
                elif q.read == "passages":
                    # The ranking is scored, not the cosine floor (min_score, ADR 0173): a
                    # client's threshold depends on its embedder, the order does not.
                    found_p = searcher.search_passages(q.query, [group], _LIMIT, 0.0)
                    ids = [p.name for p in found_p]
                    hit_bad = any(p.name in q.forbidden for p in found_p)
                    w_served += sum(1 for p in found_p if w_id and p.name == w_id)
                    size = len(_encode(found_p))
                    reach = bool(set(q.expected) & set(corpus_ids(corpus, w_id)))
                    row = _ranked(q, ids, hit_bad, reach, size)
                    lite_p = searcher.search_passages(q.query, [group], _LIMIT, mode="bm25")
                    parity.append({p.uuid for p in lite_p[:3]} <= {p.uuid for p in found_p})
                elif q.read == "neighbors":
                    uuid = node_of.get(q.entity)
                    got: set[str] = set()
                    size = 0
                    if uuid is not None:
                        far, edges = graph_reads.entity_neighbors(ws.graph, uuid, 100, [group])
                        got = {index.identity(x.name) for x in far}
                        size = len(_encode([far, edges]))
                        for x in far:
                            w_served += served_withdrawn(x.source_descriptions)
                    row = _as_set(q, got, q.entity, uuid is not None, size)
                else:
                    found_s = graph_reads.entities_by_source(ws.graph, q.source, 100, [group])
                    got = {index.identity(x.name) for x in found_s}
                    for x in found_s:
                        w_served += served_withdrawn(x.source_descriptions)
                    row = _as_set(q, got, q.source, True, len(_encode(found_s)))
            except Exception as exc:  # a read that raises is scored as a miss, and named
                row = QuestionRow(
                    qid=q.qid, kind=q.kind, ask=q.query, reachable=True, error=repr(exc)
                )
            if len(parity) > before:
                row = msgspec.structs.replace(row, bm25_parity=parity[-1])
            rows.append(row)
            bytes_by_read.setdefault(q.read, []).append(row.bytes)
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
    return RetrievalScores(
        by_kind=by_kind,
        superseded_above_successor=above,
        superseded_served_as_current=as_current,
        withdrawn_served=w_served,
        withdrawn_facts_served=w_facts,
        bm25_parity=round(sum(parity) / len(parity), 4) if parity else 1.0,
        bytes_median={k: float(statistics.median(v)) for k, v in sorted(bytes_by_read.items())},
        bytes_mean={k: round(statistics.fmean(v), 1) for k, v in sorted(bytes_by_read.items())},
        rows=rows,
    )


def corpus_ids(corpus: Corpus, withdrawn: str | None) -> list[str]:
    """The ids of the documents still in the corpus after the withdrawal."""
    return [d.doc_id for d in corpus.documents if d.doc_id != withdrawn]
