"""The planted questions of a corpus, built from its gold.

Seven kinds: ``entity`` (find an entity by a name a document wrote, alias included),
``fact`` (find a fact by a plain question), ``passage`` (find the document that states a
fact), ``neighbors`` (the entities one hop from an entity), ``by_source`` (the entities a
document mentions), ``current`` (who holds a role now, after a supersession) and
``withdrawn`` (a question whose one answer was withdrawn, beside a live one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, Literal

import msgspec

from lcg.eval.gold import Gold, GoldDocument, GoldFact

__all__ = ["Question", "QuestionKind", "ReadKind", "plant_questions"]

QuestionKind = Literal[
    "entity", "fact", "passage", "neighbors", "by_source", "current", "withdrawn"
]
ReadKind = Literal["entities", "relationships", "passages", "neighbors", "by_source"]

#: Ranked kinds are scored by rank (MRR, hit@3, P@3); the others as exact sets.
RANKED: Final = frozenset({"entity", "fact", "passage", "current", "withdrawn"})

#: Relations asked from their source (what does S relate to); the others from their target.
_FROM_SOURCE: Final = frozenset({"WORKS_FOR", "HEADQUARTERED_IN", "BASED_IN", "MENTORS"})
_TYPE_WORD: Final = {
    "Person": "person",
    "Organization": "organisation",
    "Project": "project",
    "Place": "place",
}
_LIMITS: Final = {"small": 6, "full": 16}


class Question(msgspec.Struct, frozen=True, kw_only=True):
    """One planted question: the read it asks, and the gold keys that answer it.

    ``expected`` holds entity keys (entity, neighbors, by_source), fact keys (fact, current)
    or document ids (passage, withdrawn); ``forbidden`` what must not be served first (the
    superseded fact) or at all (the withdrawn document).
    """

    qid: str
    kind: QuestionKind
    read: ReadKind
    query: str = ""
    entity: str = ""
    source: str = ""
    expected: list[str]
    forbidden: list[str] = []
    current_only: bool = False


def _ask(gold: Gold, f: GoldFact) -> str:
    """The fact's sentence, in canonical names, with the unknown endpoint asked for."""
    src, tgt = gold.entity(f.source), gold.entity(f.target)
    text = f.sentence.rstrip(".")
    for ent in (src, tgt):
        for alias in ent.aliases:
            text = text.replace(alias, ent.name)
    if f.relation in _FROM_SOURCE:
        head, _, _ = text.rpartition(tgt.name)
        return f"{head}which {_TYPE_WORD[tgt.entity_type]}".strip()
    _, _, tail = text.partition(src.name)
    return f"who{tail}" if text.startswith(src.name) else text.replace(src.name, "who")


def plant_questions(gold: Gold) -> list[Question]:
    """Every planted question of ``gold``, in a fixed order."""
    limit = _LIMITS.get(gold.size, 16)
    live_docs = [d for d in gold.documents if not d.withdrawn]
    asks = [
        *_entity_questions(gold, live_docs, limit),
        *_fact_questions(gold, limit),
        *_neighbor_questions(gold, limit),
        *_source_questions(live_docs, limit),
        *_current_questions(gold),
        *_withdrawn_questions(gold),
    ]
    return [Question(qid=f"q{n:03d}", **kw) for n, kw in enumerate(asks)]


#: A question's fields but its id (``plant_questions`` numbers them in order).
_Ask = dict[str, Any]


def _entity_questions(gold: Gold, live_docs: list[GoldDocument], limit: int) -> Iterator[_Ask]:
    """entity: the alias form where the corpus writes one (a record), else the name."""
    live_mentions: dict[str, str] = {}
    for d in live_docs:
        for m in d.mentions:
            if m.surface != gold.entity(m.entity).name or m.entity not in live_mentions:
                live_mentions[m.entity] = m.surface
    for key in sorted(live_mentions)[:limit]:
        yield {"kind": "entity", "read": "entities", "query": live_mentions[key], "expected": [key]}


def _fact_questions(gold: Gold, limit: int) -> Iterator[_Ask]:
    """fact and passage: one per live, current fact whose question is unambiguous."""
    withdrawn = gold.withdrawn()
    withdrawn_facts = set(withdrawn.facts) if withdrawn else set()
    by_question: dict[str, list[GoldFact]] = {}
    # A question the withdrawn document's fact would answer too is ambiguous at the graph
    # level (deletion keeps derived edges), so it is not asked as a fact question.
    shadowed = {(gold.fact(k).relation, gold.fact(k).source) for k in withdrawn_facts}
    for f in gold.facts:
        if f.key in withdrawn_facts or f.ended_at or f.superseded_by:
            continue
        if (f.relation, f.source) in shadowed:
            continue
        by_question.setdefault(_ask(gold, f), []).append(f)
    superseded_targets = {f.target for f in gold.facts if f.superseded_by}
    asked = 0
    for q, facts in by_question.items():
        if asked >= limit:
            break
        if any(f.relation == "LEADS" and f.target in superseded_targets for f in facts):
            continue  # asked below as the current-vs-superseded question
        asked += 1
        yield {
            "kind": "fact",
            "read": "relationships",
            "query": q,
            "expected": [f.key for f in facts],
        }
        docs = sorted({f.doc for f in facts})
        yield {"kind": "passage", "read": "passages", "query": q, "expected": docs}


def _neighbor_questions(gold: Gold, limit: int) -> Iterator[_Ask]:
    """neighbors: the one-hop entities of every planted fact (an ended edge is still an edge)."""
    hops: dict[str, set[str]] = {}
    for f in gold.facts:
        # The withdrawn document's fact counts: deleting an episode keeps the edges derived
        # from it (the reference's semantics), so its endpoints stay neighbours.
        hops.setdefault(f.source, set()).add(f.target)
        hops.setdefault(f.target, set()).add(f.source)
    for key in sorted(hops)[:limit]:
        yield {
            "kind": "neighbors",
            "read": "neighbors",
            "entity": key,
            "expected": sorted(hops[key]),
        }


def _source_questions(live_docs: list[GoldDocument], limit: int) -> Iterator[_Ask]:
    """by_source: the entities each live document mentions."""
    for d in live_docs[:limit]:
        expected = sorted({m.entity for m in d.mentions})
        yield {"kind": "by_source", "read": "by_source", "source": d.path, "expected": expected}


def _current_questions(gold: Gold) -> Iterator[_Ask]:
    """current: after the supersession, the successor answers and the ended fact must not."""
    for f in gold.facts:
        if f.superseded_by:
            succ = gold.fact(f.superseded_by)
            yield {
                "kind": "current",
                "read": "relationships",
                "query": _ask(gold, succ),
                "expected": [succ.key],
                "forbidden": [f.key],
                "current_only": True,
            }


def _withdrawn_questions(gold: Gold) -> Iterator[_Ask]:
    """withdrawn: the withdrawn document's fact asked; the live document beside it answers."""
    withdrawn = gold.withdrawn()
    if withdrawn is None:
        return
    for key in withdrawn.facts:
        f = gold.fact(key)
        live = [
            g
            for g in gold.facts
            if g.relation == f.relation and g.source == f.source and g.doc != withdrawn.doc_id
        ]
        if not live:
            continue
        yield {
            "kind": "withdrawn",
            "read": "passages",
            "query": _ask(gold, live[0]),
            "expected": sorted({g.doc for g in live}),
            "forbidden": [withdrawn.doc_id],
        }
