"""Offline fusion study on LongMemEval dev: per-leg scores once, many fusions, 5-fold CV.

Not a pytest benchmark: a script (``python bench/lme_fusion_cv.py <workspace>``) that reads
the sessions and dev questions, takes the MiniLM vectors from the embedding cache of a
workspace that ``lcg eval longmemeval`` already filled, and scores every leg exactly over all
turns (chunk BM25, chunk cosine, source BM25, source cosine). Fusions are then evaluated
from those arrays, and the weights are chosen by 5-fold cross-validation over the questions
(ADR 0092). The chosen default is confirmed end to end by ``lcg eval longmemeval``.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lcg.eval.longmemeval import _date, _load, _turns
from lcg.extract.embedders import LocalEmbedder
from lcg.projections._analyzer import MAX_TOKEN_CHARS, STOPWORDS, term_counts, words
from lcg.projections._bm25 import Bm25Index
from lcg.projections.cache import EmbeddingCache, embed_with_cache

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "longmemeval-dev"


def plain_counts(text: str) -> dict[str, int]:
    """The analyzer before ADR 0090 (no stemming)."""
    out: dict[str, int] = {}
    for t in words(text):
        if t not in STOPWORDS and len(t) <= MAX_TOKEN_CHARS:
            out[t] = out.get(t, 0) + 1
    return out


def dense(index: Bm25Index, terms: list[str], order: dict[str, int], n: int) -> np.ndarray:
    out = np.zeros(n)
    for uuid, score in index.search(terms, n):
        out[order[uuid]] = score
    return out


def turn_and_session_indexes(
    turns: list[tuple[str, str, str, str]], counter: Callable[[str], dict[str, int]]
) -> tuple[Bm25Index, Bm25Index]:
    """A BM25 index of the turns, and one of the sessions (each the sum of its turns' terms)."""
    chunk, session = Bm25Index(), Bm25Index()
    per_session: dict[str, dict[str, int]] = {}
    for uuid, sid, _when, text in turns:
        counts = counter(text)
        chunk.add(uuid, counts)
        total = per_session.setdefault(sid, {})
        for term, c in counts.items():
            total[term] = total.get(term, 0) + c
    for sid, counts in per_session.items():
        session.add(sid, counts)
    return chunk, session


def main() -> None:
    workspace = Path(sys.argv[1])
    if not (DATA / "sessions.jsonl").is_file():
        sys.exit(f"LongMemEval dev data not found: expected {DATA}/sessions.jsonl (../shared/data)")
    sessions, questions = _load(DATA)
    raw_q = [json.loads(line) for line in (DATA / "questions-dev.jsonl").read_text().splitlines()]
    qdate = {q["question_id"]: _date(q["question_date"]) for q in raw_q}
    turns = _turns(sessions)
    ids = [t[0] for t in turns]
    sess_of_turn = [t[1] for t in turns]
    sess_ids = list(dict.fromkeys(sess_of_turn))
    sidx = {s: i for i, s in enumerate(sess_ids)}
    turn_sess = np.array([sidx[s] for s in sess_of_turn])
    sess_date = {t[1]: t[2] for t in turns}
    order = {u: i for i, u in enumerate(ids)}
    # Turns are listed session by session: each session is one contiguous run.
    starts = np.flatnonzero(np.r_[True, np.diff(np.array([sidx[s] for s in sess_of_turn])) != 0])
    sorder = {s: i for i, s in enumerate(sess_ids)}
    n, ns = len(ids), len(sess_ids)

    emb = LocalEmbedder()
    cache = EmbeddingCache.for_embedder(workspace / ".lcg" / "cache", emb)
    mat = embed_with_cache(emb, cache, [t[3] for t in turns])
    qmat = embed_with_cache(emb, cache, [q.question for q in questions])
    print("vectors", mat.shape, "cache misses", cache.misses, flush=True)

    legs: dict[str, list[np.ndarray]] = {}
    for name, counter in (("stem", term_counts), ("plain", plain_counts)):
        chunk, src = turn_and_session_indexes(turns, counter)
        cb, sb = [], []
        for q in questions:
            terms = sorted(counter(q.question))
            cb.append(dense(chunk, terms, order, n))
            sb.append(dense(src, terms, sorder, ns))
        legs[f"cb_{name}"] = cb
        legs[f"sb_{name}"] = sb
    cv = [mat @ qmat[i] for i in range(len(questions))]
    legs["cv"] = cv
    svmax, svtop2 = [], []
    for c in cv:
        m = np.full(ns, -1.0)
        np.maximum.at(m, turn_sess, c)
        svmax.append(m)
        # mean of the best two chunks of each session
        o = np.lexsort((-c, turn_sess))
        best2 = np.zeros(ns)
        cnt = np.zeros(ns)
        for i in o:
            s = turn_sess[i]
            if cnt[s] < 2:
                best2[s] += c[i]
                cnt[s] += 1
        svtop2.append(best2 / np.maximum(cnt, 1))
    legs["sv_max"] = svmax
    legs["sv_top2"] = svtop2
    gold = [{sidx[s] for s in q.answer_session_ids if s in sidx} for q in questions]
    asked = [qdate[q.question_id] for q in questions]
    sdates = np.array([sess_date[s] for s in sess_ids])
    future = [sdates > a for a in asked]
    qtypes = [q.question_type for q in questions]

    def score_sessions(ranked: np.ndarray, g: set[int]) -> tuple[float, float, float]:
        top = ranked[:10].tolist()
        r5 = len(g & set(top[:5])) / len(g)
        r10 = len(g & set(top)) / len(g)
        dcg = sum(1 / math.log2(i + 2) for i, s in enumerate(top) if s in g)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(g))))
        return r5, r10, dcg / ideal

    def norm(x: np.ndarray, how: str) -> np.ndarray:
        top = x.max()
        if how == "max":
            return x / top if top > 0 else x
        # min-max between the best and the 50th best (what the searcher does)
        k = min(49, len(x) - 1)
        floor = -np.partition(-x, k)[k]
        return np.clip((x - floor) / (top - floor), 0, None) if top > floor else x * 0

    def evaluate(
        fn: Callable[[int], np.ndarray], qs: list[int]
    ) -> tuple[float, float, float, dict[str, list[float]]]:
        tot = np.zeros(3)
        by: dict[str, list[float]] = {}
        for i in qs:
            s = fn(i)
            r = score_sessions(np.argsort(-s, kind="stable"), gold[i])
            tot += r
            by.setdefault(qtypes[i], []).append(r[1])
        m = tot / len(qs)
        return float(m[0]), float(m[1]), float(m[2]), by

    normed: dict[tuple[str, str, int], np.ndarray] = {}

    def leg(name: str, how: str, i: int) -> np.ndarray:
        key = (name, how, i)
        v = normed.get(key)
        if v is None:
            if name.startswith("sv") and how == "mm":
                # Source cosines share the chunk cosines' scale (as in the searcher).
                c = legs["cv"][i]
                top = c.max()
                floor = -np.partition(-c, 49)[49]
                v = np.clip((legs[name][i] - floor) / (top - floor), 0, None)
            else:
                v = norm(legs[name][i], how)
            normed[key] = v
        return v

    def fused(
        w: tuple[float, float, float, float],
        stem: str = "stem",
        sv: str = "sv_max",
        cvn: str = "mm",
        asof: bool = False,
    ) -> Callable[[int], np.ndarray]:
        wcb, wcv, wsb, wsv = w

        def fn(i: int) -> np.ndarray:
            p = wcb * leg(f"cb_{stem}", "max", i) + wcv * leg("cv", cvn, i)
            best = np.maximum.reduceat(p, starts)
            s = best + wsb * leg(f"sb_{stem}", "max", i) + wsv * leg(sv, cvn, i)
            if asof:
                s = np.where(future[i], s - 10.0, s)
            return s

        return fn

    def rrf(stem: str = "stem", asof: bool = False) -> Callable[[int], np.ndarray]:
        def fn(i: int) -> np.ndarray:
            rr = np.zeros(n)
            for leg in (legs[f"cb_{stem}"][i], legs["cv"][i]):
                top = np.argsort(-leg, kind="stable")[:300]
                top = top[leg[top] > 0] if leg is legs[f"cb_{stem}"][i] else top
                rr[top] += 1 / (np.arange(len(top)) + 60)
            best = np.zeros(ns)
            np.maximum.at(best, turn_sess, rr)
            if asof:
                best = np.where(future[i], best - 10.0, best)
            return best

        return fn

    allq = list(range(len(questions)))
    rows: list[tuple[str, tuple[float, float, float, dict[str, list[float]]]]] = []
    rows.append(("rrf chunk legs (plain)", evaluate(rrf("plain"), allq)))
    rows.append(("rrf chunk legs (stem)", evaluate(rrf("stem"), allq)))
    single = {
        "cb plain": (1, 0, 0, 0),
        "cv": (0, 1, 0, 0),
    }
    for name, w in single.items():
        rows.append((name, evaluate(fused(w, stem="plain"), allq)))
    rows.append(("cb stem", evaluate(fused((1, 0, 0, 0)), allq)))
    rows.append(("sb stem", evaluate(fused((0, 0, 1, 0)), allq)))
    rows.append(("sb plain", evaluate(fused((0, 0, 1, 0), stem="plain"), allq)))
    rows.append(("sv max", evaluate(fused((0, 0, 0, 1)), allq)))
    rows.append(("sv top2", evaluate(fused((0, 0, 0, 1), sv="sv_top2"), allq)))
    for name, r in rows:
        print(f"{name:<28} R@5 {r[0]:.4f} R@10 {r[1]:.4f} nDCG {r[2]:.4f}", flush=True)

    grid = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5]
    configs = []
    for sv, cvn, asof in itertools.product(("sv_max", "sv_top2"), ("mm", "max"), (False, True)):
        for w in itertools.product(grid, grid, grid, grid):
            if sum(w) == 0 or max(w) != 1.0:
                continue
            configs.append((w, sv, cvn, asof))
    print("configs", len(configs), flush=True)
    # Per question, per config: (r10, ndcg) -> a matrix; CV picks the best column on train.
    res = np.zeros((len(configs), len(questions), 3))
    for ci, (w, sv, cvn, asof) in enumerate(configs):
        fn = fused(w, sv=sv, cvn=cvn, asof=asof)
        for i in allq:
            sc = fn(i)
            top = np.argpartition(-sc, 10)[:10]
            res[ci, i] = score_sessions(top[np.argsort(-sc[top], kind="stable")], gold[i])
    obj = res[:, :, 1] + res[:, :, 2]
    rng = np.random.default_rng(7)
    perm = rng.permutation(len(questions))
    folds = np.array_split(perm, 5)
    for asof_ok in (False, True):
        cand = [ci for ci, c in enumerate(configs) if asof_ok or not c[3]]
        cvres = np.zeros(3)
        picks = []
        for f in folds:
            train = np.setdiff1d(perm, f)
            best = max(cand, key=lambda ci: obj[ci, train].mean())
            picks.append(configs[best])
            cvres += res[best, f].sum(axis=0)
        cvres /= len(questions)
        print(
            f"CV (as_of allowed={asof_ok}): R@5 {cvres[0]:.4f} R@10 {cvres[1]:.4f} "
            f"nDCG {cvres[2]:.4f}; fold picks {picks}"
        )
        best = max(cand, key=lambda ci: obj[ci].mean())
        m = res[best].mean(axis=0)
        print(f"  all-dev best {configs[best]}: R@5 {m[0]:.4f} R@10 {m[1]:.4f} nDCG {m[2]:.4f}")
        top = sorted(cand, key=lambda ci: -obj[ci].mean())[:8]
        for ci in top:
            m = res[ci].mean(axis=0)
            print(f"    {configs[ci]} R@10 {m[1]:.4f} nDCG {m[2]:.4f}")
    np.save(workspace / "fusion_res.npy", res)  # per question and fusion: R@5, R@10, nDCG@10
    # Stage two: the time prior's weight on top of the best as_of configuration.
    from lcg.query._when import parse_time, resolve_windows, time_prior

    best = max([ci for ci, c in enumerate(configs) if c[3]], key=lambda ci: obj[ci].mean())
    w, sv, cvn, _ = configs[best]
    prior = []
    for i, q in enumerate(questions):
        wins = resolve_windows(q.question, parse_time(asked[i]))
        prior.append(
            np.array([time_prior(parse_time(d), wins) for d in sdates]) if wins else np.zeros(ns)
        )
    print("questions with a time window:", sum(1 for p_ in prior if p_.any()))
    base = fused(w, sv=sv, cvn=cvn, asof=True)
    for wt in (0.0, 0.1, 0.2, 0.3, 0.5, 1.0):
        r = evaluate(lambda i, wt=wt: base(i) + wt * prior[i], allq)
        tr = np.mean(r[3]["temporal-reasoning"])
        print(f"time weight {wt}: R@10 {r[1]:.4f} nDCG {r[2]:.4f} temporal R@10 {tr:.4f}")
    for label, cfg in (("best as_of", configs[best]),):
        r = evaluate(fused(cfg[0], sv=cfg[1], cvn=cfg[2], asof=cfg[3]), allq)
        print(label, {k: round(float(np.mean(v)), 3) for k, v in sorted(r[3].items())})


if __name__ == "__main__":
    main()
