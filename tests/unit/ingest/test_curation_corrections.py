"""The corrections file (§3.7, ``ingest/curation/corrections``): what validation reports,
what each entry does when applied, and what it refuses. Real workspace and real files; the
hash embedder is a TEST DOUBLE. Validation that reads no entity shares the module's workspace;
an applied entry finds its canonical by name in any group, so those tests each open their own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from lcg.errors import ConfigError
from lcg.events.model import CorrectionsApplied, Event
from lcg.ingest import assertion
from lcg.ingest.curation import (
    NO_ROOT_MESSAGE,
    apply_corrections,
    corrections_path,
    validate_corrections,
)
from lcg.projections.graph import records as gr
from lcg.query import graph_reads as graph_reads
from lcg.workspace import Workspace

G = "crew"
EventsOf = Callable[[str], list[Event]]


def _file(root: Path, body: str) -> Path:
    path = corrections_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("corrections:\n" + body)
    return path


def _entity(ws: Workspace, name: str, group_id: str = G) -> str:
    return assertion.assert_entity(ws, name=name, group_id=group_id).entity_uuid


def _edge(ws: Workspace, src: str, tgt: str, predicate: str, group_id: str = G) -> str:
    return assertion.assert_relationship(
        ws, source_name=src, target_name=tgt, predicate=predicate, group_id=group_id
    ).edge_uuid


def _record(ws: Workspace, uuid: str) -> tuple[str, list[str], str]:
    with ws.reading():
        found = gr.entity_record(ws.graph, uuid)
    assert found is not None
    return found[0], found[1].labels, found[1].attributes


def _issues(ws: Workspace, root: Path, body: str) -> list[str]:
    _file(root, body)
    return validate_corrections(ws, root).issues


# ---- without a file ---------------------------------------------------------------------


def test_both_refuse_without_a_workspace_root(shared_ws: Workspace) -> None:
    with pytest.raises(ConfigError, match=NO_ROOT_MESSAGE):
        validate_corrections(shared_ws, None)
    with pytest.raises(ConfigError, match=NO_ROOT_MESSAGE):
        apply_corrections(shared_ws, None)


def test_no_file_is_valid_and_applies_nothing(shared_ws: Workspace, tmp_path: Path) -> None:
    checked = validate_corrections(shared_ws, tmp_path)
    assert (checked.valid, checked.message) == (True, "No corrections file found")
    applied = apply_corrections(shared_ws, tmp_path)
    assert (applied.success, applied.applied, applied.message) == (
        True,
        0,
        "No corrections file found",
    )


@pytest.mark.parametrize(
    "text", ["corrections: [unclosed\n", "- just a list\n", "corrections: 3\n"]
)
def test_a_file_of_the_wrong_shape_is_invalid_and_applies_nothing(
    shared_ws: Workspace, tmp_path: Path, text: str
) -> None:
    path = corrections_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    checked = validate_corrections(shared_ws, tmp_path)
    assert not checked.valid and checked.issues == [checked.message]
    applied = apply_corrections(shared_ws, tmp_path)
    assert not applied.success and applied.errors
    assert path.read_text() == text


def test_an_empty_file_holds_no_corrections(shared_ws: Workspace, tmp_path: Path) -> None:
    path = corrections_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("# nothing yet\n")
    checked = validate_corrections(shared_ws, tmp_path)
    assert (checked.valid, checked.total_corrections) == (True, 0)


# ---- validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "issue"),
    [
        ("- {type: same_as, canonical: A, aliases: [B]}", "correction #1: missing id"),
        ("- {id: x, edge_uuid: e}", "correction x: missing type"),
        ("- {id: x, type: rename}", "correction x: unknown type 'rename' (same_as or retract)"),
        ("- {id: x, type: same_as, aliases: [A]}", "same_as needs canonical or canonical_uuid"),
        ("- {id: x, type: same_as, canonical: A}", "same_as needs a non-empty aliases list"),
        ("- {id: x, type: same_as, canonical: A, aliases: []}", "needs a non-empty aliases list"),
        ("- {id: x, type: same_as, canonical_uuid: nope, aliases: [A]}", "'nope' does not exist"),
        ("- {id: x, type: retract}", "correction x: retract needs edge_uuid"),
        ("- {id: x, type: retract, edge_uuid: nope}", "edge_uuid 'nope' does not exist"),
        ("- just text", "correction #1: not a mapping"),
    ],
)
def test_each_malformed_entry_is_an_issue(
    shared_ws: Workspace, tmp_path: Path, entry: str, issue: str
) -> None:
    issues = _issues(shared_ws, tmp_path, "  " + entry + "\n")
    assert len(issues) == 1 and issue in issues[0], issues


def test_a_canonical_named_among_its_aliases_is_an_issue_and_a_cycle(
    shared_ws: Workspace, tmp_path: Path
) -> None:
    issues = _issues(
        shared_ws, tmp_path, "  - {id: x, type: same_as, canonical: Ada, aliases: [' ADA ']}\n"
    )
    assert issues == ["correction x: 'Ada' is its own alias", "alias cycle: ada → ada"]


def test_a_repeated_id_is_an_issue(ws: Workspace, tmp_path: Path) -> None:
    edge = _edge_of_two(ws)
    body = f"  - {{id: x, type: retract, edge_uuid: {edge}}}\n" * 2
    assert _issues(ws, tmp_path, body) == ["correction x: duplicate id"]


def test_a_canonical_name_matching_no_entity_is_only_a_warning(
    shared_ws: Workspace, tmp_path: Path
) -> None:
    _file(tmp_path, "  - {id: x, type: same_as, canonical: Nobody, aliases: [A]}\n")
    checked = validate_corrections(shared_ws, tmp_path)
    assert checked.valid and checked.issues == []
    assert checked.warnings == ["correction x: canonical 'Nobody' matches no entity"]


def test_unapplied_aliases_that_loop_are_a_cycle(shared_ws: Workspace, tmp_path: Path) -> None:
    issues = _issues(
        shared_ws,
        tmp_path,
        "  - {id: a, type: same_as, canonical: Alpha, aliases: [Beta]}\n"
        "  - {id: b, type: same_as, canonical: BETA, aliases: [alpha]}\n",
    )
    assert issues == ["alias cycle: alpha → beta → alpha"]


def test_applied_entries_are_counted_but_take_no_part_in_a_cycle(
    shared_ws: Workspace, tmp_path: Path
) -> None:
    _file(
        tmp_path,
        "  - {id: a, type: same_as, canonical: Alpha, aliases: [Beta], applied_at: '2024'}\n"
        "  - {id: b, type: same_as, canonical: Beta, aliases: [Alpha]}\n",
    )
    checked = validate_corrections(shared_ws, tmp_path)
    assert checked.valid, checked.issues
    assert (checked.total_corrections, checked.unapplied_corrections) == (2, 1)


# ---- applying same_as ---------------------------------------------------------------------


def _edge_of_two(ws: Workspace) -> str:
    _entity(ws, "Neil Armstrong")
    _entity(ws, "NASA")
    return _edge(ws, "Neil Armstrong", "NASA", "worked for")


def test_same_as_merges_the_aliases_into_the_canonical_and_stamps_the_entry(
    ws: Workspace, tmp_path: Path, events_of: EventsOf
) -> None:
    canonical = _entity(ws, "Neil Armstrong")
    alias = _entity(ws, "Armstrong")
    _entity(ws, "Apollo 11")
    moved = _edge(ws, "Armstrong", "Apollo 11", "commanded")
    path = _file(
        tmp_path,
        "  # kept by hand\n"
        "  - id: neil\n"
        "    type: same_as\n"
        "    canonical: neil armstrong\n"
        "    aliases: [ARMSTRONG]\n",
    )
    res = apply_corrections(ws, tmp_path)
    assert (res.success, res.applied, [d.action for d in res.details]) == (True, 1, ["same_as"])
    group, labels, attributes = _record(ws, alias)
    assert labels[-1] == "Merged" and f'"merged_into":"{canonical}"' in attributes
    with ws.reading():
        (old,) = graph_reads.edges_by_uuids(ws.graph, [moved])
        current = [e for e in gr.all_edges(ws.graph, G) if e.invalid_at is None]
    assert old.invalid_at is not None, "the alias's edge is closed"
    assert [(e.source_uuid, e.name) for e in current] == [(canonical, "commanded")]
    (event,) = [e for e in events_of(G) if isinstance(e, CorrectionsApplied)]
    assert event.correction_ids == ["neil"] and event.merges[0].canonical_uuid == canonical
    text = path.read_text()
    assert "# kept by hand" in text
    assert yaml.safe_load(text)["corrections"][0]["applied_at"]


def test_an_applied_entry_is_skipped_the_next_time(
    ws: Workspace, tmp_path: Path, events_of: EventsOf
) -> None:
    _entity(ws, "Neil Armstrong")
    _entity(ws, "Armstrong")
    _file(tmp_path, "  - {id: n, type: same_as, canonical: Neil Armstrong, aliases: [Armstrong]}\n")
    assert apply_corrections(ws, tmp_path).applied == 1
    before = len(events_of(G))
    again = apply_corrections(ws, tmp_path)
    assert (again.success, again.applied, again.skipped) == (True, 0, 1)
    assert len(events_of(G)) == before


def test_a_dry_run_reports_the_actions_and_changes_nothing(
    ws: Workspace, tmp_path: Path, events_of: EventsOf
) -> None:
    edge = _edge_of_two(ws)
    _entity(ws, "Armstrong")
    path = _file(
        tmp_path,
        "  - {id: n, type: same_as, canonical: Neil Armstrong, aliases: [Armstrong]}\n"
        f"  - {{id: r, type: retract, edge_uuid: {edge}}}\n",
    )
    text, before = path.read_text(), len(events_of(G))
    res = apply_corrections(ws, tmp_path, dry_run=True)
    assert [d.action for d in res.details] == ["dry_run:same_as", "dry_run:retract"]
    assert (path.read_text(), len(events_of(G))) == (text, before)


def test_aliases_are_found_only_in_the_canonicals_group(
    ws: Workspace, tmp_path: Path, events_of: EventsOf
) -> None:
    _entity(ws, "Neil Armstrong")
    elsewhere = _entity(ws, "Armstrong", group_id="other")
    path = _file(
        tmp_path, "  - {id: n, type: same_as, canonical: Neil Armstrong, aliases: [Armstrong]}\n"
    )
    res = apply_corrections(ws, tmp_path)
    assert not res.success and res.applied == 0
    assert res.errors == [f"correction n: aliases ['Armstrong'] match no entities in group '{G}'"]
    assert "Merged" not in _record(ws, elsewhere)[1]
    assert "applied_at" not in path.read_text(), "a failed entry stays unapplied"


def test_a_canonical_by_uuid_may_live_in_any_group(ws: Workspace, tmp_path: Path) -> None:
    canonical = _entity(ws, "Neil Armstrong", group_id="other")
    alias = _entity(ws, "Armstrong", group_id="other")
    _file(
        tmp_path,
        f"  - {{id: n, type: same_as, canonical_uuid: {canonical}, aliases: [armstrong]}}\n",
    )
    assert apply_corrections(ws, tmp_path).applied == 1
    group, labels, _ = _record(ws, alias)
    assert (group, labels[-1]) == ("other", "Merged")


def test_a_merged_canonical_is_refused(ws: Workspace, tmp_path: Path) -> None:
    _entity(ws, "Neil Armstrong")
    old = _entity(ws, "Armstrong")
    _entity(ws, "Commander")
    _file(
        tmp_path,
        "  - {id: a, type: same_as, canonical: Neil Armstrong, aliases: [Armstrong]}\n"
        f"  - {{id: b, type: same_as, canonical_uuid: {old}, aliases: [Commander]}}\n",
    )
    res = apply_corrections(ws, tmp_path)
    assert res.applied == 1
    assert res.errors == [f"correction b: canonical entity '{old}' is already merged"]


def test_the_canonical_is_never_its_own_alias(ws: Workspace, tmp_path: Path) -> None:
    canonical = _entity(ws, "Neil Armstrong")
    _file(
        tmp_path,
        "  - {id: n, type: same_as, canonical: Neil Armstrong, aliases: [NEIL ARMSTRONG]}\n",
    )
    res = apply_corrections(ws, tmp_path)
    assert res.applied == 0 and "match no entities" in res.errors[0]
    assert "Merged" not in _record(ws, canonical)[1]


# ---- applying retract and the rest --------------------------------------------------------


def test_retract_closes_the_edge(ws: Workspace, tmp_path: Path, events_of: EventsOf) -> None:
    edge = _edge_of_two(ws)
    _file(tmp_path, f"  - {{id: r, type: retract, edge_uuid: {edge}}}\n")
    res = apply_corrections(ws, tmp_path)
    assert (res.success, [d.action for d in res.details]) == (True, ["retract"])
    (event,) = [e for e in events_of(G) if isinstance(e, CorrectionsApplied)]
    (closed,) = event.retractions
    assert (closed.uuid, closed.reason) == (edge, "retract")
    with ws.reading():
        assert graph_reads.edges_by_uuids(ws.graph, [edge])[0].invalid_at is not None


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ("- {id: r, type: retract, edge_uuid: nope}", "correction r: edge 'nope' not found"),
        ("- {id: r, type: retract}", "correction r: retract needs edge_uuid"),
        ("- {id: u, type: rename}", "correction u: unknown type 'rename'"),
        ("- {id: c, type: same_as, canonical: Nobody, aliases: [A]}", "'Nobody' matches no"),
    ],
)
def test_an_entry_that_cannot_be_applied_is_an_error_and_the_rest_still_apply(
    ws: Workspace, tmp_path: Path, entry: str, error: str
) -> None:
    edge = _edge_of_two(ws)
    path = _file(tmp_path, f"  {entry}\n  - {{id: ok, type: retract, edge_uuid: {edge}}}\n")
    res = apply_corrections(ws, tmp_path)
    assert not res.success and len(res.errors) == 1 and error in res.errors[0], res.errors
    assert [d.id for d in res.details] == ["ok"]
    stamped = [e.get("applied_at") for e in yaml.safe_load(path.read_text())["corrections"]]
    assert stamped[0] is None and stamped[1]


def test_entries_that_are_not_mappings_are_skipped(ws: Workspace, tmp_path: Path) -> None:
    _file(tmp_path, "  - just text\n  - 7\n")
    res = apply_corrections(ws, tmp_path)
    assert (res.success, res.applied, res.skipped) == (True, 0, 2)


def test_same_as_drops_an_edge_that_would_loop_onto_the_canonical(
    ws: Workspace, tmp_path: Path
) -> None:
    canonical = _entity(ws, "Neil Armstrong")
    _entity(ws, "Armstrong")
    loop = _edge(ws, "Armstrong", "Neil Armstrong", "is")
    _file(tmp_path, "  - {id: n, type: same_as, canonical: Neil Armstrong, aliases: [Armstrong]}\n")
    assert apply_corrections(ws, tmp_path).applied == 1
    with ws.reading():
        edges = gr.all_edges(ws.graph, G)
    assert [(e.uuid, e.invalid_at is not None) for e in edges] == [(loop, True)]
    assert all(e.source_uuid != e.target_uuid for e in edges), f"no loop on {canonical}"
