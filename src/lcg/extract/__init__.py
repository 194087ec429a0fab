"""Ports to the outside world: embedders and extractors (LLM providers, cassettes)."""

from __future__ import annotations

from lcg.extract.embedders import (
    Embedder,
    HashEmbedder,
    HttpEmbedder,
    LocalEmbedder,
    UdsEmbedder,
    make_embedder,
)
from lcg.extract.extractor import (
    ExtractedEdge,
    ExtractedEntity,
    ExtractionOutput,
    Extractor,
    ExtractRequest,
)
from lcg.extract.ontology import Ontology
from lcg.extract.scripted import ScriptedExtractor

__all__ = [
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
    "ScriptedExtractor",
    "UdsEmbedder",
    "make_embedder",
]
