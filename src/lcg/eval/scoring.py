"""Extraction scores (what the model did with the prose) and the gold index shared by scorers.

A name is mapped to a gold entity by its token-sorted ``fuzzy_key`` against the entity's
name and alias forms (``Varga, Ilse`` and ``ILSE VARGA`` both map to ``Ilse Varga``); a name
that maps to nothing is identified by its ``name_key`` prefixed with ``?``.

Strict scores need the exact written form (entity name as the document wrote it, fact as
the planted sentence); normalised scores need the right gold entity (and, for a fact, the
right endpoints and relation type). Type accuracy is over normalised entity matches.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from rapidfuzz import fuzz

from lcg.eval.backends import Capture
from lcg.eval.gold import Gold
from lcg.extract import ExtractedEdge, pascal_case, screaming_snake
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
    index = GoldIndex(gold)
    ent_strict = ent_norm = ent_pred = ent_gold = 0
    typed_ok = typed_n = 0
    type_hits: dict[str, list[int]] = {}
    fact_strict = fact_norm = fact_pred = fact_gold = 0
    rel_hits: dict[str, list[int]] = {}
    decoys_served: list[str] = []
    missed: list[str] = []
    calls = tin = tout = failures = 0
    usd: float | None = 0.0
    for gdoc in gold.documents:
        cap = captures.get(gdoc.doc_id)
        out = cap.output if cap is not None else None
        if cap is None or out is None:
            failures += 1
        else:
            calls += out.calls
            tin += out.input_tokens
            tout += out.output_tokens
            if out.cost_usd is None and out.input_tokens:
                usd = None
            elif usd is not None:
                usd += out.cost_usd or 0.0
        entities = out.entities if out is not None else []
        edges = out.edges if out is not None else []
        # entities
        ent_gold += len(gdoc.mentions)
        names_by_key: dict[str, list[tuple[str, str]]] = {}
        for e in entities:
            key = index.key_of(e.name)
            if key is not None:
                names_by_key.setdefault(key, []).append((e.name, e.entity_type))
        distinct = {index.identity(e.name) for e in entities}
        ent_pred += len(distinct)
        for m in gdoc.mentions:
            etype = index.types[m.entity]
            hit = type_hits.setdefault(etype, [0, 0])
            hit[1] += 1
            found = names_by_key.get(m.entity)
            if not found:
                continue
            ent_norm += 1
            hit[0] += 1
            if any(n == m.surface for n, _t in found):
                ent_strict += 1
            typed_n += 1
            if pascal_case(found[0][1]) == etype:
                typed_ok += 1
        # facts: planted facts, and the ending of a superseded fact (an edge with invalid_at)
        wanted: list[tuple[str, tuple[str, str, str], str, bool]] = []
        for key in gdoc.facts:
            f = gold.fact(key)
            wanted.append((key, (f.relation, f.source, f.target), f.sentence, False))
        for key in gdoc.endings:
            f = gold.fact(key)
            wanted.append((key, (f.relation, f.source, f.target), f.ending_sentence or "", True))
        fact_gold += len(wanted)
        fact_pred += len(edges)
        used: set[int] = set()
        for _key, triple, sentence, ending in wanted:
            rel = rel_hits.setdefault(triple[0], [0, 0])
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
                missed.append(f"{gdoc.doc_id}: {sentence}")
                continue
            used.add(hit_idx)
            fact_norm += 1
            rel[0] += 1
            if edges[hit_idx].fact == sentence:
                fact_strict += 1
        for dkey in gdoc.decoys:
            d = next(x for x in gold.decoys if x.key == dkey)
            dt = (d.relation, d.source, d.target)
            for i, edge in enumerate(edges):
                if i in used:
                    continue
                t = index.triple(edge.relation_type, edge.source_name, edge.target_name)
                if _edge_matches_decoy(edge, t, d.sentence, dt):
                    decoys_served.append(d.sentence)
                    break
    return ExtractionScores(
        entities_strict=prf(ent_strict, ent_pred, ent_gold),
        entities_normalised=prf(ent_norm, ent_pred, ent_gold),
        type_accuracy=round(typed_ok / typed_n, 4) if typed_n else 1.0,
        entity_type_recall={k: round(v[0] / v[1], 4) for k, v in sorted(type_hits.items())},
        facts_strict=prf(fact_strict, fact_pred, fact_gold),
        facts_normalised=prf(fact_norm, fact_pred, fact_gold),
        relation_recall={k: round(v[0] / v[1], 4) for k, v in sorted(rel_hits.items())},
        wording_exact=round(fact_strict / fact_norm, 4) if fact_norm else 1.0,
        decoys_served=len(decoys_served),
        decoys_total=len(gold.decoys),
        decoys_served_sentences=decoys_served,
        missed_facts=missed,
        cost=CostScores(
            calls=calls,
            input_tokens=tin,
            output_tokens=tout,
            usd=None if usd is None else round(usd, 6),
            failures=failures,
        ),
    )
