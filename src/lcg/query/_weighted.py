"""The weighted fusion of passages (``fusion="weighted"``, ADR 0092 and ADR 0094): the sum
``lcg.query.search`` orders passages by, once it has gathered their legs.

* ``PassageWeights`` — the weight of each leg and of each time prior (``lcg.query.search``
  offers it);
* ``PassageLegs`` — what the legs found: each chunk's BM25 score and cosine, each source's
  BM25 score, the group and source of each candidate, the vector leg's zero;
* ``Priors`` — the time priors' inputs: the asking time, the windows the query names, the
  reference times, the chunks of file trees (no recency bonus: ADR 0198);
* ``weighted_order`` — each leg normalised over the admitted candidates and summed with its
  weight, the priors added: best first, ties by uuid;
* ``floor_and_page`` — the cosine floor (the same rule as RRF's) and the page, counting in
  the ``FloorReport`` the best passages the floor left out.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import msgspec
import numpy as np

from lcg.query._passage_rules import FloorReport, over_floor
from lcg.query._when import Window, recency_prior, time_prior

__all__ = [
    "PassageLegs",
    "PassageWeights",
    "Priors",
    "SourceKey",
    "floor_and_page",
    "weighted_order",
]

#: A passage's source: its group and its source file.
SourceKey = tuple[str, str]


class PassageWeights(msgspec.Struct, frozen=True, kw_only=True):
    """The weights of the passage legs under ``fusion="weighted"``.

    The leg weights were chosen on the LongMemEval dev questions with 5-fold cross-validation
    (ADR 0092, ``bench/lme_fusion_cv.py``); the two time priors with the asking time given
    (ADR 0094), the recency prior's weight capped so that questions about older sessions
    lose no recall.
    """

    chunk_bm25: float = 1.0
    chunk_vector: float = 0.25
    source_bm25: float = 0.5
    source_vector: float = 0.25
    #: Inside a window the query names ("last month").
    time: float = 1.0
    #: At the asking time, halved every ``recency_half_life_days`` before it.
    recency: float = 0.3


class PassageLegs(msgspec.Struct, kw_only=True):
    """What the passage legs found, filled in as a weighted search gathers them."""

    #: Each candidate's group, in the order the candidates were found.
    group_of: dict[str, str] = msgspec.field(default_factory=dict)
    #: The chunk BM25 leg's score of each chunk it found.
    chunk_bm25: dict[str, float] = msgspec.field(default_factory=dict)
    #: The source BM25 leg's score of each source it found.
    source_bm25: dict[SourceKey, float] = msgspec.field(default_factory=dict)
    #: Each candidate's cosine to the query (the vector leg's, else its stored vector's).
    cosines: dict[str, float] = msgspec.field(default_factory=dict)
    #: The source of each candidate that has a source file.
    source_of: dict[str, SourceKey] = msgspec.field(default_factory=dict)
    #: The query's vector; ``None`` without one (``mode="bm25"``, or the embedder away).
    qvec: np.ndarray | None = None
    #: The vector leg's zero: its ``_MIN_POOL``-th best cosine (0.0 without the leg).
    floor: float = 0.0


class Priors(msgspec.Struct, kw_only=True):
    """The inputs of the two time priors of a weighted search (ADR 0094)."""

    #: The asking time.
    now: datetime
    #: The windows the query names ("last month"), resolved against ``now``.
    windows: list[Window]
    #: The candidates' reference times (read only when a bound or a prior needs them).
    times: dict[str, datetime]
    #: The recency prior's half-life, in days.
    half_life_days: float
    #: The chunks of file trees, whose age is their file's: no recency bonus (ADR 0198).
    ageless: set[str] = msgspec.field(default_factory=set)


def weighted_order(
    legs: PassageLegs, candidates: list[str], w: PassageWeights, priors: Priors
) -> list[tuple[float, str]]:
    """``(-score, uuid)`` of each candidate, best first, ties by uuid: ``Σ weight × leg``
    (each leg normalised over ``candidates``, a passage with no source file its own source),
    plus the time priors."""
    leg_values = _normalised(legs, candidates)
    scored: list[tuple[float, str]] = []
    for u in candidates:
        cb, cv, sb, sv = leg_values(u)
        score = w.chunk_bm25 * cb + w.chunk_vector * cv + w.source_bm25 * sb
        score += w.source_vector * sv
        if u in priors.times and (priors.windows or w.recency):
            score = _with_priors(score, u, w, priors)
        scored.append((-score, u))
    scored.sort()
    return scored


def _normalised(
    legs: PassageLegs, candidates: list[str]
) -> Callable[[str], tuple[float, float, float, float]]:
    """A candidate's four legs (chunk BM25, chunk cosine, source BM25, source cosine), each
    normalised over ``candidates``: BM25 by the best score, cosines min-max between the best
    and the vector leg's zero."""
    chunk_bm25, source_bm25, cosines, source_of = (
        legs.chunk_bm25,
        legs.source_bm25,
        legs.cosines,
        legs.source_of,
    )
    floor = legs.floor
    top_bm25 = max((chunk_bm25.get(u, 0.0) for u in candidates), default=0.0) or 1.0
    admitted_sources = {source_of[u] for u in candidates if u in source_of}
    top_src = max((source_bm25.get(s, 0.0) for s in admitted_sources), default=0.0) or 1.0
    top_cos = max((cosines.get(u, floor) for u in candidates), default=floor)
    span = top_cos - floor if top_cos > floor else 1.0

    def cos_norm(c: float) -> float:
        return max(0.0, (c - floor) / span)

    source_cos: dict[SourceKey, float] = {}
    for u in candidates:
        src_key = source_of.get(u)
        if src_key is not None and u in cosines:
            source_cos[src_key] = max(source_cos.get(src_key, -1.0), cosines[u])

    def values(u: str) -> tuple[float, float, float, float]:
        cb = chunk_bm25.get(u, 0.0) / top_bm25
        cv = cos_norm(cosines[u]) if u in cosines else 0.0
        src_key = source_of.get(u)
        if src_key is None:
            return cb, cv, cb, cv  # a passage with no source file is its own source
        sb = source_bm25.get(src_key, 0.0) / top_src
        sv = cos_norm(source_cos[src_key]) if src_key in source_cos else 0.0
        return cb, cv, sb, sv

    return values


