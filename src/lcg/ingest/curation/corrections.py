"""Curation passes: relation typing (§3.8), entity typing and the corrections file (§3.7).

Every pass reads the group, decides, and records its changes as events
(``RelationTypesChanged``, ``EntityTypesChanged``, ``CorrectionsApplied``). Long passes
write in batches (250 changes per event), each batch under the group's lock and re-checked
against the current graph first, so a concurrent write is never overwritten with a stale
decision. LLM calls (classification) happen with no lock held.

``progress`` callbacks receive ``CurationFrame``s (the reference's ``phase / processed /
total / total_mutations`` frames); the RPC layer forwards them as progress lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import msgspec
import numpy as np
import yaml

from lcg import timestamps
from lcg.errors import ConfigError, EmbedderError, LcgError
from lcg.events.files import atomic_write
from lcg.events.model import (
    CorrectionsApplied,
    EdgeInvalidation,
    EdgeRecord,
    EntityRecord,
    EntityRetyped,
    EntityTypesChanged,
    MergeOutcome,
    RelationRetyped,
    RelationTypesChanged,
)
from lcg.extract.extractor import Extractor
from lcg.extract.ontology import (
    UNCLASSIFIED_RELATION,
    Ontology,
    pascal_case,
    screaming_snake,
)
from lcg.ingest.merge import plan_merge
from lcg.projections import graph_reads
from lcg.projections import graph_records as gr
from lcg.projections.ops import MERGED_LABEL
from lcg.projections.workspace import Workspace

__all__ = [
    "ApplyCorrectionsResult",
    "CLASSIFY_BATCH",
    "CORRECTIONS_FILE",
    "CorrectionDetail",
    "CurationFrame",
    "NO_ROOT_MESSAGE",
    "PROGRESS_EVERY",
    "Progress",
    "ValidateCorrectionsResult",
    "WRITE_BATCH",
    "apply_corrections",
    "backfill_relation_types",
    "backfill_summary_embeddings",
    "backfill_type",
    "canonicalize_relations",
    "corrections_path",
    "reprocess_entity_types",
    "reprocess_relation_types",
    "validate_corrections",
]

#: Changes per recorded event (the reference's write batch).
WRITE_BATCH: Final = 250
#: Items per classification call (the reference's LLM batch).
CLASSIFY_BATCH: Final = 50
#: Progress is reported at 0 and every this many items.
PROGRESS_EVERY: Final = 5000
#: ``<root>/.liminis/knowledge-corrections.yaml`` (the reference's path).
CORRECTIONS_FILE: Final = Path(".liminis") / "knowledge-corrections.yaml"
NO_ROOT_MESSAGE: Final = "LIMINIS_WORKSPACE_ROOT not set; corrections unavailable"

_NOISE = re.compile(r"^[A-Z][A-Z0-9 ]*\s*(→|->)\s*[A-Z][A-Z0-9 ]*$")
_ARROW = re.compile(r"→|->")
_SCOPES: Final = ("untyped", "off_ontology", "all")


class CurationFrame(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One progress frame of a curation pass."""

    phase: str
    processed: int | None = None
    total: int | None = None
    total_mutations: int | None = None


#: Receives the frames of a pass.
Progress = Callable[[CurationFrame], None]


def _emit(progress: Progress | None, frame: CurationFrame) -> None:
    if progress is not None:
        progress(frame)


def _counted(progress: Progress | None, phase: str, done: int, total: int) -> None:
    if progress is not None and (done == 0 or done % PROGRESS_EVERY == 0):
        progress(CurationFrame(phase=phase, processed=done, total=total))


# ---- writing relation types -------------------------------------------------------------


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
        _emit(progress, CurationFrame(phase="writing", total_mutations=written))
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
        edges = gr.all_edges(ws.graph, group_id)
    declared = set(onto.relation_type_names)
    mapped: dict[str, str] = {}
    noise: list[EdgeRecord] = []
    residual: list[EdgeRecord] = []
    for i, e in enumerate(edges):
        _counted(progress, "lexical", i, len(edges))
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
        _emit(
            progress, CurationFrame(phase="embedding_fallback", processed=0, total=len(with_fact))
        )
        descriptions = {
            t.name: (t.description or " ".join(t.name.lower().split("_")))
            for t in onto.relation_types
        }
        try:
            vecs = ws.text_embedder.vectors(
                list(dict.fromkeys([*descriptions.values(), *(e.fact for e in with_fact)]))
            )
        except EmbedderError as exc:
            warning = f"embedding fallback skipped: {exc}"
            vecs = {}
        if vecs:
            names = sorted(descriptions)
            matrix = np.stack([vecs[descriptions[n]] for n in names])
            for e in with_fact:
                scores = matrix @ vecs[e.fact]
                best = int(np.argmax(scores))
                if float(scores[best]) >= embedding_threshold:
                    mapped[e.uuid] = names[best]
                    promoted += 1
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
        edges = gr.all_edges(ws.graph, group_id)
    changes: dict[str, str] = {}
    for i, e in enumerate(edges):
        _counted(progress, "backfill", i, len(edges))
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


