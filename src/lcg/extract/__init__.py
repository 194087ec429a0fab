"""Ports to the outside world: embedders and extractors (LLM providers, cassettes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lcg.extract.cassette import RecordingExtractor, ReplayExtractor, failures_path
from lcg.extract.cost import CostTable, load_cost_table
from lcg.extract.embedders import (
    Embedder,
    HashEmbedder,
    HttpEmbedder,
    LocalEmbedder,
    StandbyEmbedder,
    UdsEmbedder,
    make_embedder,
)
from lcg.extract.extractor import (
    DelegatingExtractor,
    ExtractedEdge,
    ExtractedEntity,
    ExtractionOutput,
    Extractor,
    ExtractRequest,
    SourceType,
    relation_type_for,
)
from lcg.extract.ontology import (
    NO_ONTOLOGY_HASH,
    UNCLASSIFIED_ENTITY,
    UNCLASSIFIED_RELATION,
    Ontology,
    OntologyHashFile,
    drift_summary,
    hash_record,
    load_ontology_file,
    pascal_case,
    screaming_snake,
)
from lcg.extract.openai_extractor import OpenAICompatExtractor
from lcg.extract.prompts import edge_system_prompt, entity_system_prompt
from lcg.extract.scripted import ScriptedExtractor, perfect_extractor

if TYPE_CHECKING:
    from lcg.extract.anthropic_extractor import AnthropicExtractor

from lcg.extract.embedders import REPROBE_S

__all__ = [
    "NO_ONTOLOGY_HASH",
    "REPROBE_S",
    "UNCLASSIFIED_ENTITY",
    "UNCLASSIFIED_RELATION",
    "AnthropicExtractor",
    "CostTable",
    "DelegatingExtractor",
    "Embedder",
    "ExtractRequest",
    "ExtractedEdge",
    "ExtractedEntity",
    "ExtractionOutput",
    "Extractor",
    "HashEmbedder",
    "HttpEmbedder",
    "LocalEmbedder",
    "Ontology",
    "OntologyHashFile",
    "OpenAICompatExtractor",
    "RecordingExtractor",
    "ReplayExtractor",
    "ScriptedExtractor",
    "SourceType",
    "StandbyEmbedder",
    "UdsEmbedder",
    "drift_summary",
    "edge_system_prompt",
    "entity_system_prompt",
    "failures_path",
    "hash_record",
    "load_cost_table",
    "load_ontology_file",
    "make_embedder",
    "pascal_case",
    "perfect_extractor",
    "relation_type_for",
    "screaming_snake",
]


def __getattr__(name: str) -> Any:
    """Import ``AnthropicExtractor`` when first asked for: the ``anthropic`` SDK takes seconds
    to import, and only a workspace configured for Anthropic needs it."""
    if name == "AnthropicExtractor":
        from lcg.extract.anthropic_extractor import AnthropicExtractor

        return AnthropicExtractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
