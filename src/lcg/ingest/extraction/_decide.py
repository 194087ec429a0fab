"""Phase C of an extraction, under the group's lock with ``ws.reading()`` held: resolve the
batch's entities against the group, resolve the edges' endpoints, sort each edge into created,
restated or dropped, and build the one ``EpisodeExtracted`` event with its counters."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from lcg.errors import InvalidParamsError
from lcg.events import (
    DroppedEdge,
    EdgeInvalidation,
    EdgeRecord,
    EdgeRestated,
    EntityRecord,
    EntitySummaryUpdate,
    EpisodeExtracted,
)
from lcg.extract import ExtractedEdge, ExtractionOutput, Ontology
from lcg.ingest._common import attributes_text, new_uuid, parse_timestamp
from lcg.ingest.extraction._prepare import BatchEdge, BatchEntity, Episode, Prepared
from lcg.ingest.extraction.results import ChunkCounters
from lcg.ingest.resolution import ActiveEdge, GroupLookup, merge_summary, restates
from lcg.workspace import Workspace

__all__ = ["ResolvedEdges", "ResolvedEntities", "decide"]

#: An edge's endpoints as entity uuids; ``None`` where the name resolved to no entity.
Ends = tuple[str | None, str | None]


class ResolvedEntities(msgspec.Struct, kw_only=True):
    """The batch's entities resolved against the group."""

    created: list[EntityRecord] = []
    #: One summary update per existing entity (several batch entities may resolve to one).
    updated: dict[str, EntitySummaryUpdate] = {}
    #: The entity uuid of each batch entity, in batch order.
    uuids: list[str] = []
    #: Existing entities of the group this extraction touches (resolved or edge endpoints).
    existing: set[str] = set()
    matched: int = 0


class ResolvedEdges(msgspec.Struct, kw_only=True):
    """The batch's edges sorted: created, restating a current edge, or dropped."""

    created: list[EdgeRecord] = []
    restated: list[EdgeRestated] = []
    invalidated: list[EdgeInvalidation] = []
    dropped: list[DroppedEdge] = []
    reclassified: int = 0


def decide(
    ws: Workspace,
    ep: Episode,
    output: ExtractionOutput,
    prep: Prepared,
    model: str,
    ontology: Ontology | None,
) -> tuple[EpisodeExtracted, ChunkCounters]:
    """The ``EpisodeExtracted`` event of one prepared extraction, and its counters."""
    vectors: dict[str, Any] = prep.vectors

    def vector_of(text: str) -> Any:
        if text not in vectors:
            vectors.update(ws.text_embedder.vectors([text]))
        return vectors.get(text)

    lookup = GroupLookup(ws, ep.group_id, vector_of)
    ents = resolve_entities(lookup, prep.entities, ontology, ep.reference_time)
    ends = resolve_endpoints(lookup, prep.edges, ents)
    current = lookup.active_edges_among(
        [
            (a, b)
            for a, b in ends
            if a is not None and b is not None and a in ents.existing and b in ents.existing
        ]
    )
    edges = classify_edges(prep, ends, current, ents.existing, ep)
    unresolvable = [d for d in edges.dropped if d.reason == "unresolvable"]
    event = EpisodeExtracted(
        group_id=ep.group_id,
        episode_uuid=ep.uuid,
        entities_created=ents.created,
        entities_updated=list(ents.updated.values()),
        edges_created=edges.created,
        edges_restated=edges.restated,
        edges_invalidated=edges.invalidated,
        edges_dropped=edges.dropped,
        mentions=list(dict.fromkeys(ents.uuids)),
        model=output.model or model,
        entities_dropped_malformed=output.entities_dropped_malformed,
        edges_dropped_malformed=output.edges_dropped_malformed,
        entities_reclassified_unclassified=prep.entities_reclassified,
        edges_reclassified_unclassified=edges.reclassified,
    )
    counters = ChunkCounters(
        nodes_extracted=prep.nodes_extracted,
        edges_extracted=len(edges.created),
        edges_dropped_unresolvable=len(unresolvable),
        dropped_edges=unresolvable,
        edges_reclassified_unclassified=edges.reclassified,
        entities_reclassified_unclassified=prep.entities_reclassified,
        entities_dropped_malformed=output.entities_dropped_malformed,
        edges_dropped_malformed=output.edges_dropped_malformed,
        edges_restated=len(edges.restated),
        entities_matched=ents.matched,
    )
    return event, counters


# ---- resolve entities -----------------------------------------------------------------------


def resolve_entities(
    lookup: GroupLookup, batch: list[BatchEntity], ontology: Ontology | None, when: str
) -> ResolvedEntities:
    """Each batch entity: the existing entity it denotes (its summary merged in), else new."""
    out = ResolvedEntities()
    lookup.prefetch([b.name for b in batch])
    for b in batch:
        match = lookup.resolve(b.name)
        if match is None:
            rec = _new_entity(b, ontology, when)
            out.created.append(rec)
            out.uuids.append(rec.uuid)
            continue
        cand = match.candidate
        out.uuids.append(cand.uuid)
        out.existing.add(cand.uuid)
        out.matched += 1
        summary = merge_summary(cand.summary, b.summary)
        if summary == cand.summary:
            continue
        first = out.updated.get(cand.uuid)
        if first is not None:
            summary = merge_summary(first.summary, summary)
        out.updated[cand.uuid] = EntitySummaryUpdate(uuid=cand.uuid, summary=summary)
    return out


