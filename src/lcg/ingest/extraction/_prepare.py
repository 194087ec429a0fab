"""Phase A of an extraction, with no lock held: read the episode, then prepare the batch the
extractor returned (types normalised, self-loops set aside, names said twice folded into one
entity, unknown edge endpoints salvaged onto batch entities by name embedding)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from lcg.extract import (
    UNCLASSIFIED_ENTITY,
    ExtractedEdge,
    ExtractionOutput,
    Ontology,
    SourceType,
    pascal_case,
    relation_type_for,
)
from lcg.ingest.resolution import (
    SALVAGE_THRESHOLD,
    cap_summary,
    fuzzy_score,
    merge_summary,
    name_key,
)

# The module, not the package's face: ``sources`` names the extraction service (for its
# types), so its face importing back here would close a cycle.
from lcg.ingest.sources.formats import prompt_of
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

__all__ = [
    "BatchEdge",
    "BatchEntity",
    "Episode",
    "Prepared",
    "load_episode",
    "prepare",
    "source_type",
]

_SOURCE_TYPES: dict[str, SourceType] = {"text": "Text", "json": "Json", "message": "Message"}


class Episode(msgspec.Struct, kw_only=True):
    """A stored episode as extraction reads it."""

    uuid: str
    group_id: str
    name: str
    source: str
    source_description: str = ""
    content: str
    reference_time: str
    extracted: bool


class BatchEntity(msgspec.Struct, kw_only=True):
    """One entity of the batch (names said twice in the episode folded into one)."""

    name: str
    key: str
    entity_type: str
    original_type: str | None
    summary: str


class BatchEdge(msgspec.Struct, kw_only=True):
    """One extracted edge with its endpoints placed in the batch where they could be."""

    edge: ExtractedEdge
    source_name: str
    target_name: str
    #: Index into the batch entities, or ``None`` when the name must be looked up in the group.
    source_idx: int | None
    target_idx: int | None
    relation_type: str
    original_type: str | None


def source_type(ep: Episode) -> SourceType:
    """The prompt variant: the episode's source, except that a ``process_chunk`` chunk (source
    "text", description ``<file>:<chunk_id>``) gets its file's format's prompt (the table of
    formats, ``formats.prompt_of``: JSON and JSONL the JSON prompt, §3.2)."""
    suffix = f":{ep.name}"
    desc = ep.source_description
    if ep.source == "text" and ep.name and desc.endswith(suffix):
        return prompt_of(desc[: -len(suffix)])
    return _SOURCE_TYPES.get(ep.source, "Text")


def load_episode(ws: Workspace, uuid: str) -> Episode | None:
    """The stored episode ``uuid``, or ``None`` (caller holds ``ws.reading()``)."""
    rec = gr.episode_record(ws.graph, uuid)
    if rec is None:
        return None
    return Episode(
        uuid=uuid,
        group_id=rec.group_id,
        name=rec.name,
        source=rec.source,
        source_description=rec.source_description,
        content=rec.content,
        reference_time=rec.valid_at or rec.created_at,
        extracted=rec.extracted,
    )


# ---- the batch ----------------------------------------------------------------------------


class Prepared(msgspec.Struct, kw_only=True):
    """One extraction made ready for resolution: batch entities (duplicates folded), edges
    with their batch endpoints, self-loops, and the name vectors."""

    entities: list[BatchEntity]
    edges: list[BatchEdge]
    self_loops: list[ExtractedEdge]
    vectors: dict[str, Any]
    nodes_extracted: int
    entities_reclassified: int


def _entity_type(raw: str, ontology: Ontology | None) -> tuple[str, str | None]:
    if ontology is not None:
        return ontology.normalize_entity_type(raw)
    value = pascal_case(raw or "")
    return ("", None) if value in ("", "Entity") else (value, None)


def _relation_type(edge: ExtractedEdge, ontology: Ontology | None) -> tuple[str, str | None]:
    base = relation_type_for(edge.relation_type, edge.fact)
    if ontology is None:
        return base, None
    value, original = ontology.normalize_relation_type(base)
    if not value:
        return base, None
    return value, (edge.relation_type or base) if original is not None else None


def _batch_index(batch: list[BatchEntity], name: str) -> int | None:
    key = name_key(name)
    for i, b in enumerate(batch):
        if b.key == key:
            return i
    best: tuple[float, int] | None = None
    for i, b in enumerate(batch):
        score = fuzzy_score(name, b.name)
        if score is not None and (best is None or score > best[0]):
            best = (score, i)
    return None if best is None else best[1]


def prepare(ws: Workspace, output: ExtractionOutput, ontology: Ontology | None) -> Prepared:
    """The batch of one extraction, ready to resolve against the group (no lock needed)."""
    batch: list[BatchEntity] = []
    nodes = 0
    for ent in output.entities:
        if not name_key(ent.name):
            continue
        nodes += 1
        etype, original = _entity_type(ent.entity_type, ontology)
        idx = _batch_index(batch, ent.name)
        if idx is None:
            batch.append(
                BatchEntity(
                    name=ent.name.strip(),
                    key=name_key(ent.name),
                    entity_type=etype,
                    original_type=original,
                    summary=cap_summary(ent.summary),
                )
            )
            continue
        # The same thing named twice in one episode: one entity, summaries combined.
        same = batch[idx]
        same.summary = merge_summary(same.summary, ent.summary)
        if not same.entity_type and etype:
            same.entity_type, same.original_type = etype, original
    # Counted once the batch is folded: a name said twice may take its type on a later mention.
    reclassified = sum(
        1 for b in batch if b.entity_type == UNCLASSIFIED_ENTITY and b.original_type is not None
    )
    names = [b.name for b in batch]
    unknown: list[str] = []
    for edge in output.edges:
        for n in (edge.source_name, edge.target_name):
            if _batch_index(batch, n) is None and n not in unknown:
                unknown.append(n)
    vectors = ws.text_embedder.vectors(list(dict.fromkeys(names + unknown))) if names else {}
    prepared_edges: list[BatchEdge] = []
    loops: list[ExtractedEdge] = []
    for edge in output.edges:
        if name_key(edge.source_name) == name_key(edge.target_name):
            loops.append(edge)
            continue
        ends: list[tuple[str, int | None]] = []
        for n in (edge.source_name, edge.target_name):
            idx = _batch_index(batch, n)
            if idx is None:
                idx = _salvage(n, batch, vectors)
            ends.append((batch[idx].name if idx is not None else n, idx))
        (src, si), (tgt, ti) = ends
        if si is not None and si == ti:
            loops.append(edge)
            continue
        rtype, original = _relation_type(edge, ontology)
        prepared_edges.append(
            BatchEdge(
                edge=edge,
                source_name=src if si is not None else edge.source_name,
                target_name=tgt if ti is not None else edge.target_name,
                source_idx=si,
                target_idx=ti,
                relation_type=rtype,
                original_type=original,
            )
        )
    return Prepared(
        entities=batch,
        edges=prepared_edges,
        self_loops=loops,
        vectors=vectors,
        nodes_extracted=nodes,
        entities_reclassified=reclassified,
    )


def _salvage(name: str, batch: list[BatchEntity], vectors: dict[str, Any]) -> int | None:
    """The batch entity an unknown endpoint name is rewritten to (best cosine ≥ 0.85)."""
    vec = vectors.get(name)
    if vec is None:
        return None
    best: tuple[float, int] | None = None
    for i, b in enumerate(batch):
        other = vectors.get(b.name)
        if other is None:
            continue
        cos = float(np.dot(vec, other))
        if cos >= SALVAGE_THRESHOLD and (best is None or cos > best[0]):
            best = (cos, i)
    return None if best is None else best[1]
