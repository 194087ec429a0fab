"""Hybrid search over the projections: BM25 and vector legs, fused.

Reciprocal-rank fusion (as the reference): each ranked list adds ``1 / (rank + 60)`` to a
document, rank 0-based, equal weights, raw scores ignored; sorted by fused score, ties by
uuid. Each leg retrieves ``3 × num_results`` candidates. Unlike the reference, results are
returned in fused order (see docs/compatibility.md).

Legs per read:

* entities – BM25 over name + summary, vectors of the name and of the summary;
* relationships – BM25 over name + fact, vectors of the fact;
* passages – BM25 over the episode content and its vector, and the same two for its
  *source* (every chunk of its source file: BM25 over their joined text, the best cosine of
  its chunks). Every passage reports its cosine similarity to the query as ``score`` (from
  the vector leg, else computed from its stored vector; 0.0 without one, as the reference's
  zero vector) and is kept only if that reaches ``min_score``, as the reference's floor; the
  fused value that orders the passages is ``fused_score`` (ADR 0173). Without ``min_score``
  the floor is the embedder's ``default_min_score``, calibrated for its cosine scale, and the
  caller learns how many of the best passages it left out (``FloorReport``, ADR 0198).
  Without a query vector (``mode="bm25"``, or the embedder away: the leg is reported
  missing) no cosine exists: the BM25 hits are kept, ``score`` 0.0.

Passages are fused by weighted scores by default (``fusion="weighted"``, ADR 0092): each leg's
scores are normalised (BM25 by the best score of the query; cosines min-max between the best
and the 50th best), and a passage scores ``Σ weight × leg``, its source's legs included, plus a soft
bonus when its reference time falls in a window the query names ("last month", "two weeks
ago", ``lcg.query._when``) and a smaller one that halves with every
``recency_half_life_days`` of its age at the asking time (ADR 0094) — except chunks of file
trees, whose age is their file's (``is_file_chunk``, ADR 0198). ``fusion="rrf"`` is
the reference's fusion over the two passage legs, unchanged. Either way ``as_of`` drops
passages referenced after the asking time and ``valid_after`` / ``valid_before`` bound the
reference time.

``group_ids=None`` searches every group; ``[]`` matches nothing (callers apply the
reference's collapse/preserve rules before calling). A group whose part of a search raises is
left out of the answer and recorded in the ``failures`` passed in (``fanout``, ADR 0151); the
other groups' hits are what they would have been without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Final, Literal, TypeVar

import msgspec
import numpy as np

from lcg.errors import EmbedderError
from lcg.projections import (
    EdgeRow,
    EntityRow,
    GraphProjection,
    GroupFailures,
    TextEmbedder,
    TextProjection,
    VectorProjection,
)
from lcg.query._passage_rules import (
    Bounds,
    FloorReport,
    PassageRow,
    is_file_chunk,
    over_floor,
    passage_of,
)
from lcg.query._succession import (
    Successions,
    entities_first,
    facts_first,
    passages_after,
)
from lcg.query._weighted import (
    PassageLegs,
    PassageWeights,
    Priors,
    floor_and_page,
    weighted_order,
)
from lcg.query._when import Window, parse_time, resolve_windows
from lcg.query.reads import (
    edges_by_uuids,
    entities_by_uuids,
    episode_names,
    episodes_by_uuids,
)

__all__ = [
    "DEFAULT_HALF_LIFE_DAYS",
    "DEFAULT_WEIGHTS",
    "FUSIONS",
    "RRF_K",
    "FloorReport",
    "Fusion",
    "PassageRow",
    "PassageWeights",
    "SearchMode",
    "Searcher",
    "is_file_chunk",
    "parse_time",
    "rrf_fuse",
]

RRF_K = 60
SearchMode = Literal["hybrid", "bm25", "vector"]
Fusion = Literal["weighted", "rrf"]
#: The passage fusions, the default first.
FUSIONS: Final[tuple[Fusion, ...]] = ("weighted", "rrf")
#: Candidates per passage leg at least (a small ``num_results`` still sees enough sources).
_MIN_POOL: Final = 50
#: With time bounds the pool grows this much: bounds are applied after retrieval.
_BOUNDED_POOL: Final = 3


#: Sources with more chunks than this do not bring their chunks in by their own score.
_MAX_BROUGHT: Final = 64
#: Episodes whose file-chunk test is remembered at most (then the memo starts again).
_MEMO_LIMIT: Final = 200_000
_UTC: Final = UTC
_Row = TypeVar("_Row")


#: The default weights (ADR 0092, ADR 0094).
DEFAULT_WEIGHTS: Final = PassageWeights()
#: The recency prior's default half-life (ADR 0094).
DEFAULT_HALF_LIFE_DAYS: Final = 5.0


def rrf_fuse(legs: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse ranked uuid lists by reciprocal rank; best first, ties by uuid ascending."""
    scores: dict[str, float] = {}
    for leg in legs:
        for rank, uuid in enumerate(leg):
            scores[uuid] = scores.get(uuid, 0.0) + 1.0 / (rank + k)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


