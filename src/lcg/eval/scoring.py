"""Extraction scores (what the model did with the prose) and the gold index shared by scorers.

A name is mapped to a gold entity by its token-sorted ``fuzzy_key`` against the entity's
name and alias forms (``Varga, Ilse`` and ``ILSE VARGA`` both map to ``Ilse Varga``); a name
that maps to nothing is identified by its ``name_key`` prefixed with ``?``.

Strict scores need the exact written form (entity name as the document wrote it, fact as
the planted sentence); normalised scores need the right gold entity (and, for a fact, the
right endpoints and relation type). Type accuracy is over normalised entity matches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec
from rapidfuzz import fuzz

from lcg.eval.backends import Capture
from lcg.eval.gold import Gold, GoldDocument
from lcg.extract import (
    ExtractedEdge,
    ExtractedEntity,
    ExtractionOutput,
    pascal_case,
    screaming_snake,
)
from lcg.ingest import fuzzy_key, name_key

__all__ = [
    "CostScores",
    "ExtractionScores",
    "GoldIndex",
    "PRF",
    "score_extraction",
]


def _sorted_key(name: str) -> str:
    return " ".join(sorted(fuzzy_key(name).split()))


class GoldIndex:
    """Maps written names and extracted edges back onto the gold."""

    def __init__(self, gold: Gold) -> None:
        self.gold = gold
        self._by_key: dict[str, str] = {}
        for e in gold.entities:
            for form in [e.name, *e.aliases]:
                self._by_key.setdefault(_sorted_key(form), e.key)
        self.types = {e.key: e.entity_type for e in gold.entities}

    def key_of(self, name: str) -> str | None:
        """The gold entity ``name`` writes, or ``None``."""
        return self._by_key.get(_sorted_key(name))

    def identity(self, name: str) -> str:
        """The gold key of ``name``, else ``?`` + its ``name_key``."""
        return self.key_of(name) or f"?{name_key(name)}"

    def triple(self, relation: str | None, source: str, target: str) -> tuple[str, str, str]:
        """(relation, source identity, target identity) of an edge given by names."""
        return (screaming_snake(relation or ""), self.identity(source), self.identity(target))


class PRF(msgspec.Struct, frozen=True, kw_only=True):
    """Precision, recall and F1 with their counts."""

    precision: float
    recall: float
    f1: float
    matched: int
    predicted: int
    gold: int


def prf(matched: int, predicted: int, gold: int) -> PRF:
    """The ``PRF`` of ``matched`` hits among ``predicted`` answers against ``gold`` items
    (an empty side scores 1.0: nothing asked, nothing wrong)."""
    p = matched / predicted if predicted else (1.0 if gold == 0 else 0.0)
    r = matched / gold if gold else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return PRF(
        precision=round(p, 4),
        recall=round(r, 4),
        f1=round(f1, 4),
        matched=matched,
        predicted=predicted,
        gold=gold,
    )


class CostScores(msgspec.Struct, frozen=True, kw_only=True):
    """What extraction cost: LLM calls, tokens and estimated dollars (seconds are timing)."""

    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None
    failures: int


class ExtractionScores(msgspec.Struct, frozen=True, kw_only=True):
    """Every extraction score of one run."""

    entities_strict: PRF
    entities_normalised: PRF
    type_accuracy: float
    entity_type_recall: dict[str, float]
    facts_strict: PRF
    facts_normalised: PRF
    relation_recall: dict[str, float]
    wording_exact: float
    decoys_served: int
    decoys_total: int
    decoys_served_sentences: list[str]
    missed_facts: list[str]
    cost: CostScores


def _edge_matches_decoy(
    edge: ExtractedEdge,
    triple: tuple[str, str, str],
    sentence: str,
    decoy_triple: tuple[str, str, str],
) -> bool:
    if triple == decoy_triple:
        return True
    return fuzz.token_sort_ratio(fuzzy_key(edge.fact), fuzzy_key(sentence)) >= 90


def score_extraction(gold: Gold, captures: Mapping[str, Capture]) -> ExtractionScores:
    """Score the model's answers (``captures`` by document id) against ``gold``."""
    tally = _Tally(gold)
    for gdoc in gold.documents:
        cap = captures.get(gdoc.doc_id)
        out = cap.output if cap is not None else None
        tally.cost(out)
        edges = out.edges if out is not None else []
        tally.entities(gdoc, out.entities if out is not None else [])
        used = tally.facts(gdoc, edges)
        tally.decoys(gdoc, edges, used)
    return tally.scores()


