"""Prompt rendering: the per-source templates, the ontology sections, the edge inputs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lcg.extract import prompts
from lcg.extract.ontology import load_ontology_file, parse_ontology

APOLLO = Path(__file__).resolve().parents[3] / "examples/apollo/ontology.yaml"
TEMPLATES = Path(prompts.__file__).with_name("prompts")


def test_every_template_exists_and_is_used_placeholders_are_filled() -> None:
    names = sorted(p.name for p in TEMPLATES.glob("*.txt"))
    assert names == [
        "classify_entities.txt",
        "classify_relations.txt",
        "edges.txt",
        "entities_json.txt",
        "entities_message.txt",
        "entities_text.txt",
        "json_mode.txt",
    ]
    onto = load_ontology_file(APOLLO)
    assert onto is not None, f"the example ontology {APOLLO} is missing"
    rendered = [
        prompts.entity_system_prompt(src, o, "be brief")  # type: ignore[arg-type]
        for src in ("Text", "Message", "Json")
        for o in (None, onto)
    ]
    rendered += [prompts.edge_system_prompt(o, None) for o in (None, onto)]
    rendered += [
        prompts.classify_entities_system(None),
        prompts.classify_entities_system(["Person"]),
        prompts.classify_relations_system([("KNOWS", None)]),
        prompts.json_mode_instruction(prompts.TYPES_SHAPE),
    ]
    for text in rendered:
        assert not re.search(r"\{\{[A-Z_]+\}\}", text), text


def test_source_types_pick_their_template_and_user_wrapper() -> None:
    text = prompts.entity_system_prompt("Text", None, None)
    message = prompts.entity_system_prompt("Message", None, None)
    json_ = prompts.entity_system_prompt("Json", None, None)
    assert len({text, message, json_}) == 3
    assert "speaker" in message and "field name" in json_
    assert prompts.entity_user_prompt("Text", "b") == "<TEXT>\nb\n</TEXT>"
    assert prompts.entity_user_prompt("Message", "b") == "<CURRENT MESSAGE>\nb\n</CURRENT MESSAGE>"
    assert prompts.entity_user_prompt("Json", "{}").startswith("<JSON>\n{}\n</JSON>\n")


def test_entity_types_section_without_with_open_and_strict_ontology() -> None:
    none = prompts.entity_system_prompt("Text", None, None)
    assert ", ".join(prompts.DEFAULT_ENTITY_TYPES) in none and "<ENTITY_TYPES>" not in none
    open_ = parse_ontology("entity_types: [{name: Rocket, description: a launcher}]\n")
    strict = parse_ontology("mode: strict\nentity_types: [Rocket]\n")
    open_text = prompts.entity_system_prompt("Text", open_, None)
    strict_text = prompts.entity_system_prompt("Text", strict, None)
    assert "<ENTITY_TYPES>\n- Rocket: a launcher\n</ENTITY_TYPES>\nPrefer" in open_text
    assert "<ENTITY_TYPES>\n- Rocket\n</ENTITY_TYPES>\nType each entity with exactly one" in (
        strict_text
    )


def test_fact_types_section() -> None:
    assert "<FACT_TYPES>" not in prompts.edge_system_prompt(None, None)
    text = "relation_types: [{name: FLEW_ON, source_type: Person, aliases: [FLEW], keywords: [x]}]"
    open_ = prompts.edge_system_prompt(parse_ontology(text), None)
    strict = prompts.edge_system_prompt(parse_ontology("mode: strict\n" + text), None)
    assert "- FLEW_ON (Person → Entity)" in open_ and "also called" not in open_
    assert "also called: FLEW" in strict and "signalled by words like: x" in strict
    assert "canonical FACT_TYPES names" in strict


def test_custom_instructions_are_appended_only_when_given() -> None:
    plain = prompts.entity_system_prompt("Text", None, None)
    assert prompts.entity_system_prompt("Text", None, "  ") == plain
    extra = prompts.entity_system_prompt("Text", None, "Skip people.")
    assert extra != plain and extra.rstrip().endswith("Additional instructions:\nSkip people.")


def test_edge_user_prompt_sanitises_names() -> None:
    text = prompts.edge_user_prompt("body", ["Ada\x00 ", "Ada", "  ", "Bob\x1f"], "")
    assert "<ENTITIES>\n- Ada\n- Bob\n</ENTITIES>" in text
    assert text.startswith("<CURRENT_MESSAGE>\nbody\n</CURRENT_MESSAGE>")
    assert "<REFERENCE_TIME>\nunknown\n</REFERENCE_TIME>" in text
    schema = prompts.edges_schema(["Ada", "Ada ", "Bob"])
    item = schema["properties"]["edges"]["items"]["properties"]
    assert item["source_name"]["enum"] == item["target_name"]["enum"] == ["Ada", "Bob"]


@pytest.mark.parametrize("allowed", [None, ["Person", "Place"]])
def test_classify_prompts_number_items(allowed: list[str] | None) -> None:
    system = prompts.classify_entities_system(allowed)
    if allowed:
        assert "Use only these types: Person, Place." in system
    user = prompts.classify_entities_user([("Ada", "math"), ("Bob", "")])
    assert user == "1. Ada — math\n2. Bob"
    rel = prompts.classify_relations_user([("A knows B", ""), ("C flew D", "FLEW")])
    assert rel == "1. A knows B [current: none]\n2. C flew D [current: FLEW]"
