"""The provider-independent parts of extraction: budgets, tolerant parsing, per-item salvage,
relation-type fallback, classification normalisation and the cost table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lcg.errors import ConfigError
from lcg.extract.budget import retry_budget, token_budget
from lcg.extract.cost import load_cost_table
from lcg.extract.extractor import (
    ExtractedEdge,
    ExtractedEntity,
    normalize_classification,
    parse_json_tolerant,
    relation_type_for,
    salvage_edges,
    salvage_entities,
)


@pytest.mark.parametrize(
    ("body_bytes", "ratio", "ceiling", "expected"),
    [
        (0, 1.0, 32768, 4096),
        (4000, 1.0, 32768, 4096),
        (10_000, 1.0, 32768, 10_000),
        (10_000, 1.5, 32768, 15_000),
        (3, 1.5, 32768, 4096),
        (30_001, 1.5, 32768, 32768),
        (5461, 1.5, 32768, 8192),  # 8191.5 rounds half away from zero
        (100_000, 1.0, 4096, 4096),
        (100_000, 1.0, 1000, 4096),  # a ceiling below the floor is lifted to it
    ],
)
def test_token_budget(body_bytes: int, ratio: float, ceiling: int, expected: int) -> None:
    assert token_budget(body_bytes, ratio, ceiling) == expected


def test_retry_budget_doubles_and_caps() -> None:
    assert retry_budget(4096, 32768) == 8192
    assert retry_budget(20_000, 32768) == 32768
    assert retry_budget(32768, 32768) == 32768


@pytest.mark.parametrize(
    ("text", "value", "outcome"),
    [
        ('{"entities": []}', {"entities": []}, "clean"),
        ('  {"a": 1}\n', {"a": 1}, "clean"),
        ('```json\n{"a": 1}\n```', {"a": 1}, "recovered"),
        ('Sure! Here it is: {"a": {"b": 2}} Let me know.', {"a": {"b": 2}}, "recovered"),
        ('["A", "B"]', ["A", "B"], "clean"),
        ('types: ["A", ""] done', ["A", ""], "recovered"),
        ("no json at all", None, "malformed"),
        ('{"a": ', None, "malformed"),
        ("", None, "malformed"),
    ],
)
def test_parse_json_tolerant(text: str, value: Any, outcome: str) -> None:
    assert parse_json_tolerant(text) == (value, outcome)


def test_salvage_entities_drops_and_counts() -> None:
    items: list[object] = [
        {"name": " Ada ", "entity_type": "Person", "summary": " s "},
        {"name": "Bob", "entity_type": None, "summary": None},
        {"name": "Cy"},
        {"name": ""},
        {"name": "\t"},
        {"entity_type": "Person"},
        {"name": ["x"]},
        {"name": "Dee", "summary": 3},
        None,
        "Eve",
    ]
    entities, dropped, missing = salvage_entities(items)
    assert entities == [
        ExtractedEntity(name="Ada", entity_type="Person", summary="s"),
        ExtractedEntity(name="Bob", entity_type="", summary=""),
        ExtractedEntity(name="Cy", entity_type="", summary=""),
    ]
    assert dropped == 7 and missing == 2


def test_salvage_edges_drops_and_normalises() -> None:
    items: list[object] = [
        {"source_name": "A", "target_name": "B", "fact": "A founded B", "relation_type": "founded"},
        {"source_name": "A", "target_name": "B", "fact": "A now runs the B team daily"},
        {"source_name": "A", "target_name": "B", "fact": "A B", "relation_type": "  "},
        {"source_name": "A", "target_name": "B", "fact": "...", "relation_type": None},
        {"source_name": "A", "target_name": "B", "fact": "x", "valid_at": "", "invalid_at": "2020"},
        {"source_name": " ", "target_name": "B", "fact": "f"},
        {"source_name": "A", "target_name": "B", "fact": ""},
        {"source_name": "A", "fact": "f"},
        {"source_name": "A", "target_name": "B", "fact": "f", "valid_at": 1969},
        42,
    ]
    edges, dropped = salvage_edges(items)
    assert [e.relation_type for e in edges] == [
        "FOUNDED",
        "A_NOW_RUNS_THE",
        "A_B",
        "UNCLASSIFIED",
        "X",
    ]
    assert edges[4] == ExtractedEdge(
        source_name="A", target_name="B", fact="x", relation_type="X", invalid_at="2020"
    )
    assert dropped == 5


@pytest.mark.parametrize(
    ("relation_type", "fact", "expected"),
    [
        ("worksFor", "ignored", "WORKS_FOR"),
        ("", "Neil Armstrong walked on the Moon", "NEIL_ARMSTRONG_WALKED_ON"),
        (None, "!!", "UNCLASSIFIED"),
        ("---", "", "UNCLASSIFIED"),
    ],
)
def test_relation_type_for(relation_type: str | None, fact: str, expected: str) -> None:
    assert relation_type_for(relation_type, fact) == expected


def test_normalize_classification() -> None:
    assert normalize_classification(["person", "Rocket", 3, None], 5, ["Person", "Place"],
                                    relations=False) == ["Person", "", "", "", ""]  # fmt: skip
    assert normalize_classification(["spaceship", "Entity", ""], 2, None, relations=False) == [
        "Spaceship",
        "",
    ]
    assert normalize_classification(["flew on", "X"], 2, ["FLEW_ON"], relations=True) == [
        "FLEW_ON",
        "",
    ]
    assert normalize_classification([], 0, None, relations=True) == []


def test_builtin_cost_table_prices_dated_models_by_prefix() -> None:
    table = load_cost_table()
    assert table.cost("claude-haiku-4-5-20251001", 1_000_000, 0) == pytest.approx(1.0)
    assert table.cost("claude-haiku-4-5", 0, 1_000_000) == pytest.approx(5.0)
    assert table.cost("claude-sonnet-4-5-20250929", 1000, 1000, 1000, 1000) == pytest.approx(
        (3.0 + 15.0 + 0.3 + 3.75) / 1000
    )
    assert table.cost("local", 10, 10) is None


def test_cost_table_override_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"my-model": {"input_per_mtok": 2, "output_per_mtok": 4}}')
    table = load_cost_table(path)
    assert table.cost("my-model", 500_000, 250_000) == pytest.approx(2.0)
    assert table.cost("claude-haiku-4-5", 1, 1) is None  # an override replaces the table
    path.write_text('{"m": {"input_per_mtok": "cheap"}}')
    with pytest.raises(ConfigError, match="is invalid"):
        load_cost_table(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_cost_table(tmp_path / "missing.json")
