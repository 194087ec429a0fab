"""Entity typing (§3.7): reprocess the group's entities with the extractor, restamp the
ontology's parent labels, and report the summary embeddings (always current in lcg)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from lcg.errors import ConfigError, LcgError
from lcg.events import EntityRecord, EntityRetyped, EntityTypesChanged
from lcg.extract import Extractor, Ontology, pascal_case
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
from lcg.projections import MERGED_LABEL
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

__all__ = ["backfill_summary_embeddings", "reprocess_entity_types"]


def _leaf(labels: Sequence[str]) -> str:
    real = [lb for lb in labels if lb not in ("Entity", MERGED_LABEL)]
    return real[-1] if real else "Entity"


def _labels(ontology: Ontology | None, entity_type: str) -> list[str]:
    if ontology is not None:
        return ontology.labels_for(entity_type)
    return ["Entity", entity_type] if entity_type and entity_type != "Entity" else ["Entity"]


def _write_entity_types(
    ws: Workspace,
    group_id: str,
    changes: dict[str, list[str]],
    expected: dict[str, list[str]],
    cause: Literal["reprocess", "restamp"],
) -> int:
    """Record ``changes`` (uuid → labels) in batches; an entity whose labels changed since
    they were read (``expected``) is left alone. Returns the number of entities retyped."""
    written = 0
    items = list(changes.items())
    for start in range(0, len(items), WRITE_BATCH):
        with ws.group_lock(group_id):
            # Re-checked under the lock: the LLM was asked with no lock held, and a write
            # made meanwhile (an assert, a merge) must not be overwritten by a stale verdict.
            with ws.reading():
                current = {e.uuid: e.labels for e in gr.all_entities(ws.graph, group_id)}
            batch = [
                EntityRetyped(uuid=u, labels=labels)
                for u, labels in items[start : start + WRITE_BATCH]
                if u in current and current[u] == expected.get(u)
            ]
            if batch:
                ws.commit(
                    group_id,
                    [EntityTypesChanged(group_id=group_id, cause=cause, changes=batch)],
                )
        written += len(batch)
    return written


def reprocess_entity_types(
    ws: Workspace,
    extractor: Extractor | None,
    ontology: Ontology | None,
    *,
    workspace_root: Path | None,
    group_id: str,
    scope: str = "untyped",
    dry_run: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Ask the extractor to type the group's entities (§3.7); Merged tombstones are skipped."""
    if workspace_root is None:
        # An error, as the reference (§3.7), not a soft result: the setting is missing.
        raise ConfigError(
            "LIMINIS_WORKSPACE_ROOT not set; reprocess_entity_types unavailable (set it to the "
            "workspace root that holds .lcg/ontology.yaml)"
        )
    if scope not in SCOPES:
        return soft(group_id, f"scope must be one of untyped, off_ontology, all (got '{scope}')")
    has_types = ontology is not None and bool(ontology.entity_types)
    if scope != "untyped" and not has_types:
        return soft(group_id, f"scope '{scope}' needs an ontology with at least one entity type")
    if extractor is None:
        return soft(group_id, NO_EXTRACTOR)
    declared = set(ontology.entity_type_names) if ontology is not None else set()
    with ws.reading():
        entities = _typable(gr.all_entities(ws.graph, group_id))
    todo = _in_scope(entities, scope, declared)
    allowed = sorted(declared) if has_types else None
    try:
        changes, plan = _classify(extractor, ontology, todo, allowed, progress)
    except LcgError as exc:
        return soft(group_id, str(exc))
    if dry_run:
        return {"would_reclassify_count": len(changes), "plan": plan}
    if not todo:
        return {
            "success": True,
            "reclassified_count": 0,
            "unchanged_count": 0,
            "group_id": group_id,
        }
    expected = {e.uuid: e.labels for e in todo}
    written = _write_entity_types(ws, group_id, changes, expected, "reprocess")
    emit(progress, CurationFrame(phase="writing", total_mutations=written))
    restamped = 0
    if ontology is not None and ontology.has_parents:
        restamped = _restamp(ws, group_id, ontology, declared, progress)
    return {
        "success": True,
        "reclassified_count": written,
        "unchanged_count": len(todo) - len(changes),
        "restamped_count": restamped,
        "group_id": group_id,
    }


def _typable(entities: list[EntityRecord]) -> list[EntityRecord]:
    """The entities a typing pass may relabel: not merged ones, nor the declared documents
    and tags, whose labels say what their files are (ADR 0203)."""
    return [e for e in entities if MERGED_LABEL not in e.labels and not is_declared(e.attributes)]


def _in_scope(entities: list[EntityRecord], scope: str, declared: set[str]) -> list[EntityRecord]:
    if scope == "untyped":
        return [e for e in entities if e.labels == ["Entity"]]
    if scope == "off_ontology":
        return [
            e
            for e in entities
            if e.labels == ["Entity"]
            or any(lb != "Entity" and lb not in declared for lb in e.labels)
        ]
    return entities


def _classify(
    extractor: Extractor,
    ontology: Ontology | None,
    todo: list[EntityRecord],
    allowed: list[str] | None,
    progress: Progress | None,
) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """``(uuid → new labels, the dry-run plan)`` of the entities whose type the extractor
    changes; ``LcgError`` from the extractor propagates."""
    changes: dict[str, list[str]] = {}
    plan: list[dict[str, Any]] = []
    for start in range(0, len(todo), CLASSIFY_BATCH):
        counted(progress, "classifying", start, len(todo))
        batch = todo[start : start + CLASSIFY_BATCH]
        answers = extractor.classify_entities([(e.name, e.summary) for e in batch], allowed)
        for e, a in zip(batch, answers, strict=False):
            verdict = pascal_case(a) if a else ""
            old = _leaf(e.labels)
            if not verdict or verdict == old:
                continue
            changes[e.uuid] = _labels(ontology, verdict)
            plan.append(
                {
                    "entity_id": e.uuid,
                    "entity_name": e.name,
                    "old_type": old,
                    "new_type": verdict,
                }
            )
    return changes, plan


def _restamp(
    ws: Workspace,
    group_id: str,
    ontology: Ontology,
    declared: set[str],
    progress: Progress | None,
) -> int:
    """Give every entity of a declared type the ontology's full label chain (parents)."""
    emit(progress, CurationFrame(phase="restamping"))
    with ws.reading():
        current = _typable(gr.all_entities(ws.graph, group_id))
    restamp: dict[str, list[str]] = {}
    for e in current:
        leaf = _leaf(e.labels)
        if leaf in declared:
            want = ontology.labels_for(leaf)
            if e.labels != want:
                restamp[e.uuid] = want
    expected = {e.uuid: e.labels for e in current}
    return _write_entity_types(ws, group_id, restamp, expected, "restamp") if restamp else 0


def backfill_summary_embeddings(
    ws: Workspace, *, group_id: str, dry_run: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Report the entities with a summary; in lcg their summary vectors are always derived
    from the summary text by the projector, so there is nothing to backfill."""
    with ws.reading():
        candidates = [
            e
            for e in gr.all_entities(ws.graph, group_id)
            if e.summary.strip() and MERGED_LABEL not in e.labels
        ]
    emit(
        progress, CurationFrame(phase="embedding", processed=len(candidates), total=len(candidates))
    )
    return {
        "group_id": group_id,
        "candidates": len(candidates),
        "embedded": 0,
        "already_current": len(candidates),
        "dry_run": dry_run,
        "message": (
            "summary vectors are derived from each entity's summary text whenever it changes; "
            "none was missing, nothing was re-embedded"
        ),
    }
