"""Planted questions: every kind, answers drawn from the gold."""

from __future__ import annotations

from lcg.eval.corpus import generate
from lcg.eval.questions import plant_questions


def test_every_kind_is_planted_with_answers() -> None:
    g = generate(7, "full").gold
    qs = plant_questions(g)
    kinds = {q.kind for q in qs}
    assert kinds == {"entity", "fact", "passage", "neighbors", "by_source", "current", "withdrawn"}
    assert all(q.expected for q in qs)
    withdrawn = g.withdrawn()
    assert withdrawn is not None
    (wq,) = [q for q in qs if q.kind == "withdrawn"]
    assert wq.forbidden == [withdrawn.doc_id] and withdrawn.doc_id not in wq.expected
    (cq,) = [q for q in qs if q.kind == "current"]
    ended = next(f for f in g.facts if f.ended_at)
    assert cq.forbidden == [ended.key] and cq.expected == [ended.superseded_by]
    # an alias is asked where the corpus writes one
    assert any("," in q.query for q in qs if q.kind == "entity")


def test_questions_are_deterministic() -> None:
    assert plant_questions(generate(11, "small").gold) == plant_questions(
        generate(11, "small").gold
    )