class Searcher:
    """Runs the three searches over one workspace's projections."""

    def __init__(
        self,
        graph: GraphProjection,
        text: TextProjection,
        vectors: VectorProjection,
        embedder: TextEmbedder,
    ) -> None:
        self.graph = graph
        self.text = text
        self.vectors = vectors
        self.embedder = embedder
        # uuid -> whether the episode is a file chunk (``_file_chunks``).
        self._file_chunk_memo: dict[str, bool] = {}
        # Each group's supersessions at its committed position (ADR 0211).
        self._successions = Successions(graph)

    def _asked(self, group_ids: list[str] | None) -> list[str]:
        """The groups a search spans (``None``: every group its text or vector leg holds,
        the searchable ones; not ``Workspace.known_groups``, which has the streams' too)."""
        if group_ids is not None:
            return group_ids
        return sorted({*self.text.groups(), *self.vectors.groups()})

    def _query_vector(
        self, query: str, failures: GroupFailures, mode: SearchMode
    ) -> np.ndarray | None:
        """The query's vector; ``None`` (the leg recorded missing) when a hybrid search
        cannot make one: its BM25 legs still answer while the embedder is away (ADR 0171)."""
        try:
            return self.embedder.vectors([query])[query]
        except EmbedderError as exc:
            if mode != "hybrid":
                raise
            failures.skip_leg("vector", exc)
            return None

    def _text_hits(
        self, failures: GroupFailures, group_ids: list[str] | None, kind: str, query: str, k: int
    ) -> list[tuple[str, float, str]]:
        return failures.isolate(
            group_ids,
            self.text.groups,
            lambda gs: self.text.search_groups(gs, kind, query, k),
        )

    def _vector_hits(
        self,
        failures: GroupFailures,
        group_ids: list[str] | None,
        field: str,
        qvec: np.ndarray,
        k: int,
    ) -> list[tuple[str, float, str]]:
        # Groups whose vectors are still being made answer partly by words (ADR 0201).
        for group_id, waiting in sorted(self.vectors.backlog.pending().items()):
            if group_ids is None or group_id in group_ids:
                failures.incomplete_leg("vector", group_id, waiting)
        return failures.isolate(
            group_ids,
            self.vectors.groups,
            lambda gs: self.vectors.search_groups(gs, field, qvec, k),
        )

    def _legs(
        self,
        failures: GroupFailures,
        kind: str,
        vector_fields: Sequence[str],
        query: str,
        group_ids: list[str] | None,
        pool: int,
        mode: SearchMode,
    ) -> tuple[list[list[str]], dict[str, float], dict[str, str]]:
        legs: list[list[str]] = []
        cosines: dict[str, float] = {}
        group_of: dict[str, str] = {}
        if mode in ("hybrid", "bm25"):
            hits = self._text_hits(failures, group_ids, kind, query, pool)
            legs.append([uuid for uuid, _score, _g in hits])
            group_of.update((uuid, g) for uuid, _score, g in hits)
        qvec = self._query_vector(query, failures, mode) if mode != "bm25" else None
        if qvec is not None:
            for field in vector_fields:
                vhits = self._vector_hits(failures, group_ids, field, qvec, pool)
                legs.append([uuid for uuid, _sim, _g in vhits])
                for uuid, sim, g in vhits:
                    cosines[uuid] = max(sim, cosines.get(uuid, -1.0))
                    group_of.setdefault(uuid, g)
        if failures:
            # A group that failed in a later leg gives no hit from an earlier one either.
            legs = [[u for u in leg if group_of[u] not in failures] for leg in legs]
        return legs, cosines, group_of

    def find_entities(
        self,
        query: str,
        group_ids: list[str] | None,
        num_results: int = 10,
        *,
        mode: SearchMode = "hybrid",
        failures: GroupFailures | None = None,
    ) -> list[EntityRow]:
        """Entities matching ``query``, best first (failed groups go to ``failures``)."""
        if not query.strip() or num_results <= 0 or group_ids == []:
            return []
        f = GroupFailures() if failures is None else failures
        legs, _, group_of = self._legs(
            f, "entity", ("entity.name", "entity.summary"), query, group_ids, 3 * num_results, mode
        )
        fused = [uuid for uuid, _ in rrf_fuse(legs)[:num_results]]
        rows = _rows(f, fused, group_of, lambda us: entities_by_uuids(self.graph, us))
        if f:
            f.raise_if_all(self._asked(group_ids))
        read = partial(entities_by_uuids, self.graph)
        return self._successions.current(
            f, rows, lambda s: entities_first(rows, s, read, num_results)
        )

    def find_relationships(
        self,
        query: str,
        group_ids: list[str] | None,
        num_results: int = 10,
        *,
        current_only: bool = False,
        mode: SearchMode = "hybrid",
        failures: GroupFailures | None = None,
    ) -> list[EdgeRow]:
        """Relationships matching ``query``, best first; ``current_only`` drops invalidated
        (failed groups go to ``failures``)."""
        if not query.strip() or num_results <= 0 or group_ids == []:
            return []
        f = GroupFailures() if failures is None else failures
        pool = 3 * num_results * (2 if current_only else 1)
        legs, _, group_of = self._legs(f, "edge", ("edge.fact",), query, group_ids, pool, mode)
        fused = [uuid for uuid, _ in rrf_fuse(legs)]
        rows = _rows(f, fused, group_of, lambda us: edges_by_uuids(self.graph, us))
        if current_only:
            rows = [r for r in rows if r.invalid_at is None]
        if f:
            f.raise_if_all(self._asked(group_ids))
        page = rows[:num_results]
        read = partial(edges_by_uuids, self.graph)
        return self._successions.current(f, page, lambda s: facts_first(page, s, read, num_results))

    def search_passages(
        self,
        query: str,
        group_ids: list[str] | None,
        num_results: int = 10,
        min_score: float | None = None,
        *,
        mode: SearchMode = "hybrid",
        fusion: Fusion = "weighted",
        as_of: str | None = None,
        valid_after: str | None = None,
        valid_before: str | None = None,
        recency_half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
        weights: PassageWeights | None = None,
        failures: GroupFailures | None = None,
        report: FloorReport | None = None,
    ) -> list[PassageRow]:
        """Episodes whose content matches ``query``, best first.

        ``min_score`` is the cosine floor; ``None``: the embedder's ``default_min_score``
        (ADR 0198). ``report`` receives the floor applied and how many of the best
        ``num_results`` it left out.
        ``as_of`` (RFC 3339) is the asking time: passages referenced after it are left out,
        and relative expressions in the query resolve against it (default: now).
        ``valid_after`` / ``valid_before`` bound the reference time (inclusive).
        ``recency_half_life_days`` (weighted fusion only; 0 turns it off): a passage's
        recency bonus halves with every that many days of its age at the asking time; chunks
        of file trees get none (``is_file_chunk``).
        ``ValueError`` for a timestamp that does not parse. Failed groups go to ``failures``.
        """
        floor = self.embedder.default_min_score if min_score is None else min_score
        out = FloorReport() if report is None else report
        out.min_score, out.filtered_by_min_score, out.by_default = floor, 0, min_score is None
        if not query.strip() or group_ids == [] or num_results <= 0:
            return []
        bounds = Bounds(as_of, valid_after, valid_before)
        f = GroupFailures() if failures is None else failures
        if fusion == "rrf":
            rows = self._passages_rrf(f, query, group_ids, num_results, out, mode, bounds)
        else:
            w = weights or DEFAULT_WEIGHTS
            if recency_half_life_days <= 0:
                w = msgspec.structs.replace(w, recency=0.0)
            rows = self._passages_weighted(
                f, query, group_ids, num_results, out, mode, bounds, w, recency_half_life_days
            )
        if f:
            f.raise_if_all(self._asked(group_ids))
        return self._successions.current(f, rows, lambda s: passages_after(rows, s))

    def _passages_rrf(
        self,
        f: GroupFailures,
        query: str,
        group_ids: list[str] | None,
        num_results: int,
        report: FloorReport,
        mode: SearchMode,
        bounds: Bounds,
    ) -> list[PassageRow]:
        pool = 3 * num_results * (_BOUNDED_POOL if bounds.active else 1)
        legs, cosines, group_of = self._legs(
            f, "episode", ("episode.content",), query, group_ids, pool, mode
        )
        lexical = set(legs[0]) if mode in ("hybrid", "bm25") and legs else set()
        fused_scores = dict(rrf_fuse(legs))
        fused = list(fused_scores)
        if bounds.active:
            times = self._times(f, _by_group(fused, group_of))
            fused = [u for u in fused if group_of[u] not in f and bounds.admits(times.get(u))]
        qvec = self._query_vector(query, f, mode) if mode != "bm25" else None
        unjudged = self._cosines(f, fused, group_of, qvec, cosines, report)
        admitted = [u for u in fused if group_of[u] not in f]
        kept = [
            u for u in admitted if over_floor(u, qvec, cosines, lexical, report.min_score, unjudged)
        ]
        report.filtered_by_min_score = len(set(admitted[:num_results]) - set(kept))
        kept = kept[:num_results]
        rows = _rows(f, kept, group_of, lambda us: episodes_by_uuids(self.graph, us))
        return [passage_of(row, cosines.get(row.uuid, 0.0), fused_scores[row.uuid]) for row in rows]

    def _times(self, f: GroupFailures, by_group: dict[str, list[str]]) -> dict[str, datetime]:
        """The reference times of the episodes, parsed per group: a group whose stored times
        do not parse fails alone."""
        out: dict[str, datetime] = {}
        for g, uuids in by_group.items():
            out.update(f.each(g, partial(self._parsed_times, g, uuids)) or {})
        return out

    def _parsed_times(self, group_id: str, uuids: list[str]) -> dict[str, datetime]:
        return {u: parse_time(t) for u, t in self.text.times_of(group_id, uuids).items()}

    def _passages_weighted(
        self,
        f: GroupFailures,
        query: str,
        group_ids: list[str] | None,
        num_results: int,
        report: FloorReport,
        mode: SearchMode,
        bounds: Bounds,
        w: PassageWeights,
        half_life_days: float,
    ) -> list[PassageRow]:
        pool = max(3 * num_results, _MIN_POOL) * (_BOUNDED_POOL if bounds.active else 1)
        legs = self._weighted_legs(f, query, group_ids, pool, mode)
        by_group = self._sources_of(f, legs)
        self._bring_sources(f, legs, by_group, num_results)
        group_of = legs.group_of
        unjudged = self._cosines(f, list(group_of), group_of, legs.qvec, legs.cosines, report)
        priors = self._priors(f, query, bounds, w, half_life_days, by_group)
        candidates = [
            u for u in group_of if group_of[u] not in f and bounds.admits(priors.times.get(u))
        ]
        if not candidates:
            return []
        if w.recency:
            # The recency prior weighs what was said, not files: a chunk's time is its file's.
            sourced = [u for u in candidates if u in legs.source_of]
            priors.ageless = self._file_chunks(f, sourced, group_of)
        scored = weighted_order(legs, candidates, w, priors)
        kept, fused_scores = floor_and_page(scored, legs, report, num_results, unjudged)
        rows = _rows(f, kept, group_of, lambda us: episodes_by_uuids(self.graph, us))
        cosines = legs.cosines
        return [passage_of(row, cosines.get(row.uuid, 0.0), fused_scores[row.uuid]) for row in rows]

    def _weighted_legs(
        self,
        f: GroupFailures,
        query: str,
        group_ids: list[str] | None,
        pool: int,
        mode: SearchMode,
    ) -> PassageLegs:
        """The hits of the passage legs: BM25 over chunks and over sources, the chunks'
        vectors (and the query's vector, the vector leg's zero)."""
        legs = PassageLegs()
        if mode in ("hybrid", "bm25"):
            for uuid, score, g in self._text_hits(f, group_ids, "episode", query, pool):
                legs.chunk_bm25[uuid] = score
                legs.group_of.setdefault(uuid, g)
            sources = f.isolate(
                group_ids,
                self.text.groups,
                lambda gs: self.text.search_sources(gs, query, pool),
            )
            for src, score, g in sources:
                legs.source_bm25[(g, src)] = score
        if mode in ("hybrid", "vector"):
            legs.qvec = self._query_vector(query, f, mode)
        if legs.qvec is not None:
            vhits = self._vector_hits(f, group_ids, "episode.content", legs.qvec, pool)
            for uuid, sim, g in vhits:
                legs.cosines[uuid] = sim
                legs.group_of.setdefault(uuid, g)
            # The vector leg's zero is the _MIN_POOL-th best cosine: the same whatever the
            # pool, so num_results does not change how the legs weigh against each other.
            if vhits:
                legs.floor = vhits[min(_MIN_POOL, len(vhits)) - 1][1]
        return legs

    def _sources_of(self, f: GroupFailures, legs: PassageLegs) -> dict[str, list[str]]:
        """Fill in the source of each chunk the legs found; returns the chunks by group."""
        by_group: dict[str, list[str]] = {}
        for uuid, g in legs.group_of.items():
            by_group.setdefault(g, []).append(uuid)
        for g, uuids in by_group.items():
            for uuid, src in (f.each(g, partial(self.text.sources_of, g, uuids)) or {}).items():
                legs.source_of[uuid] = (g, src)
        return by_group

    def _bring_sources(
        self,
        f: GroupFailures,
        legs: PassageLegs,
        by_group: dict[str, list[str]],
        num_results: int,
    ) -> None:
        """Add to the candidates (and to ``by_group``) the chunks of the ``num_results`` best
        sources by their own text, but of sources of over ``_MAX_BROUGHT`` chunks."""
        # The best sources bring their chunks even when no chunk of theirs made a chunk leg's
        # pool (each chunk holds part of the question, none enough of it).
        seen_sources = set(legs.source_of.values())
        ranked_sources = sorted(legs.source_bm25.items(), key=lambda kv: (-kv[1], kv[0]))
        for (g, src), _score in ranked_sources[:num_results]:
            if (g, src) in seen_sources:
                continue
            members = f.each(g, partial(self.text.members_of, g, src))
            if members is None or len(members) > _MAX_BROUGHT:
                continue
            for uuid in members:
                legs.group_of[uuid] = g
                legs.source_of[uuid] = (g, src)
                by_group.setdefault(g, []).append(uuid)

    def _priors(
        self,
        f: GroupFailures,
        query: str,
        bounds: Bounds,
        w: PassageWeights,
        half_life_days: float,
        by_group: dict[str, list[str]],
    ) -> Priors:
        """The asking time, the windows the query names and, when a bound or a prior needs
        them, the candidates' reference times."""
        now = bounds.now if bounds.now is not None else datetime.now(tz=_UTC)
        windows: list[Window] = resolve_windows(query, now) if w.time else []
        times: dict[str, datetime] = {}
        if bounds.active or windows or w.recency:
            times = self._times(f, by_group)
        return Priors(now=now, windows=windows, times=times, half_life_days=half_life_days)

    def _file_chunks(
        self, f: GroupFailures, uuids: list[str], group_of: dict[str, str]
    ) -> set[str]:
        """Which of ``uuids`` are chunks of file trees (``is_file_chunk``), read from the
        graph once per episode: an episode's name and description never change."""
        known = self._file_chunk_memo
        unread = [u for u in uuids if u not in known]
        if unread:
            if len(known) + len(unread) > _MEMO_LIMIT:
                known.clear()
            for g, group_uuids in _by_group(unread, group_of).items():
                names = f.each(g, partial(episode_names, self.graph, group_uuids)) or {}
                for uuid, (name, description) in names.items():
                    known[uuid] = is_file_chunk(name, description)
        return {u for u in uuids if known.get(u, False)}

    def _cosines(
        self,
        f: GroupFailures,
        uuids: list[str],
        group_of: dict[str, str],
        qvec: np.ndarray | None,
        cosines: dict[str, float],
        report: FloorReport,
    ) -> set[str]:
        """Fill in the cosine of each of ``uuids`` the vector leg did not find (0.0 without
        a stored vector, the reference's zero vector). Returns the passages the floor cannot
        judge: under the embedder's default floor, those whose vector is not stored yet
        (an explicit ``min_score`` judges them at 0.0, as the reference)."""
        unjudged: set[str] = set()
        if qvec is None:
            return unjudged
        for uuid in uuids:
            if uuid in cosines:
                continue
            g = group_of[uuid]
            vec = f.each(g, partial(self.vectors.get_vector, g, "episode.content", uuid))
            cosines[uuid] = 0.0 if vec is None else float(np.dot(vec, qvec))
            if vec is None and report.by_default:
                unjudged.add(uuid)
        return unjudged


def _by_group(uuids: Sequence[str], group_of: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for u in uuids:
        out.setdefault(group_of[u], []).append(u)
    return out


def _rows(
    f: GroupFailures,
    uuids: list[str],
    group_of: dict[str, str],
    read: Callable[[list[str]], list[_Row]],
) -> list[_Row]:
    """The graph's rows of ``uuids``, in their order; a group whose rows do not read fails
    alone."""
    groups = list(_by_group(uuids, group_of))

    def of_groups(gs: list[str] | None) -> list[_Row]:
        wanted = set(groups if gs is None else gs)
        return read([u for u in uuids if group_of[u] in wanted])

    return f.isolate(groups, lambda: groups, of_groups)