def _with_priors(score: float, u: str, w: PassageWeights, priors: Priors) -> float:
    """``score`` plus the time priors of ``u``, added one after the other."""
    when = priors.times[u]
    if priors.windows:
        score += w.time * time_prior(when, priors.windows)
    if u not in priors.ageless:
        score += w.recency * recency_prior(when, priors.now, priors.half_life_days)
    return score


def floor_and_page(
    scored: list[tuple[float, str]],
    legs: PassageLegs,
    report: FloorReport,
    num_results: int,
    unjudged: set[str],
) -> tuple[list[str], dict[str, float]]:
    """The first ``num_results`` of ``scored`` over the cosine floor, with their fused
    scores; ``report.filtered_by_min_score`` counts those of the first ``num_results`` the
    floor left out."""
    kept: list[str] = []
    fused_scores: dict[str, float] = {}
    for rank, (neg, u) in enumerate(scored):
        # The same rule as RRF's: the cosine floor; without a query vector, the source
        # legs reorder passages but add none that match no query word (unless min_score 0).
        if over_floor(u, legs.qvec, legs.cosines, legs.chunk_bm25, report.min_score, unjudged):
            if len(kept) < num_results:
                kept.append(u)
                fused_scores[u] = -neg
        elif rank < num_results:
            report.filtered_by_min_score += 1
        if len(kept) == num_results and rank + 1 >= num_results:
            break
    return kept, fused_scores
