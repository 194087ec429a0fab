"""Extractors: the port every extractor implements (``port``), the reading of a model's
answers (``salvage``) and the shared driver of the LLM providers (``driver``)."""

from __future__ import annotations

from lcg.extract.extractor.driver import (
    CLASSIFY_ENTITIES_MAX_TOKENS,
    CLASSIFY_RELATIONS_MAX_TOKENS,
    DEFAULT_RETRY_DELAYS,
    CallReply,
    CallSpec,
    CallType,
    ClassifyFailure,
    ClassifyOutputParse,
    EntitiesMissingSummary,
    ExtractionFailure,
    ExtractionTruncated,
    FailureSink,
    LlmExtractor,
    LlmFallback,
    ProviderCallError,
    StructuredOutputParse,
)
from lcg.extract.extractor.port import (
    DelegatingExtractor,
    ExtractedEdge,
    ExtractedEntity,
    ExtractionOutput,
    Extractor,
    ExtractRequest,
    SourceType,
)
from lcg.extract.extractor.salvage import (
    normalize_classification,
    parse_json_tolerant,
    relation_type_for,
    salvage_edges,
    salvage_entities,
)

__all__ = [
    "CLASSIFY_ENTITIES_MAX_TOKENS",
    "CLASSIFY_RELATIONS_MAX_TOKENS",
    "DEFAULT_RETRY_DELAYS",
    "CallReply",
    "CallSpec",
    "CallType",
    "ClassifyFailure",
    "ClassifyOutputParse",
    "DelegatingExtractor",
    "EntitiesMissingSummary",
    "ExtractRequest",
    "ExtractedEdge",
    "ExtractedEntity",
    "ExtractionFailure",
    "ExtractionOutput",
    "ExtractionTruncated",
    "Extractor",
    "FailureSink",
    "LlmExtractor",
    "LlmFallback",
    "ProviderCallError",
    "SourceType",
    "StructuredOutputParse",
    "normalize_classification",
    "parse_json_tolerant",
    "relation_type_for",
    "salvage_edges",
    "salvage_entities",
]
