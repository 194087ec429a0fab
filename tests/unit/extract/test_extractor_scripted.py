"""The scripted extractor (a TEST DOUBLE) and its perfect-extraction helper."""

from __future__ import annotations

import threading

import pytest

from lcg.errors import ExtractionError
from lcg.extract.extractor import (
    ExtractedEntity,
    ExtractionOutput,
    Extractor,
    ExtractRequest,
)
from lcg.extract.scripted import ScriptedExtractor, perfect_extractor

ADA = ExtractionOutput(entities=[ExtractedEntity(name="Ada", entity_type="Person")])


def _req(body: str, key: str = "k") -> ExtractRequest:
    return ExtractRequest(body=body, group_id="g", chunk_key=key)


def test_answers_by_exact_body_then_callable_then_default() -> None:
    ex = ScriptedExtractor(
        {"ada": ADA},
        answer=lambda r: ExtractionOutput() if r.body.startswith("empty") else None,
        default=None,
    )
    assert isinstance(ex, Extractor)
    out = ex.extract(_req("ada"))
    assert out.entities == ADA.entities and out.calls == 2 and out.model == ex.model_id
    assert ex.extract(_req("empty body")).calls == 1
    with pytest.raises(ExtractionError, match="no answer for body 'unknown'"):
        ex.extract(_req("unknown"))
    assert ex.calls == 3 and ex.llm_calls == 4
    assert [r.body for r in ex.requests] == ["ada", "empty body", "unknown"]
    with_default = ScriptedExtractor(default=ADA)
    assert with_default.extract(_req("anything")).entities == ADA.entities


def test_failure_injection() -> None:
    ex = ScriptedExtractor({"a": ADA, "b": ADA}, fail_first=1, fail={"b"})
    with pytest.raises(ExtractionError, match="injected failure for chunk 'k1'"):
        ex.extract(_req("a", "k1"))
    assert ex.extract(_req("a")).entities == ADA.entities
    with pytest.raises(ExtractionError, match="injected"):
        ex.extract(_req("b"))
    assert ex.failures == 2
    by_predicate = ScriptedExtractor(default=ADA, fail=lambda r: "x" in r.body)
    assert by_predicate.extract(_req("ok")).entities
    with pytest.raises(ExtractionError):
        by_predicate.extract(_req("xx"))


def test_latency_is_per_simulated_llm_call_and_calls_overlap() -> None:
    ex = ScriptedExtractor({"a": ADA}, latency_s=0.1)
    threads = [threading.Thread(target=ex.extract, args=(_req("a"),)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The simulated latency is a sleep, not a lock: concurrent callers overlap.
    assert ex.max_in_flight >= 2 and ex.in_flight == 0
    assert ex.calls == 4 and ex.llm_calls == 8


def test_classification_tables() -> None:
    ex = ScriptedExtractor(
        entity_types={"Ada": "person", "Rome": "City"},
        relation_types=lambda fact, current: "launched by" if "launch" in fact else current,
    )
    assert ex.classify_entities([("Ada", ""), ("Rome", ""), ("X", "")], ["Person"]) == [
        "Person",
        "",
        "",
    ]
    assert ex.classify_entities([("Rome", "")], None) == ["City"]
    assert ex.classify_entities([], None) == []
    rels = ex.classify_relations(
        [("Saturn V launched it", ""), ("A knows B", "KNOWS"), ("C", "")],
        [("LAUNCHED_BY", None), ("KNOWS", "k")],
    )
    assert rels == ["LAUNCHED_BY", "KNOWS", ""]
    assert ex.classify_calls == 3


def test_perfect_extractor_applies_the_salvage_rules() -> None:
    ex = perfect_extractor(
        {
            "Ada met Bob.": {
                "entities": [
                    {"name": "Ada", "entity_type": "Person", "summary": "a"},
                    {"name": "Bob", "entity_type": "Person"},
                    {"name": ""},
                ],
                "edges": [
                    {"source_name": "Ada", "target_name": "Bob", "fact": "Ada met Bob"},
                    {"source_name": "Ada", "target_name": "Bob"},
                ],
            },
            "nothing": {"entities": [], "edges": [{"source_name": "a"}]},
        }
    )
    out = ex.extract(_req("Ada met Bob."))
    assert [e.name for e in out.entities] == ["Ada", "Bob"]
    assert out.entities_dropped_malformed == 1 and out.edges_dropped_malformed == 1
    assert out.edges[0].relation_type == "ADA_MET_BOB"
    empty = ex.extract(_req("nothing"))
    assert empty.entities == [] and empty.edges == [] and empty.calls == 1