def _new_entity(b: BatchEntity, ontology: Ontology | None, when: str) -> EntityRecord:
    attrs: dict[str, Any] = {}
    if b.original_type is not None:
        attrs["original_entity_type"] = b.original_type
    if ontology is not None:
        labels = ontology.labels_for(b.entity_type)
    else:
        labels = ["Entity", b.entity_type] if b.entity_type else ["Entity"]
    return EntityRecord(
        uuid=new_uuid(),
        name=b.name,
        labels=labels,
        summary=b.summary,
        attributes=attributes_text(attrs),
        created_at=when,
    )


# ---- resolve endpoints ----------------------------------------------------------------------


def resolve_endpoints(
    lookup: GroupLookup, edges: list[BatchEdge], ents: ResolvedEntities
) -> list[Ends]:
    """Each edge's endpoints: the batch's entities, else the group's (exact or fuzzy name, no
    vectors); a group entity found here is added to ``ents.existing``."""
    lookup.prefetch(
        [be.source_name for be in edges if be.source_idx is None]
        + [be.target_name for be in edges if be.target_idx is None],
        use_vectors=False,
    )
    ends: list[Ends] = []
    for be in edges:
        pair: list[str | None] = []
        for idx, name in ((be.source_idx, be.source_name), (be.target_idx, be.target_name)):
            if idx is not None:
                pair.append(ents.uuids[idx])
                continue
            m = lookup.resolve(name, use_vectors=False)
            pair.append(m.candidate.uuid if m is not None else None)
            if m is not None:
                ents.existing.add(m.candidate.uuid)
        ends.append((pair[0], pair[1]))
    return ends


# ---- classify edges -------------------------------------------------------------------------


def classify_edges(
    prep: Prepared,
    ends: list[Ends],
    current: dict[tuple[str, str], list[ActiveEdge]],
    existing: set[str],
    ep: Episode,
) -> ResolvedEdges:
    """Sort the batch's edges: dropped (self-loop, unresolved endpoint, said twice in the
    episode), restating a current edge of the group, or new."""
    out = ResolvedEdges(dropped=[_loop_dropped(loop) for loop in prep.self_loops])
    seen_pairs: dict[tuple[str, str], list[tuple[str | None, str]]] = {}
    for be, (src, tgt) in zip(prep.edges, ends, strict=True):
        if src is None or tgt is None:
            side: Literal["source", "target", "both"] = (
                "both" if src is None and tgt is None else "source" if src is None else "target"
            )
            out.dropped.append(_dropped(be, unresolved_endpoint=side))
            continue
        if src == tgt:
            out.dropped.append(_dropped(be, reason="self_loop"))
            continue
        in_batch = seen_pairs.setdefault((src, tgt), [])
        if any(
            restates(be.relation_type, be.edge.fact, _as_active(rt, fact)) for rt, fact in in_batch
        ):
            out.dropped.append(_dropped(be, reason="duplicate_in_episode"))
            continue
        in_batch.append((be.relation_type, be.edge.fact))
        if src in existing and tgt in existing:
            prior = next(
                (
                    a
                    for a in current.get((src, tgt), [])
                    if restates(be.relation_type, be.edge.fact, a)
                ),
                None,
            )
            if prior is not None:
                _restate(out, be, prior, ep.uuid)
                continue
        if be.original_type is not None:
            out.reclassified += 1
        out.created.append(_new_edge(be, src, tgt, ep))
    return out


def _restate(out: ResolvedEdges, be: BatchEdge, prior: ActiveEdge, episode_uuid: str) -> None:
    if all(r.uuid != prior.uuid for r in out.restated):
        out.restated.append(EdgeRestated(uuid=prior.uuid, episode_uuid=episode_uuid))
    # A restatement that states the fact's end closes the current edge; a declared edge is
    # current while its file declares it, whatever a model says (ADR 0203).
    ended = _valid_time(be.edge.invalid_at)
    if (
        ended is not None
        and not prior.declared
        and all(i.uuid != prior.uuid for i in out.invalidated)
    ):
        out.invalidated.append(EdgeInvalidation(uuid=prior.uuid, invalid_at=ended, reason="ended"))


def _new_edge(be: BatchEdge, src: str, tgt: str, ep: Episode) -> EdgeRecord:
    edge_attrs: dict[str, Any] = {}
    if be.original_type is not None:
        edge_attrs["original_relation_type"] = be.original_type
    return EdgeRecord(
        uuid=new_uuid(),
        name=f"{be.source_name} \u2192 {be.target_name}",
        source_uuid=src,
        target_uuid=tgt,
        fact=be.edge.fact,
        relation_type=be.relation_type or None,
        valid_at=_valid_time(be.edge.valid_at) or ep.reference_time,
        invalid_at=_valid_time(be.edge.invalid_at),
        episodes=[ep.uuid],
        attributes=attributes_text(edge_attrs),
        created_at=ep.reference_time,
    )


def _dropped(
    be: BatchEdge,
    *,
    reason: str = "unresolvable",
    unresolved_endpoint: Literal["source", "target", "both"] | None = None,
) -> DroppedEdge:
    return DroppedEdge(
        source_name=be.edge.source_name,
        target_name=be.edge.target_name,
        relation_type=be.relation_type or None,
        fact=be.edge.fact,
        unresolved_endpoint=unresolved_endpoint,
        reason=reason,
    )


def _loop_dropped(loop: ExtractedEdge) -> DroppedEdge:
    # Self-loops found while preparing keep the extractor's own relation type.
    return DroppedEdge(
        source_name=loop.source_name,
        target_name=loop.target_name,
        relation_type=loop.relation_type,
        fact=loop.fact,
        reason="self_loop",
    )


def _valid_time(raw: str | None) -> str | None:
    if not raw:
        return None
    try:
        return parse_timestamp(raw, field="valid_at")
    except InvalidParamsError:
        return None


def _as_active(relation_type: str | None, fact: str) -> ActiveEdge:
    return ActiveEdge(uuid="", relation_type=relation_type, fact=fact)
