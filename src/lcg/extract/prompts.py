"""The extraction and classification prompts: templates under ``prompts/``, rendered here.

Rendered system prompts (and the entities user prompt) are part of the cassette key, so any
change to a template or to how a section is rendered makes old cassette records miss instead
of replaying answers to a question no longer asked. The tool/JSON schemas live here too: they
are the other half of what the model is asked.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any, Final, Literal

from lcg.extract.ontology import Ontology

__all__ = [
    "DEFAULT_ENTITY_TYPES",
    "EDGES_SHAPE",
    "ENTITIES_SHAPE",
    "SourceType",
    "TYPES_SHAPE",
    "classify_entities_system",
    "classify_entities_user",
    "classify_relations_system",
    "classify_relations_user",
    "edge_system_prompt",
    "edge_user_prompt",
    "edges_schema",
    "entities_schema",
    "entity_system_prompt",
    "entity_user_prompt",
    "json_mode_instruction",
    "sanitize_names",
    "template",
    "types_schema",
]

SourceType = Literal["Text", "Message", "Json"]

#: The types offered when no ontology declares entity types.
DEFAULT_ENTITY_TYPES: Final = (
    "Person",
    "Organization",
    "Software",
    "Service",
    "System",
    "Technology",
    "Concept",
    "Location",
    "Event",
    "Process",
    "Requirement",
    "Document",
    "Product",
    "Project",
    "Award",
    "Book",
)

#: The JSON shapes the OpenAI-compatible extractor asks for (JSON mode has no schema).
ENTITIES_SHAPE: Final = '{"entities": [{"name": "...", "entity_type": "...", "summary": "..."}]}'
EDGES_SHAPE: Final = (
    '{"edges": [{"source_name": "...", "target_name": "...", "fact": "...", '
    '"relation_type": "SCREAMING_SNAKE", "valid_at": "ISO 8601 or null", '
    '"invalid_at": "ISO 8601 or null"}]}'
)
TYPES_SHAPE: Final = '{"types": ["...", "..."]}'

_ENTITY_TEMPLATES: Final[dict[str, str]] = {
    "Text": "entities_text.txt",
    "Message": "entities_message.txt",
    "Json": "entities_json.txt",
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@functools.cache
def template(name: str) -> str:
    """The text of ``prompts/<name>``, read once."""
    return resources.files("lcg.extract").joinpath("prompts", name).read_text(encoding="utf-8")


def _custom(custom_instructions: str | None) -> str:
    text = (custom_instructions or "").strip()
    return f"\nAdditional instructions:\n{text}\n" if text else ""


def _entity_types_section(ontology: Ontology | None) -> str:
    if ontology is None or not ontology.entity_types:
        listed = ", ".join(DEFAULT_ENTITY_TYPES)
        return (
            f"Type each entity with the most fitting of: {listed}. If none of them fits, use "
            "a short PascalCase type of your own."
        )
    lines = ["<ENTITY_TYPES>"]
    for t in ontology.entity_types:
        lines.append(f"- {t.name}: {t.description}" if t.description else f"- {t.name}")
    lines.append("</ENTITY_TYPES>")
    if ontology.strict:
        lines.append(
            "Type each entity with exactly one of the ENTITY_TYPES above and no other type; "
            "if none fits, use the closest one."
        )
    else:
        lines.append(
            "Prefer the ENTITY_TYPES above; use another short PascalCase type only when none "
            "of them fits."
        )
    return "\n".join(lines)


def _fact_types_section(ontology: Ontology | None) -> str:
    if ontology is None or not ontology.relation_types:
        return ""
    lines = ["<FACT_TYPES>"]
    for r in ontology.relation_types:
        ends = f" ({r.source_type or 'Entity'} → {r.target_type or 'Entity'})"
        lines.append(f"- {r.name}{ends}: {r.description}" if r.description else f"- {r.name}{ends}")
        if ontology.strict and r.aliases:
            lines.append(f"  also called: {', '.join(r.aliases)}")
        if ontology.strict and r.keywords:
            lines.append(f"  signalled by words like: {', '.join(r.keywords)}")
    lines.append("</FACT_TYPES>")
    if ontology.strict:
        lines.append(
            "Use only the canonical FACT_TYPES names above as relation_type, never an alias "
            "or a name of your own."
        )
    return "\n".join(lines)


def entity_system_prompt(
    source_type: SourceType, ontology: Ontology | None, custom_instructions: str | None
) -> str:
    """The system prompt of the entities call for this kind of source."""
    text = template(_ENTITY_TEMPLATES[source_type])
    text = text.replace("{{ENTITY_TYPES_SECTION}}", _entity_types_section(ontology))
    return text.replace("{{CUSTOM_INSTRUCTIONS}}", _custom(custom_instructions)).strip() + "\n"


def entity_user_prompt(source_type: SourceType, body: str) -> str:
    """The user message of the entities call, wrapping the episode body."""
    if source_type == "Message":
        return f"<CURRENT MESSAGE>\n{body}\n</CURRENT MESSAGE>"
    if source_type == "Json":
        return f"<JSON>\n{body}\n</JSON>\nList the named entities this record describes."
    return f"<TEXT>\n{body}\n</TEXT>"


def edge_system_prompt(ontology: Ontology | None, custom_instructions: str | None) -> str:
    """The system prompt of the edges call."""
    text = template("edges.txt").replace("{{FACT_TYPES_SECTION}}", _fact_types_section(ontology))
    return text.replace("{{CUSTOM_INSTRUCTIONS}}", _custom(custom_instructions)).strip() + "\n"


def sanitize_names(names: Iterable[str]) -> list[str]:
    """Names with control characters removed, trimmed, blanks dropped, first spelling kept."""
    out: dict[str, None] = {}
    for name in names:
        clean = _CONTROL.sub("", name).strip()
        if clean:
            out.setdefault(clean, None)
    return list(out)


def edge_user_prompt(body: str, entity_names: Sequence[str], reference_time: str) -> str:
    """The user message of the edges call: the body, the entity names, the reference time."""
    bullets = "\n".join(f"- {n}" for n in sanitize_names(entity_names))
    return (
        f"<CURRENT_MESSAGE>\n{body}\n</CURRENT_MESSAGE>\n"
        f"<ENTITIES>\n{bullets}\n</ENTITIES>\n"
        f"<REFERENCE_TIME>\n{reference_time or 'unknown'}\n</REFERENCE_TIME>"
    )


def classify_entities_system(allowed: Sequence[str] | None) -> str:
    """The system prompt of entity classification, open-ended when ``allowed`` is ``None``."""
    if allowed is None:
        section = (
            "Answer with a short PascalCase type that says what the entity is, such as "
            + ", ".join(DEFAULT_ENTITY_TYPES[:8])
            + "."
        )
    else:
        section = "Use only these types: " + ", ".join(allowed) + "."
    return template("classify_entities.txt").replace("{{ALLOWED_TYPES_SECTION}}", section)


def classify_entities_user(items: Sequence[tuple[str, str]]) -> str:
    """The numbered entity list of a classification call."""
    return "\n".join(
        f"{i}. {name} — {summary}" if summary else f"{i}. {name}"
        for i, (name, summary) in enumerate(items, 1)
    )


def classify_relations_system(allowed: Sequence[tuple[str, str | None]]) -> str:
    """The system prompt of relation classification over the ``(name, description)`` list."""
    listed = "\n".join(f"- {n}: {d}" if d else f"- {n}" for n, d in allowed)
    return template("classify_relations.txt").replace("{{ALLOWED_TYPES}}", listed)


def classify_relations_user(items: Sequence[tuple[str, str]]) -> str:
    """The numbered fact list of a classification call."""
    return "\n".join(
        f"{i}. {fact} [current: {current or 'none'}]" for i, (fact, current) in enumerate(items, 1)
    )


def json_mode_instruction(shape: str) -> str:
    """The suffix asking a JSON-mode model for exactly ``shape``."""
    return template("json_mode.txt").replace("{{SHAPE}}", shape)


def entities_schema() -> dict[str, Any]:
    """JSON schema of the ``extract_entities`` tool input."""
    return {
        "type": "object",
        "properties": {
            "entities": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "Full explicit name."},
                        "entity_type": {"type": "string", "description": "PascalCase type."},
                        "summary": {"type": "string", "description": "What the text says."},
                    },
                    "required": ["name", "entity_type", "summary"],
                },
            }
        },
        "required": ["entities"],
    }


def edges_schema(entity_names: Sequence[str]) -> dict[str, Any]:
    """JSON schema of the ``extract_edges`` tool input; endpoints restricted to the names."""
    names = sanitize_names(entity_names)
    endpoint: dict[str, Any] = {"type": "string", "enum": names}
    return {
        "type": "object",
        "properties": {
            "edges": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "source_name": endpoint,
                        "target_name": endpoint,
                        "fact": {"type": "string"},
                        "relation_type": {"type": "string"},
                        "valid_at": {"type": ["string", "null"]},
                        "invalid_at": {"type": ["string", "null"]},
                    },
                    "required": ["source_name", "target_name", "fact", "relation_type"],
                },
            }
        },
        "required": ["edges"],
    }


def types_schema() -> dict[str, Any]:
    """JSON schema of the ``classify`` tool input: one type (or ``""``) per item."""
    return {
        "type": "object",
        "properties": {"types": {"type": "array", "items": {"type": "string"}}},
        "required": ["types"],
    }