def _soft(group_id: str, error: str) -> dict[str, Any]:
    return {"success": False, "group_id": group_id, "error": error}


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
    if scope not in _SCOPES:
        return _soft(group_id, f"scope must be one of untyped, off_ontology, all (got '{scope}')")
    if ontology is None or not ontology.relation_types:
        return _soft(group_id, f"group '{group_id}' has no ontology with relation types")
    if extractor is None:
        return _soft(group_id, "no extraction provider is configured")
    declared = set(ontology.relation_type_names)
    with ws.reading():
        edges = gr.all_edges(ws.graph, group_id)
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
            _counted(progress, "classifying", start, len(todo))
            batch = todo[start : start + CLASSIFY_BATCH]
            answers = extractor.classify_relations(
                [(e.fact, e.relation_type or "") for e in batch], allowed
            )
            for e, a in zip(batch, answers, strict=False):
                verdicts[e.uuid] = a or UNCLASSIFIED_RELATION
    except LcgError as exc:
        return _soft(group_id, str(exc))
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


# ---- entity types -----------------------------------------------------------------------


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
    cause: Literal["reprocess", "restamp"],
) -> int:
    written = 0
    items = list(changes.items())
    for start in range(0, len(items), WRITE_BATCH):
        batch = [
            EntityRetyped(uuid=u, labels=labels) for u, labels in items[start : start + WRITE_BATCH]
        ]
        with ws.group_lock(group_id):
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
    if scope not in _SCOPES:
        return _soft(group_id, f"scope must be one of untyped, off_ontology, all (got '{scope}')")
    has_types = ontology is not None and bool(ontology.entity_types)
    if scope != "untyped" and not has_types:
        return _soft(group_id, f"scope '{scope}' needs an ontology with at least one entity type")
    if extractor is None:
        return _soft(group_id, "no extraction provider is configured")
    declared = set(ontology.entity_type_names) if ontology is not None else set()
    with ws.reading():
        entities = [e for e in gr.all_entities(ws.graph, group_id) if MERGED_LABEL not in e.labels]
    if scope == "untyped":
        todo = [e for e in entities if e.labels == ["Entity"]]
    elif scope == "off_ontology":
        todo = [
            e
            for e in entities
            if e.labels == ["Entity"]
            or any(lb != "Entity" and lb not in declared for lb in e.labels)
        ]
    else:
        todo = entities
    allowed = sorted(declared) if has_types else None
    changes: dict[str, list[str]] = {}
    plan: list[dict[str, Any]] = []
    try:
        for start in range(0, len(todo), CLASSIFY_BATCH):
            _counted(progress, "classifying", start, len(todo))
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
    except LcgError as exc:
        return _soft(group_id, str(exc))
    if dry_run:
        return {"would_reclassify_count": len(changes), "plan": plan}
    if not todo:
        return {
            "success": True,
            "reclassified_count": 0,
            "unchanged_count": 0,
            "group_id": group_id,
        }
    written = _write_entity_types(ws, group_id, changes, "reprocess")
    _emit(progress, CurationFrame(phase="writing", total_mutations=written))
    restamped = 0
    if ontology is not None and ontology.has_parents:
        _emit(progress, CurationFrame(phase="restamping"))
        with ws.reading():
            current = [
                e for e in gr.all_entities(ws.graph, group_id) if MERGED_LABEL not in e.labels
            ]
        restamp: dict[str, list[str]] = {}
        for e in current:
            leaf = _leaf(e.labels)
            if leaf in declared:
                want = ontology.labels_for(leaf)
                if e.labels != want:
                    restamp[e.uuid] = want
        restamped = _write_entity_types(ws, group_id, restamp, "restamp") if restamp else 0
    return {
        "success": True,
        "reclassified_count": written,
        "unchanged_count": len(todo) - len(changes),
        "restamped_count": restamped,
        "group_id": group_id,
    }


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
    _emit(
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


# ---- corrections --------------------------------------------------------------------------


class ValidateCorrectionsResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_validate_corrections``."""

    valid: bool
    message: str
    total_corrections: int = 0
    unapplied_corrections: int = 0
    issues: list[str] = []
    warnings: list[str] = []


class CorrectionDetail(msgspec.Struct, kw_only=True):
    """What was done with one correction."""

    id: str
    action: str


class ApplyCorrectionsResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_apply_corrections``."""

    success: bool
    applied: int = 0
    skipped: int = 0
    errors: list[str] = msgspec.field(default_factory=list)
    details: list[CorrectionDetail] = msgspec.field(default_factory=list)
    #: Only present when there is something to say (no file, no root, unreadable file).
    message: str | msgspec.UnsetType = msgspec.UNSET


def corrections_path(root: Path) -> Path:
    """``<root>/.liminis/knowledge-corrections.yaml``."""
    return root / CORRECTIONS_FILE


def _load_entries(path: Path) -> list[Any]:
    """The raw entries of the corrections file; ``ValueError`` if it is not readable."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path} is not valid YAML: {exc}") from None
    if data is None:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("corrections", []), list):
        raise ValueError(f"{path} must hold a mapping with a 'corrections' list")
    return list(data.get("corrections") or [])


def _entry_id(raw: Any, i: int) -> str:
    value = raw.get("id") if isinstance(raw, dict) else None
    return str(value) if value not in (None, "") else f"#{i + 1}"


def _str_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _groups(ws: Workspace) -> list[str]:
    return sorted(ws.store.groups())


def _entity_anywhere(ws: Workspace, name: str) -> tuple[str, EntityRecord] | None:
    for g in _groups(ws):
        for e in gr.entities_by_name(ws.graph, g, name):
            if MERGED_LABEL not in e.labels:
                return g, e
    return None


def _alias_cycles(entries: list[tuple[str, str, list[str]]]) -> list[str]:
    """Cycles in the canonical → alias name graph of the unapplied same_as entries."""
    graph: dict[str, set[str]] = {}
    for _id, canonical, aliases in entries:
        key = canonical.strip().lower()
        for a in aliases:
            graph.setdefault(key, set()).add(a.strip().lower())
    issues: list[str] = []
    reported: set[frozenset[str]] = set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cycle = path[path.index(nxt) :] + [nxt]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    issues.append("alias cycle: " + " → ".join(cycle))
            elif len(path) < 64:
                walk(nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])
    return issues


def validate_corrections(ws: Workspace, workspace_root: Path | None) -> ValidateCorrectionsResult:
    """Check the corrections file: required fields, known types, referenced uuids, cycles."""
    if workspace_root is None:
        raise ConfigError(NO_ROOT_MESSAGE)
    path = corrections_path(workspace_root)
    if not path.exists():
        return ValidateCorrectionsResult(valid=True, message="No corrections file found")
    try:
        entries = _load_entries(path)
    except ValueError as exc:
        return ValidateCorrectionsResult(valid=False, message=str(exc), issues=[str(exc)])
    issues: list[str] = []
    warnings: list[str] = []
    seen: set[str] = set()
    same_as: list[tuple[str, str, list[str]]] = []
    unapplied = 0
    with ws.reading():
        for i, raw in enumerate(entries):
            cid = _entry_id(raw, i)
            if not isinstance(raw, dict):
                issues.append(f"correction {cid}: not a mapping")
                continue
            if raw.get("id") in (None, ""):
                issues.append(f"correction {cid}: missing id")
            elif cid in seen:
                issues.append(f"correction {cid}: duplicate id")
            seen.add(cid)
            if not raw.get("applied_at"):
                unapplied += 1
            kind = raw.get("type")
            if kind == "same_as":
                canonical = raw.get("canonical")
                cuuid = raw.get("canonical_uuid")
                aliases = _str_list(raw.get("aliases"))
                if not canonical and not cuuid:
                    issues.append(f"correction {cid}: same_as needs canonical or canonical_uuid")
                if not aliases:
                    issues.append(f"correction {cid}: same_as needs a non-empty aliases list")
                if cuuid and gr.entity_record(ws.graph, str(cuuid)) is None:
                    issues.append(f"correction {cid}: canonical_uuid '{cuuid}' does not exist")
                elif canonical and not cuuid and _entity_anywhere(ws, str(canonical)) is None:
                    warnings.append(f"correction {cid}: canonical '{canonical}' matches no entity")
                if canonical and any(
                    a.strip().lower() == str(canonical).strip().lower() for a in aliases
                ):
                    issues.append(f"correction {cid}: '{canonical}' is its own alias")
                if not raw.get("applied_at") and canonical:
                    same_as.append((cid, str(canonical), aliases))
            elif kind == "retract":
                edge_uuid = raw.get("edge_uuid")
                if not edge_uuid:
                    issues.append(f"correction {cid}: retract needs edge_uuid")
                elif not graph_reads.edges_by_uuids(ws.graph, [str(edge_uuid)]):
                    issues.append(f"correction {cid}: edge_uuid '{edge_uuid}' does not exist")
            elif kind in (None, ""):
                issues.append(f"correction {cid}: missing type")
            else:
                issues.append(f"correction {cid}: unknown type '{kind}' (same_as or retract)")
    issues += _alias_cycles(same_as)
    message = (
        f"{len(entries)} correction(s), {unapplied} unapplied"
        if not issues
        else f"{len(issues)} issue(s) in {path}"
    )
    return ValidateCorrectionsResult(
        valid=not issues,
        message=message,
        total_corrections=len(entries),
        unapplied_corrections=unapplied,
        issues=issues,
        warnings=warnings,
    )


def _plan_same_as(ws: Workspace, raw: dict[str, Any], now: str) -> tuple[str, MergeOutcome] | str:
    """(group, merge) for one same_as entry, or an error message."""
    cuuid = raw.get("canonical_uuid")
    canonical_name = raw.get("canonical")
    found: tuple[str, EntityRecord] | None
    if cuuid:
        found = gr.entity_record(ws.graph, str(cuuid))
        if found is None:
            return f"canonical entity '{cuuid}' not found"
    else:
        found = _entity_anywhere(ws, str(canonical_name or ""))
        if found is None:
            return f"canonical '{canonical_name}' matches no entities"
    group, canonical = found
    if MERGED_LABEL in canonical.labels:
        return f"canonical entity '{canonical.uuid}' is already merged"
    aliases: dict[str, EntityRecord] = {}
    for name in _str_list(raw.get("aliases")):
        for e in gr.entities_by_name(ws.graph, group, name):
            if e.uuid != canonical.uuid and MERGED_LABEL not in e.labels:
                aliases[e.uuid] = e
    if not aliases:
        return f"aliases {_str_list(raw.get('aliases'))} match no entities in group '{group}'"
    outcome, _plans, _rw, _dd, _ff = plan_merge(
        ws, group, canonical, [aliases[u] for u in sorted(aliases)], now
    )
    return group, outcome


def apply_corrections(
    ws: Workspace, workspace_root: Path | None, *, dry_run: bool = False
) -> ApplyCorrectionsResult:
    """Apply the unapplied entries of the corrections file, then stamp them ``applied_at``.

    Each applied entry is one ``CorrectionsApplied`` event in the group of the entities (or
    edge) it touches, decided under that group's lock after the previous entry was applied.
    """
    if workspace_root is None:
        raise ConfigError(NO_ROOT_MESSAGE)
    path = corrections_path(workspace_root)
    if not path.exists():
        return ApplyCorrectionsResult(success=True, message="No corrections file found")
    try:
        entries = _load_entries(path)
    except ValueError as exc:
        return ApplyCorrectionsResult(success=False, errors=[str(exc)], message=str(exc))
    result = ApplyCorrectionsResult(success=True)
    applied_ids: list[str] = []
    prefix = "dry_run:" if dry_run else ""
    for i, raw in enumerate(entries):
        cid = _entry_id(raw, i)
        if not isinstance(raw, dict) or raw.get("applied_at"):
            result.skipped += 1
            continue
        kind = raw.get("type")
        if kind == "same_as":
            outcome = _decide_and_commit(ws, cid, raw, dry_run)
        elif kind == "retract":
            outcome = _retract(ws, cid, raw, dry_run)
        else:
            outcome = f"unknown type '{kind}'"
        if isinstance(outcome, str):
            result.errors.append(f"correction {cid}: {outcome}")
            continue
        result.applied += 1
        result.details.append(CorrectionDetail(id=cid, action=f"{prefix}{kind}"))
        applied_ids.append(cid)
    result.success = not result.errors
    if applied_ids and not dry_run:
        try:
            _stamp_applied(path, applied_ids, timestamps.now())
        except (OSError, ValueError) as exc:
            result.errors.append(f"applied, but could not mark the file: {exc}")
            result.success = False
    return result


def _decide_and_commit(ws: Workspace, cid: str, raw: dict[str, Any], dry_run: bool) -> str | None:
    # The canonical's group is only known after a read; decide it, then re-decide under its
    # lock so the plan matches the graph it is committed on.
    with ws.reading():
        planned = _plan_same_as(ws, raw, timestamps.now())
    if isinstance(planned, str) or dry_run:
        return planned if isinstance(planned, str) else None
    group = planned[0]
    with ws.group_lock(group):
        with ws.reading():
            again = _plan_same_as(ws, raw, timestamps.now())
        if isinstance(again, str):
            return again
        ws.commit(
            group, [CorrectionsApplied(group_id=again[0], correction_ids=[cid], merges=[again[1]])]
        )
    return None


def _retract(ws: Workspace, cid: str, raw: dict[str, Any], dry_run: bool) -> str | None:
    edge_uuid = str(raw.get("edge_uuid") or "")
    if not edge_uuid:
        return "retract needs edge_uuid"
    with ws.reading():
        rows = graph_reads.edges_by_uuids(ws.graph, [edge_uuid])
    if not rows:
        return f"edge '{edge_uuid}' not found"
    if dry_run:
        return None
    group = rows[0].group_id
    with ws.group_lock(group):
        inv = EdgeInvalidation(uuid=edge_uuid, invalid_at=timestamps.now(), reason="retract")
        ws.commit(
            group, [CorrectionsApplied(group_id=group, correction_ids=[cid], retractions=[inv])]
        )
    return None


_ID_LINE = re.compile(r"^(?P<indent>\s*)(?P<dash>-\s+)?id\s*:\s*(?P<value>.+?)\s*(#.*)?$")
_FLOW_LINE = re.compile(r"^(?P<head>\s*-\s*\{.*)\}(?P<tail>\s*(#.*)?)$")


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _stamp_applied(path: Path, ids: list[str], ts: str) -> None:
    """Add ``applied_at: "<ts>"`` to each entry in ``ids``, editing the text (comments kept),
    replaced atomically; ``ValueError`` if an entry could not be found."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    wanted = set(ids)
    stamp = f'applied_at: "{ts}"'
    out: list[str] = []
    i = 0
    done: set[str] = set()
    while i < len(lines):
        line = lines[i]
        flow = _FLOW_LINE.match(line.rstrip("\n"))
        if flow is not None:
            try:
                entry = yaml.safe_load(line.strip().lstrip("-").strip())
            except yaml.YAMLError:
                entry = None
            if isinstance(entry, dict) and str(entry.get("id")) in wanted:
                done.add(str(entry.get("id")))
                nl = "\n" if line.endswith("\n") else ""
                out.append(f"{flow.group('head').rstrip()}, {stamp}}}{flow.group('tail')}{nl}")
                i += 1
                continue
        m = _ID_LINE.match(line.rstrip("\n"))
        if m is None or _unquote(m.group("value")) not in wanted:
            out.append(line)
            i += 1
            continue
        cid = _unquote(m.group("value"))
        done.add(cid)
        col = len(m.group("indent")) + len(m.group("dash") or "")
        out.append(line if line.endswith("\n") else line + "\n")
        id_pos = len(out) - 1
        i += 1
        # The rest of this entry: the lines indented to the key column or deeper.
        replaced = False
        while i < len(lines):
            body = lines[i].rstrip("\n")
            indent = len(body) - len(body.lstrip())
            if body.strip() and (indent < col or body.lstrip().startswith("- ") and indent < col):
                break
            if body.strip() and indent == col and body.lstrip().startswith("applied_at"):
                out.append(" " * col + stamp + "\n")
                replaced = True
            else:
                out.append(lines[i])
            i += 1
        if not replaced:
            out.insert(id_pos + 1, " " * col + stamp + "\n")
    missing = wanted - done
    if missing:
        raise ValueError(f"entries {sorted(missing)} not found in {path} to mark applied")
    atomic_write(path, "".join(out).encode("utf-8"))
