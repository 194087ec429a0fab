"""The corrections file (§3.7): ``<root>/.liminis/knowledge-corrections.yaml`` is validated,
and its unapplied ``same_as`` (merge) and ``retract`` entries are applied as
``CorrectionsApplied`` events, then stamped ``applied_at`` in the file (comments kept)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import msgspec
import yaml

from lcg import timestamps
from lcg.errors import ConfigError
from lcg.events import (
    CorrectionsApplied,
    EdgeInvalidation,
    EntityRecord,
    MergeOutcome,
    atomic_write,
    lookup_key,
)
from lcg.ingest.declared import is_declared
from lcg.ingest.merge import plan_merge
from lcg.projections import MERGED_LABEL
from lcg.projections import graph_records as gr
from lcg.query import graph_reads
from lcg.workspace import Workspace

__all__ = [
    "CORRECTIONS_FILE",
    "NO_ROOT_MESSAGE",
    "ApplyCorrectionsResult",
    "CorrectionDetail",
    "ValidateCorrectionsResult",
    "apply_corrections",
    "corrections_path",
    "validate_corrections",
]

#: ``<root>/.liminis/knowledge-corrections.yaml`` (the reference's path).
CORRECTIONS_FILE: Final = Path(".liminis") / "knowledge-corrections.yaml"
NO_ROOT_MESSAGE: Final = "LIMINIS_WORKSPACE_ROOT not set; corrections unavailable"


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
        key = lookup_key(canonical)
        for a in aliases:
            graph.setdefault(key, set()).add(lookup_key(a))
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
                if canonical and any(lookup_key(a) == lookup_key(str(canonical)) for a in aliases):
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
    if is_declared(rows[0].attributes):
        # Current while its file declares it (ADR 0203): the file is where it is retracted.
        return f"edge '{edge_uuid}' is declared by a file of its source: edit the file instead"
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
