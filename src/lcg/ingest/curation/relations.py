"""Relation typing (§3.8): canonicalize the group's edges onto the ontology's relation types,
backfill untyped edges from their names or facts, and reprocess them with the extractor."""

from __future__ import annotations

import re
from typing import Any, Literal

import numpy as np

from lcg.errors import ConfigError, EmbedderError, LcgError
from lcg.events import EdgeRecord, RelationRetyped, RelationTypesChanged
from lcg.extract import UNCLASSIFIED_RELATION, Extractor, Ontology, screaming_snake
from lcg.ingest.curation._common import (
    CLASSIFY_BATCH,
    NO_EXTRACTOR,
    SCOPES,
    WRITE_BATCH,
    CurationFrame,
    Progress,
    counted,
    emit,
    soft,
)
from lcg.ingest.declared import is_declared
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

__all__ = [
    "backfill_relation_types",
    "backfill_type",
    "canonicalize_relations",
    "reprocess_relation_types",
]

_NOISE = re.compile(r"^[A-Z][A-Z0-9 ]*\s*(→|->)\s*[A-Z][A-Z0-9 ]*$")
_ARROW = re.compile(r"→|->")


def _write_relation_types(
    ws: Workspace,
    group_id: str,
    changes: dict[str, str],
    expected: dict[str, str | None],
    cause: Literal["canonicalize", "backfill", "reprocess"],
    progress: Progress | None,
) -> int:
    """Record ``changes`` (uuid → type) in batches; an edge whose type changed since it was
    read (``expected``) is left alone. Returns the number of edges retyped."""
    written = 0
    items = list(changes.items())
    for start in range(0, len(items), WRITE_BATCH):
        batch = items[start : start + WRITE_BATCH]
        with ws.group_lock(group_id):
            with ws.reading():
                current = {e.uuid: e.relation_type for e in gr.all_edges(ws.graph, group_id)}
            keep = [
                RelationRetyped(uuid=u, relation_type=t)
                for u, t in batch
                if u in current and current[u] == expected.get(u)
            ]
            if keep:
                ws.commit(
                    group_id,
                    [RelationTypesChanged(group_id=group_id, cause=cause, changes=keep)],
                )
        written += len(keep)
        emit(progress, CurationFrame(phase="writing", total_mutations=written))
    return written


def _require_relation_ontology(ontology: Ontology | None, group_id: str) -> Ontology:
    if ontology is None or not ontology.relation_types:
        raise ConfigError(
            f"group '{group_id}' has no ontology with relation types: declare relation_types "
            "in <LIMINIS_WORKSPACE_ROOT>/.lcg/ontology.yaml (or the group's own ontology file)"
        )
    return ontology


def _pct(n: int, total: int) -> float:
    return round(100.0 * n / total, 1) if total else 0.0


