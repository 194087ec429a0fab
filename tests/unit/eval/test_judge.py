"""Judging: the on-disk cache, judged recall, blind pairwise in both orders."""

from __future__ import annotations

from pathlib import Path

from lcg.eval.backends import Capture
from lcg.eval.corpus import generate
from lcg.eval.judge import CachedJudge, ScriptedJudge, judge_facts, judge_pairwise
from lcg.extract.extractor import ExtractedEdge, ExtractionOutput


def _answers(corpus_seed: int, keep: float, reword: bool = False) -> dict[str, Capture]:
    c = generate(corpus_seed, "small")
    out: dict[str, Capture] = {}
    for d in c.gold.documents:
        facts = [c.gold.fact(k) for k in d.facts]
        facts = facts[: round(len(facts) * keep)]
        edges = [
            ExtractedEdge(
                source_name="a",
                target_name="b",
                fact=(f.sentence.rstrip(".") + " indeed") if reword else f.sentence,
            )
            for f in facts
        ]
        out[d.doc_id] = Capture(chunk_key=d.doc_id, output=ExtractionOutput(edges=edges))
    return out


def test_cache_answers_a_rerun_without_the_judge(tmp_path: Path) -> None:
    c = generate(7, "small")
    inner = ScriptedJudge()
    first = judge_facts(CachedJudge(inner, tmp_path / "cache.jsonl"), c, _answers(7, 1.0))
    asked = inner.calls
    assert asked == len(c.gold.facts) and first == {"judged.facts_recall": 1.0}
    again = CachedJudge(inner, tmp_path / "cache.jsonl")
    assert judge_facts(again, c, _answers(7, 1.0)) == first
    assert inner.calls == asked and again.hits == asked and again.misses == 0


def test_judged_recall_forgives_wording_strict_would_not() -> None:
    c = generate(7, "small")
    assert judge_facts(ScriptedJudge(), c, _answers(7, 1.0, reword=True)) == {
        "judged.facts_recall": 1.0
    }
    assert judge_facts(ScriptedJudge(), c, {})["judged.facts_recall"] == 0.0


def test_pairwise_both_orders_and_order_inconsistency() -> None:
    c = generate(7, "small")
    answers = {"full": _answers(7, 1.0), "half": _answers(7, 0.5)}
    judge = ScriptedJudge()
    (pair,) = judge_pairwise(judge, c, answers)
    assert judge.calls == 2 * pair.compared == 2 * len(c.documents)
    assert (pair.a, pair.b) == ("full", "half")
    assert pair.wins_b == 0 and pair.wins_a > 0 and pair.order_inconsistent == 0
    # a judge that answers slot 1 on every tie flips with the order: inconsistency, not a win
    (same,) = judge_pairwise(
        ScriptedJudge(bias="1"), c, {"x": answers["full"], "y": answers["full"]}
    )
    assert same.wins_a == same.wins_b == 0
    assert same.order_inconsistent == same.compared and same.order_inconsistency_rate == 1.0
