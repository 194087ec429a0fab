"""Retrieval over LongMemEval (dev split): sessions ranked for each question.

Every turn of every session becomes one episode (``chunk_id`` = ``<session>#<turn>``, source =
the session id, reference time = the session date). For each question, passages are retrieved
through ``Searcher.search_passages`` (what ``knowledge_search_passages`` runs) and mapped to
their sessions in rank order; session recall@5, recall@10 and nDCG@10 are scored against
``answer_session_ids``, overall and recall@10 per question type. Methods: the default
(weighted fusion), the reference's RRF, each passage leg alone and each left out (ablations),
and the default asked at the question's date (``as_of``). Next to lcg's own legs the same
inputs are ranked by ``bm25s`` (when installed) and by exact brute-force cosine over the same
vectors, and the hnswlib index's recall@10 against brute force is measured.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path

import msgspec
import numpy as np

from lcg import timestamps
from lcg.config import Config
from lcg.events import EpisodeAdded, Event, chunk_description
from lcg.extract import Embedder
from lcg.query import DEFAULT_HALF_LIFE_DAYS, DEFAULT_WEIGHTS, PassageWeights, Searcher
from lcg.workspace import Workspace

__all__ = ["LongMemEvalReport", "MethodScores", "run_longmemeval"]

GROUP = "longmemeval"


class _Turn(msgspec.Struct):
    role: str
    content: str


class _Session(msgspec.Struct):
    session_id: str
    date: str
    turns: list[_Turn]


class _Question(msgspec.Struct):
    question_id: str
    question_type: str
    question: str
    answer_session_ids: list[str]
    question_date: str = ""


class MethodScores(msgspec.Struct, kw_only=True):
    """Scores of one ranking method over every question."""

    method: str
    recall_at_5: float
    recall_at_10: float
    ndcg_at_10: float
    query_ms_p50: float
    #: Recall@10 per question type.
    recall_at_10_by_type: dict[str, float] = {}


class LongMemEvalReport(msgspec.Struct, kw_only=True):
    """The LongMemEval dev table."""

    questions: int
    sessions: int
    turns: int
    embedder: str
    methods: list[MethodScores]
    hnsw_recall_at_10: float
    ingest_seconds: float
    #: Turns ingested per second in this run (0 when the workspace was already filled).
    ingest_turns_per_second: float = 0.0


def _date(raw: str) -> str:
    try:
        parsed = datetime.strptime(raw[:16], "%Y/%m/%d (%a)")
    except ValueError:
        try:
            parsed = datetime.strptime(raw.split(" (")[0], "%Y/%m/%d")
        except ValueError:
            return "2023-01-01T00:00:00.000000Z"
    return timestamps.to_text(parsed)  # the dataset's dates are naive: UTC


def _load(data_dir: Path) -> tuple[list[_Session], list[_Question]]:
    sessions = [
        msgspec.json.decode(line, type=_Session)
        for line in (data_dir / "sessions.jsonl").read_bytes().splitlines()
        if line.strip()
    ]
    questions = [
        msgspec.json.decode(line, type=_Question)
        for line in (data_dir / "questions-dev.jsonl").read_bytes().splitlines()
        if line.strip()
    ]
    return sessions, questions


def _turns(sessions: list[_Session]) -> list[tuple[str, str, str, str]]:
    """(episode uuid, session id, date, text) per non-empty turn."""
    out = []
    for s in sessions:
        for i, t in enumerate(s.turns):
            if t.content.strip():
                out.append((f"{s.session_id}#{i}", s.session_id, _date(s.date), t.content))
    return out


def _scores(ranked: list[str], gold: set[str]) -> tuple[float, float, float]:
    r5 = len(gold & set(ranked[:5])) / len(gold)
    r10 = len(gold & set(ranked[:10])) / len(gold)
    dcg = sum(1.0 / math.log2(i + 2) for i, s in enumerate(ranked[:10]) if s in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(10, len(gold))))
    return r5, r10, dcg / ideal if ideal else 0.0


def _sessions_of(turn_ids: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for tid in turn_ids:
        seen.setdefault(tid.rsplit("#", 1)[0], None)
    return list(seen)


def _evaluate(
    name: str, questions: list[_Question], rank: Callable[[_Question], list[str]]
) -> MethodScores:
    totals = [0.0, 0.0, 0.0]
    times: list[float] = []
    by_type: dict[str, list[float]] = {}
    for q in questions:
        t0 = time.perf_counter()
        turn_ids = rank(q)
        times.append((time.perf_counter() - t0) * 1000)
        scores = _scores(_sessions_of(turn_ids), set(q.answer_session_ids))
        for i, v in enumerate(scores):
            totals[i] += v
        by_type.setdefault(q.question_type, []).append(scores[1])
    n = len(questions)
    return MethodScores(
        method=name,
        recall_at_5=round(totals[0] / n, 4),
        recall_at_10=round(totals[1] / n, 4),
        ndcg_at_10=round(totals[2] / n, 4),
        query_ms_p50=round(float(np.median(times)), 3),
        recall_at_10_by_type={t: round(sum(v) / len(v), 4) for t, v in sorted(by_type.items())},
    )


#: Ablations of the default weighted fusion: each passage leg alone, and each left out.
_LEGS = ("chunk_bm25", "chunk_vector", "source_bm25", "source_vector")
_NO_TIME_PRIORS = PassageWeights(time=0.0, recency=0.0)


def run_longmemeval(
    data_dir: Path,
    workspace: Path,
    embedder: Embedder,
    *,
    pool: int = 100,
    progress: Callable[[int, int], None] | None = None,
    scoring: Callable[[str], None] | None = None,
    with_bm25s: bool = True,
    ablations: bool = True,
) -> LongMemEvalReport:
    """Ingest the sessions into ``workspace`` (reused when already there) and score retrieval.

    ``progress(done, total)`` follows the ingest, ``scoring(method)`` names each ranking method
    as its questions start.
    """
    sessions, questions = _load(data_dir)
    turns = _turns(sessions)
    cfg = Config.from_env(workspace, env={"LCG_EMBEDDER": "hash"})

    def evaluate(name: str, rank: _Rank) -> MethodScores:
        if scoring is not None:
            scoring(name)
        return _evaluate(name, questions, rank)

    with Workspace.open(cfg, embedder) as ws:
        started = time.perf_counter()
        ingested = _ingest(ws, turns, progress)
        ingest_s = time.perf_counter() - started
        ours = _Ours(Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder), pool)
        methods = [evaluate(name, rank) for name, rank in ours.methods(ablations=ablations)]
        exact = _Exact(ws, turns, pool)
        methods.append(evaluate("exact cosine (numpy)", exact.rank))
        hnsw_recall = exact.hnsw_recall(questions)
        rank_bm25s = _bm25s(turns, pool) if with_bm25s else None
        if rank_bm25s is not None:
            methods.append(evaluate("bm25s", rank_bm25s))
    return LongMemEvalReport(
        questions=len(questions),
        sessions=len(sessions),
        turns=len(turns),
        embedder=embedder.model_id,
        methods=methods,
        hnsw_recall_at_10=round(hnsw_recall, 4),
        ingest_seconds=round(ingest_s, 1),
        ingest_turns_per_second=round(ingested / ingest_s, 1) if ingested and ingest_s else 0.0,
    )


#: A ranking method: a question's episode uuids, best first.
_Rank = Callable[[_Question], list[str]]


def _ingest(
    ws: Workspace,
    turns: list[tuple[str, str, str, str]],
    progress: Callable[[int, int], None] | None,
) -> int:
    """Record one episode per turn unless the workspace holds them all; how many recorded."""
    have = ws.graph.counts(GROUP).episodes
    if have >= len(turns):
        return 0
    if have:
        from lcg.ingest import delete_by_group

        delete_by_group(ws, [GROUP], confirm=True, dry_run=False)
    batch: list[Event] = []
    done = 0
    for uuid, session_id, date, text in turns:
        batch.append(
            EpisodeAdded(
                group_id=GROUP,
                uuid=uuid,
                name=uuid,
                source_description=chunk_description(session_id, uuid),
                content=text,
                created_at=date,
                valid_at=date,
            )
        )
        if len(batch) == 256:
            ws.commit(GROUP, batch)
            done += len(batch)
            batch = []
            if progress is not None:
                progress(done, len(turns))
    if batch:
        ws.commit(GROUP, batch)
    ws.projector.save()
    return len(turns)


class _Ours:
    """lcg's own rankings: ``search_passages`` over a pool, in each mode, fusion and weights."""

    def __init__(self, searcher: Searcher, pool: int) -> None:
        self.searcher, self.pool = searcher, pool

    def methods(self, *, ablations: bool) -> Iterator[tuple[str, _Rank]]:
        """Each named ranking, in the report's order."""
        ours = self.ranking
        yield "lcg default (weighted)", ours()
        yield "lcg default, as_of question date", ours(as_of=True)
        yield "lcg as_of, recency prior off", ours(as_of=True, half_life=0.0)
        yield (
            "lcg as_of, both time priors off",
            ours(as_of=True, half_life=0.0, weights=_NO_TIME_PRIORS),
        )
        yield "lcg fused (rrf)", ours(fusion="rrf")
        yield "lcg rrf, as_of question date", ours(fusion="rrf", as_of=True)
        yield "lcg bm25 (weighted)", ours("bm25")
        yield "lcg vector (weighted)", ours("vector")
        yield "lcg bm25 (rrf)", ours("bm25", "rrf")
        yield "lcg vector (rrf, hnsw)", ours("vector", "rrf")
        if ablations:  # asked at the question's date, as a client that knows the date asks
            zero = {leg: 0.0 for leg in _LEGS}
            for leg in _LEGS:
                only = msgspec.structs.replace(DEFAULT_WEIGHTS, **{**zero, leg: 1.0})
                yield f"as_of, only {leg}", ours(weights=only, as_of=True)
                without = msgspec.structs.replace(DEFAULT_WEIGHTS, **{leg: 0.0})
                yield f"as_of, without {leg}", ours(weights=without, as_of=True)

    def ranking(
        self,
        mode: str = "hybrid",
        fusion: str = "weighted",
        weights: PassageWeights | None = None,
        as_of: bool = False,
        half_life: float = DEFAULT_HALF_LIFE_DAYS,
    ) -> _Rank:
        """``search_passages`` with these settings, as a ranking method."""

        def rank(q: _Question) -> list[str]:
            rows = self.searcher.search_passages(
                q.question,
                [GROUP],
                self.pool,
                0.0,
                mode=mode,  # type: ignore[arg-type]
                fusion=fusion,  # type: ignore[arg-type]
                weights=weights,
                as_of=_date(q.question_date) if as_of and q.question_date else None,
                recency_half_life_days=half_life,
            )
            return [r.uuid for r in rows]

        return rank


