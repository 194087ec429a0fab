"""Reading a model's answer: tolerant JSON parsing, salvage of well-formed items (the rest
counted as dropped), relation types derived from facts, and classification answers
normalised to exactly one label per item."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from lcg.extract.extractor.port import ExtractedEdge, ExtractedEntity
from lcg.extract.ontology import UNCLASSIFIED_RELATION, pascal_case, screaming_snake

__all__ = [
    "normalize_classification",
    "parse_json_tolerant",
    "relation_type_for",
    "salvage_edges",
    "salvage_entities",
]


class _RawEntity(msgspec.Struct):
    name: str
    entity_type: str | None = None
    summary: str | None = None


class _RawEdge(msgspec.Struct):
    source_name: str
    target_name: str
    fact: str
    relation_type: str | None = None
    valid_at: str | None = None
    invalid_at: str | None = None


def parse_json_tolerant(text: str) -> tuple[Any, Literal["clean", "recovered", "malformed"]]:
    """Parse a model's JSON answer: as is (clean), or the span from the first ``{`` to the
    last ``}`` (then ``[`` to ``]``), which drops code fences and prose around it
    (recovered); else malformed."""
    stripped = text.strip()
    try:
        return json.loads(stripped), "clean"
    except ValueError:
        pass
    for open_, close in ("{}", "[]"):
        start, end = stripped.find(open_), stripped.rfind(close)
        if 0 <= start < end:
            try:
                return json.loads(stripped[start : end + 1]), "recovered"
            except ValueError:
                pass
    return None, "malformed"


def _blank(text: str) -> bool:
    return not text.strip()


def salvage_entities(items: Sequence[object]) -> tuple[list[ExtractedEntity], int, int]:
    """``(entities, dropped, missing_summary)``: items of the wrong shape or with a blank
    name are dropped; a null or missing summary becomes ``""``; ``missing_summary`` counts
    the kept entities whose summary is empty (absent, ``null``, ``""`` or blank)."""
    out: list[ExtractedEntity] = []
    dropped = missing = 0
    for item in items:
        try:
            raw = msgspec.convert(item, _RawEntity)
        except msgspec.ValidationError:
            dropped += 1
            continue
        if _blank(raw.name):
            dropped += 1
            continue
        summary = (raw.summary or "").strip()
        # Counted after parsing, as the reference: absent, null and "" are all empty here.
        if not summary:
            missing += 1
        out.append(
            ExtractedEntity(
                name=raw.name.strip(),
                entity_type=(raw.entity_type or "").strip(),
                summary=summary,
            )
        )
    return out, dropped, missing


def relation_type_for(relation_type: str | None, fact: str) -> str:
    """SCREAMING_SNAKE of the given type; if empty, of the fact's first four words; else
    ``UNCLASSIFIED``."""
    value = screaming_snake(relation_type or "")
    if not value:
        value = screaming_snake(" ".join(fact.split()[:4]))
    return value or UNCLASSIFIED_RELATION


def salvage_edges(items: Sequence[object]) -> tuple[list[ExtractedEdge], int]:
    """``(edges, dropped)``: items of the wrong shape or with a blank source, target or fact
    are dropped; relation types are normalised with ``relation_type_for``."""
    out: list[ExtractedEdge] = []
    dropped = 0
    for item in items:
        try:
            raw = msgspec.convert(item, _RawEdge)
        except msgspec.ValidationError:
            dropped += 1
            continue
        if _blank(raw.source_name) or _blank(raw.target_name) or _blank(raw.fact):
            dropped += 1
            continue
        out.append(
            ExtractedEdge(
                source_name=raw.source_name.strip(),
                target_name=raw.target_name.strip(),
                fact=raw.fact.strip(),
                relation_type=relation_type_for(raw.relation_type, raw.fact),
                valid_at=(raw.valid_at or "").strip() or None,
                invalid_at=(raw.invalid_at or "").strip() or None,
            )
        )
    return out, dropped


def normalize_classification(
    answers: Sequence[object], n: int, allowed: Sequence[str] | None, *, relations: bool
) -> list[str]:
    """Exactly ``n`` labels: padded with ``""``, truncated, and ``""`` for any answer that is
    not a string or (when ``allowed`` is given) not one of the allowed names."""
    norm = screaming_snake if relations else pascal_case
    allowed_map = None if allowed is None else {norm(a): a for a in allowed}
    out: list[str] = []
    for value in list(answers)[:n]:
        label = norm(value) if isinstance(value, str) else ""
        if not relations and label == "Entity":
            label = ""
        if allowed_map is not None:
            label = allowed_map.get(label, "")
        out.append(label)
    out.extend([""] * (n - len(out)))
    return out
