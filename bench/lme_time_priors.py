"""Offline study of the passage fusion's time priors on LongMemEval dev (ADR 0094).

Not a pytest benchmark: a script (``python bench/lme_time_priors.py <workspace>``) that, like
``bench/lme_fusion_cv.py``, takes the MiniLM vectors from the embedding cache of a workspace
that ``lcg eval longmemeval`` filled and scores every leg exactly, session by session, asked at
each question's date. It then evaluates the window prior's weight, the recency prior's weight
and half-life, over a grid, on all dev questions and on the questions whose youngest evidence
session is at least 15 days old (the ones a recency prior can only hurt), and cross-validates
the whole family (5 folds, seed 7, as ADR 0092). The chosen default is confirmed end to end
by ``lcg eval longmemeval``.
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
from lme_fusion_cv import (
    DATA,
    dense,
    turn_and_session_indexes,
)  # the same data folder and BM25 scoring as that study

from lcg.eval.longmemeval import _date, _load, _turns
from lcg.extract.embedders import LocalEmbedder
from lcg.projections._analyzer import term_counts
from lcg.projections.cache import EmbeddingCache, embed_with_cache
from lcg.query._when import parse_time, recency_prior, resolve_windows, time_prior

DISCOUNT = 1 / np.log2(np.arange(10) + 2)
#: Questions whose youngest evidence session is at least this old at the asking time.
OLD_DAYS = 15.0


def _scores(session_scores: np.ndarray, gold: np.ndarray) -> tuple[float, float, float]:
    top = np.argsort(-session_scores, kind="stable")[:10]
    hits = gold[top]
    n = int(gold.sum())
    ndcg = float((hits * DISCOUNT).sum() / DISCOUNT[: min(10, n)].sum())
    return float(hits[:5].sum() / n), float(hits.sum() / n), ndcg


def main() -> None:
    workspace = Path(sys.argv[1])
    if not (DATA / "sessions.jsonl").is_file():
        sys.exit(f"LongMemEval dev data not found: expected {DATA}/sessions.jsonl (../shared/data)")
    sessions, questions = _load(DATA)
    turns = _turns(sessions)
    sess_ids = list(dict.fromkeys(t[1] for t in turns))
    sidx = {s: i for i, s in enumerate(sess_ids)}
    turn_sess = np.array([sidx[t[1]] for t in turns])
    starts = np.flatnonzero(np.r_[True, np.diff(turn_sess) != 0])
    order = {t[0]: i for i, t in enumerate(turns)}
    n, ns = len(turns), len(sess_ids)
    sess_time = {t[1]: parse_time(t[2]) for t in turns}

    emb = LocalEmbedder()
    cache = EmbeddingCache.for_embedder(workspace / ".lcg" / "cache", emb)
    mat = embed_with_cache(emb, cache, [t[3] for t in turns])
    qmat = embed_with_cache(emb, cache, [q.question for q in questions])
    print("vectors", mat.shape, "cache misses", cache.misses, flush=True)
    chunk, source = turn_and_session_indexes(turns, term_counts)

    # Per question: the default leg fusion without priors, the window prior, the age in days.
    base, window, ages, admitted, gold = [], [], [], [], []
    for i, q in enumerate(questions):
        asked = parse_time(_date(q.question_date))
        terms = sorted(term_counts(q.question))
        cb = dense(chunk, terms, order, n)
        sb = dense(source, terms, sidx, ns)
        cos = mat @ qmat[i]
        floor = -np.partition(-cos, 49)[49]
        cos_n = np.clip((cos - floor) / (cos.max() - floor), 0, None)
        best = np.maximum.reduceat(cb / max(cb.max(), 1e-9) + 0.25 * cos_n, starts)
        sv = np.maximum.reduceat(cos_n, starts)
        base.append(best + 0.5 * sb / max(sb.max(), 1e-9) + 0.25 * sv)
        wins = resolve_windows(q.question, asked)
        window.append(np.array([time_prior(sess_time[s], wins) if wins else 0.0 for s in sess_ids]))
        ages.append(np.array([(asked - sess_time[s]).total_seconds() / 86400 for s in sess_ids]))
        admitted.append(ages[-1] >= 0)
        gold.append(np.array([s in set(q.answer_session_ids) for s in sess_ids]))
    youngest = np.array(
        [
            ages[i][gold[i] & admitted[i]].min() if (gold[i] & admitted[i]).any() else -1.0
            for i in range(len(questions))
        ]
    )
    old = youngest >= OLD_DAYS
    print(f"questions {len(questions)}; youngest evidence >= {OLD_DAYS:g} days: {int(old.sum())}")

    grid = list(
        itertools.product((0.5, 1.0), (0.0, 0.1, 0.2, 0.3, 0.5, 0.75), (2.0, 5.0, 10.0, 21.0))
    )
    res = np.zeros((len(grid), len(questions), 3))
    for gi, (w_time, w_recency, half_life) in enumerate(grid):
        for i in range(len(questions)):
            recency = np.exp2(-np.clip(ages[i], 0, None) / half_life)
            s = base[i] + w_time * window[i] + w_recency * recency
            res[gi, i] = _scores(np.where(admitted[i], s, s - 10.0), gold[i])
    print(f"{'time':>5} {'recency':>7} {'half-life':>9} | all R@5 R@10 nDCG@10 | old R@10 nDCG@10")
    for gi, (w_time, w_recency, half_life) in enumerate(grid):
        if w_recency == 0 and half_life != 5.0:
            continue  # the same row for every half-life
        a, o = res[gi].mean(axis=0), res[gi][old].mean(axis=0)
        print(
            f"{w_time:>5} {w_recency:>7} {half_life:>9} | {a[0]:.4f} {a[1]:.4f} {a[2]:.4f}"
            f" | {o[1]:.3f} {o[2]:.3f}"
        )
    objective = res[:, :, 1] + res[:, :, 2]
    perm = np.random.default_rng(7).permutation(len(questions))
    for label, cap in (("no recency", 0.0), ("recency <= 0.3", 0.3), ("recency <= 0.75", 0.75)):
        candidates = [gi for gi, g in enumerate(grid) if g[1] <= cap]
        total = np.zeros(3)
        for fold in np.array_split(perm, 5):
            train = np.setdiff1d(perm, fold)
            pick = max(candidates, key=lambda gi: objective[gi, train].mean())
            total += res[pick, fold].sum(axis=0)
        cv = total / len(questions)
        print(f"CV {label}: R@5 {cv[0]:.4f} R@10 {cv[1]:.4f} nDCG@10 {cv[2]:.4f}")
    chosen = grid.index((1.0, 0.3, 5.0))
    print(
        "chosen (time 1.0, recency 0.3, half-life 5 days):", np.round(res[chosen].mean(axis=0), 4)
    )
    assert math.isclose(recency_prior(sess_time[sess_ids[0]], sess_time[sess_ids[0]], 5.0), 1.0)


if __name__ == "__main__":
    main()