class _Exact:
    """Exact cosine over every turn's vector (numpy): a ranking, and the yardstick of the
    HNSW index's recall."""

    def __init__(self, ws: Workspace, turns: list[tuple[str, str, str, str]], pool: int) -> None:
        self.ws, self.pool = ws, pool
        self.ids = [t[0] for t in turns]
        texts = [t[3] for t in turns]
        vectors = ws.text_embedder.vectors(texts)
        self.matrix = np.stack([vectors[t] for t in texts]).astype(np.float32)

    def rank(self, question: _Question) -> list[str]:
        """The ``pool`` turns nearest the question, best first."""
        query = question.question
        q = self.ws.text_embedder.vectors([query])[query]
        sims = self.matrix @ q
        top = np.argpartition(-sims, self.pool)[: self.pool]
        return [self.ids[i] for i in top[np.argsort(-sims[top])]]

    def hnsw_recall(self, questions: list[_Question]) -> float:
        """The share of the exact ten nearest that the HNSW index's ten hold."""
        hits = 0
        for q in questions:
            qv = self.ws.text_embedder.vectors([q.question])[q.question]
            approx = {
                u for u, _s, _g in self.ws.vectors.search_groups([GROUP], "episode.content", qv, 10)
            }
            sims = self.matrix @ qv
            exact = {self.ids[i] for i in np.argpartition(-sims, 10)[:10]}
            hits += len(approx & exact)
        return hits / (10 * len(questions))


def _bm25s(turns: list[tuple[str, str, str, str]], pool: int) -> _Rank | None:
    """The ``bm25s`` package's ranking over the turns (``None``: it is not installed)."""
    try:
        import bm25s
    except ImportError:
        return None
    ids = [t[0] for t in turns]
    tokens = bm25s.tokenize([t[3] for t in turns], stopwords="en", show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)

    def rank_bm25s(question: _Question) -> list[str]:
        qt = bm25s.tokenize([question.question], stopwords="en", show_progress=False)
        docs, _scores_ = retriever.retrieve(qt, k=pool, show_progress=False)
        return [ids[int(i)] for i in docs[0]]

    return rank_bm25s