def canonicalize_relations(
    ws: Workspace,
    ontology: Ontology | None,
    *,
    group_id: str,
    dry_run: bool = False,
    embedding_threshold: float = 0.7,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Map every edge of the group onto the ontology's relation types (§3.8)."""
    onto = _require_relation_ontology(ontology, group_id)
    with ws.reading():
        edges = _curated(gr.all_edges(ws.graph, group_id))
    declared = set(onto.relation_type_names)
    mapped: dict[str, str] = {}
    noise: list[EdgeRecord] = []
    residual: list[EdgeRecord] = []
    for i, e in enumerate(edges):
        counted(progress, "lexical", i, len(edges))
        rt = e.relation_type or ""
        if _NOISE.match(e.name) or (rt and _NOISE.match(rt)):
            noise.append(e)
            continue
        target = (
            onto.lookup_alias(e.name)
            or onto.match_keyword(e.name)
            or (rt if rt in declared else None)
            or (onto.lookup_alias(rt) or onto.match_keyword(rt) if rt else None)
        )
        if target:
            mapped[e.uuid] = target
        else:
            residual.append(e)
    promoted = 0
    warning: str | None = None
    with_fact = [e for e in residual if e.fact.strip()]
    if with_fact:
        promoted, warning = _embedding_fallback(
            ws, onto, with_fact, mapped, embedding_threshold, progress
        )
        residual = [e for e in residual if e.uuid not in mapped]
    expected = {e.uuid: e.relation_type for e in edges}
    changes: dict[str, str] = {}
    for e in edges:
        if e.uuid in mapped:
            if e.relation_type != mapped[e.uuid]:
                changes[e.uuid] = mapped[e.uuid]
    for e in residual:
        if e.relation_type != UNCLASSIFIED_RELATION:
            changes[e.uuid] = UNCLASSIFIED_RELATION
    for e in noise:
        if not e.relation_type:
            changes[e.uuid] = UNCLASSIFIED_RELATION
    if not dry_run and changes:
        _write_relation_types(ws, group_id, changes, expected, "canonicalize", progress)
    total = len(edges)
    result: dict[str, Any] = {
        "group_id": group_id,
        "total_edges": total,
        "mapped_count": len(mapped),
        "noise_count": len(noise),
        "residual_count": len(residual),
        "embedding_fallback_promoted": promoted,
        "mapped_pct": _pct(len(mapped), total),
        "noise_pct": _pct(len(noise), total),
        "residual_pct": _pct(len(residual), total),
        "dry_run": dry_run,
    }
    if warning is not None:
        result["embedding_warning"] = warning
    return result


def _embedding_fallback(
    ws: Workspace,
    onto: Ontology,
    with_fact: list[EdgeRecord],
    mapped: dict[str, str],
    threshold: float,
    progress: Progress | None,
) -> tuple[int, str | None]:
    """Map the edges no alias or keyword placed onto the relation type whose description is
    nearest their fact (cosine ≥ ``threshold``), adding to ``mapped``; ``(promoted, warning)``,
    the warning when the embedder failed and the fallback was skipped."""
    emit(progress, CurationFrame(phase="embedding_fallback", processed=0, total=len(with_fact)))
    descriptions = {
        t.name: (t.description or " ".join(t.name.lower().split("_"))) for t in onto.relation_types
    }
    try:
        vecs = ws.text_embedder.vectors(
            list(dict.fromkeys([*descriptions.values(), *(e.fact for e in with_fact)]))
        )
    except EmbedderError as exc:
        return 0, f"embedding fallback skipped: {exc}"
    promoted = 0
    if vecs:
        names = sorted(descriptions)
        matrix = np.stack([vecs[descriptions[n]] for n in names])
        for e in with_fact:
            scores = matrix @ vecs[e.fact]
            best = int(np.argmax(scores))
            if float(scores[best]) >= threshold:
                mapped[e.uuid] = names[best]
                promoted += 1
    return promoted, None


def _curated(edges: list[EdgeRecord]) -> list[EdgeRecord]:
    """The edges a curation pass may retype: not the declared ones, whose type is what
    their files declare (ADR 0203)."""
    return [e for e in edges if not is_declared(e.attributes)]


def backfill_type(edge: EdgeRecord) -> str:
    """The relation type backfill gives an untyped edge: its arrow-free name, else the first
    four words of its fact (SCREAMING_SNAKE), else ``UNCLASSIFIED``."""
    if edge.name.strip() and not _ARROW.search(edge.name):
        value = screaming_snake(edge.name)
        if value:
            return value
    return screaming_snake(" ".join(edge.fact.split()[:4])) or UNCLASSIFIED_RELATION


def backfill_relation_types(
    ws: Workspace, *, group_id: str, dry_run: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Give every untyped edge of the group a type derived from its name or fact (§3.8)."""
    with ws.reading():
        edges = _curated(gr.all_edges(ws.graph, group_id))
    changes: dict[str, str] = {}
    for i, e in enumerate(edges):
        counted(progress, "backfill", i, len(edges))
        if not e.relation_type:
            changes[e.uuid] = backfill_type(e)
    written = len(changes)
    if not dry_run and changes:
        # Guarded: only edges still untyped when their batch is written.
        expected: dict[str, str | None] = dict.fromkeys(changes, None)
        written = _write_relation_types(ws, group_id, changes, expected, "backfill", progress)
    return {
        "group_id": group_id,
        "total_edges": len(edges),
        "backfilled": written,
        "dry_run": dry_run,
    }


def reprocess_relation_types(
    ws: Workspace,
    extractor: Extractor | None,
    ontology: Ontology | None,
    *,
    group_id: str,
    scope: str = "untyped",
    dry_run: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Ask the extractor to classify the group's edges into the declared relation types."""
    if scope not in SCOPES:
        return soft(group_id, f"scope must be one of untyped, off_ontology, all (got '{scope}')")
    if ontology is None or not ontology.relation_types:
        return soft(group_id, f"group '{group_id}' has no ontology with relation types")
    if extractor is None:
        return soft(group_id, NO_EXTRACTOR)
    declared = set(ontology.relation_type_names)
    with ws.reading():
        edges = _curated(gr.all_edges(ws.graph, group_id))
    if scope == "untyped":
        todo = [e for e in edges if not e.relation_type]
    elif scope == "off_ontology":
        todo = [e for e in edges if not e.relation_type or e.relation_type not in declared]
    else:
        todo = list(edges)
    allowed = sorted((t.name, t.description) for t in ontology.relation_types)
    verdicts: dict[str, str] = {}
    try:
        for start in range(0, len(todo), CLASSIFY_BATCH):
            counted(progress, "classifying", start, len(todo))
            batch = todo[start : start + CLASSIFY_BATCH]
            answers = extractor.classify_relations(
                [(e.fact, e.relation_type or "") for e in batch], allowed
            )
            for e, a in zip(batch, answers, strict=False):
                verdicts[e.uuid] = a or UNCLASSIFIED_RELATION
    except LcgError as exc:
        return soft(group_id, str(exc))
    changes = {
        e.uuid: verdicts[e.uuid]
        for e in todo
        if verdicts.get(e.uuid, e.relation_type) != e.relation_type
    }
    breakdown: dict[str, int] = {}
    for t in changes.values():
        breakdown[t] = breakdown.get(t, 0) + 1
    breakdown = dict(sorted(breakdown.items()))
    if dry_run:
        return {
            "would_reclassify_count": len(changes),
            "plan": [
                {
                    "edge_id": e.uuid,
                    "fact": e.fact,
                    "old_type": e.relation_type,
                    "new_type": changes[e.uuid],
                }
                for e in todo
                if e.uuid in changes
            ],
            "breakdown": breakdown,
        }
    expected = {e.uuid: e.relation_type for e in todo}
    written = _write_relation_types(ws, group_id, changes, expected, "reprocess", progress)
    return {
        "success": True,
        "reclassified_count": written,
        "unchanged_count": len(todo) - len(changes),
        "group_id": group_id,
        "breakdown": breakdown,
    }
