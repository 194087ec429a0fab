"""The extraction port: the ``Extractor`` protocol, its request and result shapes, and the
base of extractors that wrap another."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import msgspec

from lcg.extract.ontology import Ontology
from lcg.extract.prompts import SourceType

__all__ = [
    "DelegatingExtractor",
    "ExtractRequest",
    "ExtractedEdge",
    "ExtractedEntity",
    "ExtractionOutput",
    "Extractor",
    "SourceType",
]


class ExtractedEntity(msgspec.Struct, frozen=True, kw_only=True):
    """One entity an extractor found; ``entity_type`` ``""`` means untyped."""

    name: str
    entity_type: str = ""
    summary: str = ""


class ExtractedEdge(msgspec.Struct, frozen=True, kw_only=True):
    """One fact between two extracted entities, named by their extracted names."""

    source_name: str
    target_name: str
    fact: str
    relation_type: str | None = None
    valid_at: str | None = None
    invalid_at: str | None = None


class ExtractionOutput(msgspec.Struct, frozen=True, kw_only=True):
    """What one extraction produced, with what was dropped and what it cost."""

    entities: list[ExtractedEntity] = []
    edges: list[ExtractedEdge] = []
    entities_dropped_malformed: int = 0
    edges_dropped_malformed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    model: str = ""
    calls: int = 0


class ExtractRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One episode to extract; ``chunk_key`` (the episode name) is used in telemetry only."""

    body: str
    group_id: str
    source_type: SourceType = "Text"
    reference_time: str = ""
    custom_instructions: str | None = None
    ontology: Ontology | None = None
    chunk_key: str = ""


@runtime_checkable
class Extractor(Protocol):
    """Extracts entities and edges from episodes and classifies types (synchronous)."""

    @property
    def model_id(self) -> str:
        """The model that answers (after a fallback, the fallback model)."""
        ...

    def extract(self, req: ExtractRequest) -> ExtractionOutput:
        """Entities, then edges between them; ``ExtractionError`` on any failure."""
        ...

    def classify_entities(
        self, items: list[tuple[str, str]], allowed: list[str] | None
    ) -> list[str]:
        """One type per ``(name, summary)``, ``""`` to abstain; ``allowed=None`` is open-ended."""
        ...

    def classify_relations(
        self, items: list[tuple[str, str]], allowed: list[tuple[str, str | None]]
    ) -> list[str]:
        """One relation type per ``(fact, current_type)`` from ``allowed``, ``""`` to abstain."""
        ...

    def close(self) -> None:
        """Release what the extractor holds (connections, files); idempotent."""
        ...


class DelegatingExtractor:
    """Base of extractors that wrap another: every call goes to ``inner`` unless overridden."""

    def __init__(self, inner: Extractor) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        """The inner extractor's model."""
        return self.inner.model_id

    def close(self) -> None:
        """Close the inner extractor."""
        self.inner.close()

    def extract(self, req: ExtractRequest) -> ExtractionOutput:
        """The inner extractor's answer."""
        return self.inner.extract(req)

    def classify_entities(
        self, items: list[tuple[str, str]], allowed: list[str] | None
    ) -> list[str]:
        """The inner extractor's entity types."""
        return self.inner.classify_entities(items, allowed)

    def classify_relations(
        self, items: list[tuple[str, str]], allowed: list[tuple[str, str | None]]
    ) -> list[str]:
        """The inner extractor's relation types."""
        return self.inner.classify_relations(items, allowed)