class _Tally:
    """The counts ``score_extraction`` adds up over the documents."""

    def __init__(self, gold: Gold) -> None:
        self.gold = gold
        self.index = GoldIndex(gold)
        self.ent_strict = self.ent_norm = self.ent_pred = self.ent_gold = 0
        self.typed_ok = self.typed_n = 0
        self.type_hits: dict[str, list[int]] = {}
        self.fact_strict = self.fact_norm = self.fact_pred = self.fact_gold = 0
        self.rel_hits: dict[str, list[int]] = {}
        self.decoys_served: list[str] = []
        self.missed: list[str] = []
        self.calls = self.tin = self.tout = self.failures = 0
        self.usd: float | None = 0.0

    def cost(self, out: ExtractionOutput | None) -> None:
        """One document's calls, tokens and dollars (no answer: a failure)."""
        if out is None:
            self.failures += 1
            return
        self.calls += out.calls
        self.tin += out.input_tokens
        self.tout += out.output_tokens
        if out.cost_usd is None and out.input_tokens:
            self.usd = None
        elif self.usd is not None:
            self.usd += out.cost_usd or 0.0

    def entities(self, gdoc: GoldDocument, entities: Sequence[ExtractedEntity]) -> None:
        """One document's mentions against the entities the model named."""
        index = self.index
        self.ent_gold += len(gdoc.mentions)
        names_by_key: dict[str, list[tuple[str, str]]] = {}
        for e in entities:
            key = index.key_of(e.name)
            if key is not None:
                names_by_key.setdefault(key, []).append((e.name, e.entity_type))
        self.ent_pred += len({index.identity(e.name) for e in entities})
        for m in gdoc.mentions:
            etype = index.types[m.entity]
            hit = self.type_hits.setdefault(etype, [0, 0])
            hit[1] += 1
            found = names_by_key.get(m.entity)
            if not found:
                continue
            self.ent_norm += 1
            hit[0] += 1
            if any(n == m.surface for n, _t in found):
                self.ent_strict += 1
            self.typed_n += 1
            if pascal_case(found[0][1]) == etype:
                self.typed_ok += 1

    def facts(self, gdoc: GoldDocument, edges: Sequence[ExtractedEdge]) -> set[int]:
        """One document's planted facts and endings (an edge with ``invalid_at``) against the
        model's edges; the indices of the edges that matched one."""
        gold, index = self.gold, self.index
        wanted: list[tuple[tuple[str, str, str], str, bool]] = []
        for key in gdoc.facts:
            f = gold.fact(key)
            wanted.append(((f.relation, f.source, f.target), f.sentence, False))
        for key in gdoc.endings:
            f = gold.fact(key)
            wanted.append(((f.relation, f.source, f.target), f.ending_sentence or "", True))
        self.fact_gold += len(wanted)
        self.fact_pred += len(edges)
        used: set[int] = set()
        for triple, sentence, ending in wanted:
            rel = self.rel_hits.setdefault(triple[0], [0, 0])
            rel[1] += 1
            hit_idx = None
            for i, edge in enumerate(edges):
                if i in used:
                    continue
                if index.triple(edge.relation_type, edge.source_name, edge.target_name) != triple:
                    continue
                if ending and not edge.invalid_at:
                    continue
                hit_idx = i
                if edge.fact == sentence:
                    break
            if hit_idx is None:
                self.missed.append(f"{gdoc.doc_id}: {sentence}")
                continue
            used.add(hit_idx)
            self.fact_norm += 1
            rel[0] += 1
            if edges[hit_idx].fact == sentence:
                self.fact_strict += 1
        return used

    def decoys(self, gdoc: GoldDocument, edges: Sequence[ExtractedEdge], used: set[int]) -> None:
        """One document's decoys that an edge no fact matched states."""
        for dkey in gdoc.decoys:
            d = next(x for x in self.gold.decoys if x.key == dkey)
            dt = (d.relation, d.source, d.target)
            for i, edge in enumerate(edges):
                if i in used:
                    continue
                t = self.index.triple(edge.relation_type, edge.source_name, edge.target_name)
                if _edge_matches_decoy(edge, t, d.sentence, dt):
                    self.decoys_served.append(d.sentence)
                    break

    def scores(self) -> ExtractionScores:
        """The scores of the documents tallied."""
        fact_norm, fact_strict = self.fact_norm, self.fact_strict
        return ExtractionScores(
            entities_strict=prf(self.ent_strict, self.ent_pred, self.ent_gold),
            entities_normalised=prf(self.ent_norm, self.ent_pred, self.ent_gold),
            type_accuracy=round(self.typed_ok / self.typed_n, 4) if self.typed_n else 1.0,
            entity_type_recall={
                k: round(v[0] / v[1], 4) for k, v in sorted(self.type_hits.items())
            },
            facts_strict=prf(fact_strict, self.fact_pred, self.fact_gold),
            facts_normalised=prf(fact_norm, self.fact_pred, self.fact_gold),
            relation_recall={k: round(v[0] / v[1], 4) for k, v in sorted(self.rel_hits.items())},
            wording_exact=round(fact_strict / fact_norm, 4) if fact_norm else 1.0,
            decoys_served=len(self.decoys_served),
            decoys_total=len(self.gold.decoys),
            decoys_served_sentences=self.decoys_served,
            missed_facts=self.missed,
            cost=CostScores(
                calls=self.calls,
                input_tokens=self.tin,
                output_tokens=self.tout,
                usd=None if self.usd is None else round(self.usd, 6),
                failures=self.failures,
            ),
        )
