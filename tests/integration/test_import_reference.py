"""``lcg import-reference`` brings a reference workspace over (issue 19 item 1, ADR 0170).

The fixtures under ``wal-fixtures/reference/`` are streams written from the reference's
documented templates, one directory per line family (``make_reference_streams.py``), each with
the state the lines lead to. For each family the import runs through the CLI (in process) into
a fresh workspace, and the graph it leaves is compared field by field twice: with that expected
state, and through the reference's own Cypher reads run on our graph (it has the reference's
tables), which must answer that same state. Then ``lcg verify`` is ok and a search finds the
imported rows through recomputed vectors. Everything is real (Kuzu, hnswlib, files, the CLI);
the embedder is the hash test double.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import make_reference_streams as SCRIPT
import msgspec
import pytest

import lcg.cli.main as cli_main
from lcg import timestamps
from lcg.config import Config
from lcg.events.groups import encode_group
from lcg.events.layout import LCG_DIR
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.ingest.reference import layout
from lcg.projections.graph import records as gr
from lcg.query.search import Searcher
from lcg.workspace import Workspace

FIXTURES = SCRIPT.OUT
FAMILIES = SCRIPT.family_names()
CLEAN = [f for f in FAMILIES if f != "unmappable"]

#: ``lcg -C WS ARGS`` in this process: (exit status, stdout, stderr).
Lcg = Callable[..., tuple[int, str, str]]


@pytest.fixture
def lcg(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Lcg:
    for key in [k for k in os.environ if k.startswith("LCG_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")  # the test double: no model load
    monkeypatch.setenv("LCG_TELEMETRY", "off")

    def call(ws: Path, *args: str) -> tuple[int, str, str]:
        status = cli_main.main(["-C", str(ws), *args])
        out, err = capsys.readouterr()
        return status, out, err

    return call


def _expected(family: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((FIXTURES / family / "expected.json").read_text())
    return value


def _open(ws: Path) -> Workspace:
    return Workspace.open(Config.from_env(ws, env={"LCG_EMBEDDER": "hash"}), HashEmbedder())


def _import_json(lcg: Lcg, ws: Path, source: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    status, out, _ = lcg(ws, "import-reference", str(source), "--json", "-s", *extra)
    result: dict[str, Any] = json.loads(out)
    return status, result


def test_the_script_reproduces_the_committed_files(tmp_path: Path) -> None:
    SCRIPT.generate(tmp_path)
    assert sorted(p.name for p in FIXTURES.iterdir()) == sorted(FAMILIES)
    for name in FAMILIES:
        pending = [filecmp.dircmp(FIXTURES / name, tmp_path / name)]
        while pending:
            d = pending.pop()
            assert not d.left_only and not d.right_only, (name, d.left_only, d.right_only)
            _, mismatch, errors = filecmp.cmpfiles(d.left, d.right, d.common_files, shallow=False)
            assert not mismatch and not errors, (name, mismatch, errors)
            pending.extend(d.subdirs.values())


# ---- field by field -----------------------------------------------------------------------


def _ours(ws: Workspace, group_id: str) -> dict[str, Any]:
    """The group's state in our graph, in the shape of ``expected.json``."""
    entities = [msgspec.to_builtins(e) for e in gr.all_entities(ws.graph, group_id)]
    edges = [msgspec.to_builtins(e) for e in gr.all_edges(ws.graph, group_id)]
    episodes = []
    for ep in sorted(gr.all_episodes(ws.graph, group_id), key=lambda e: e.uuid):
        row = msgspec.to_builtins(ep)
        episodes.append({
            k: (sorted(v) if k == "mentions" else v)
            for k, v in row.items()
            if k not in ("group_id", "content_hash", "extracted")
        })  # fmt: skip
    return {"entities": entities, "edges": edges, "episodes": episodes}


#: Reads in the reference's schema, run unchanged on our graph.
READS = {
    "entities": "MATCH (e:Entity) WHERE e.group_id = $g RETURN e.uuid, e.name, e.labels, "
    "e.created_at, e.summary, e.attributes ORDER BY e.uuid",
    "edges": "MATCH (s:Entity)-[:RELATES_TO]->(r:RelatesToNode_)-[:RELATES_TO]->(d:Entity) "
    "WHERE r.group_id = $g RETURN r.uuid, s.uuid, d.uuid, r.name, r.fact, r.relation_type, "
    "r.valid_at, r.invalid_at, r.expired_at, r.episodes, r.attributes, r.created_at "
    "ORDER BY r.uuid",
    "all_edges": "MATCH (r:RelatesToNode_) WHERE r.group_id = $g RETURN r.uuid ORDER BY r.uuid",
    "episodes": "MATCH (p:Episodic) WHERE p.group_id = $g RETURN p.uuid, p.name, p.source, "
    "p.source_description, p.content, p.created_at, p.valid_at ORDER BY p.uuid",
    "mentions": "MATCH (p:Episodic)-[:MENTIONS]->(e:Entity) WHERE p.group_id = $g "
    "RETURN p.uuid, e.uuid ORDER BY p.uuid, e.uuid",
}


def _norm(value: Any) -> Any:
    # What "none" means is spelled two ways: the reference leaves a column NULL, lcg writes
    # "{}" for no attributes and "" for no relation type; times compare as recorded text.
    if isinstance(value, datetime):
        return timestamps.to_text(value)
    if value in ("{}", "", []):
        return None
    return value


def _read(run: Callable[[str, dict[str, Any]], list[list[Any]]], group_id: str) -> Any:
    return {
        name: [[_norm(v) for v in row] for row in run(query, {"g": group_id})]
        for name, query in READS.items()
    }


def _expected_reads(state: dict[str, Any]) -> Any:
    """What ``READS`` answer for the expected state of one group."""
    entity_keys = ("uuid", "name", "labels", "created_at", "summary", "attributes")
    edge_keys = ("uuid", "source_uuid", "target_uuid", "name", "fact", "relation_type",
                 "valid_at", "invalid_at", "expired_at", "episodes", "attributes", "created_at")
    episode_keys = ("uuid", "name", "source", "source_description", "content", "created_at",
                    "valid_at")  # fmt: skip
    rows = {
        "entities": [[e[k] for k in entity_keys] for e in state["entities"]],
        "edges": [[e[k] for k in edge_keys] for e in state["edges"]],
        "all_edges": [[e["uuid"]] for e in state["edges"]],
        "episodes": [[e[k] for k in episode_keys] for e in state["episodes"]],
        "mentions": sorted([e["uuid"], m] for e in state["episodes"] for m in e["mentions"]),
    }
    return {name: [[_norm(v) for v in row] for row in found] for name, found in rows.items()}


@pytest.mark.parametrize("family", CLEAN)
def test_each_line_family_imports_field_by_field(lcg: Lcg, tmp_path: Path, family: str) -> None:
    expected = _expected(family)
    status, result = _import_json(lcg, tmp_path, FIXTURES / family)
    assert status == 0, result
    assert result["success"] and result["written"] and result["unmapped_total"] == 0
    assert sorted(g["group_id"] for g in result["groups"]) == sorted(expected["groups"])
    assert result["layout"] == ("flat" if expected["layout"] == "flat" else "multi-group")
    with _open(tmp_path) as ws:
        for group_id, state in expected["groups"].items():
            ours = _ours(ws, group_id)
            for kind in ("entities", "edges", "episodes"):
                assert ours[kind] == state[kind], (family, group_id, kind)
            # The reference's reads, run on our graph, answer the same state.
            assert _read(ws.graph.query, group_id) == _expected_reads(state), group_id
            # Vectors are recomputed: one per entity name, fact and episode text.
            assert ws.vectors.count(group_id, "entity.name") == len(state["entities"])
            assert ws.vectors.count(group_id, "edge.fact") == len(state["edges"])
            assert ws.vectors.count(group_id, "episode.content") == len(state["episodes"])
        gen_dirs = {g: ws.store.generation(g) for g in expected["groups"]}
    for g in result["groups"]:
        assert g["generation"] == gen_dirs[g["group_id"]]
        assert "vectors_dropped" in g["not_carried"]
    status, out, _ = lcg(tmp_path, "verify")
    assert status == 0 and "verify: ok" in out, out


@pytest.mark.parametrize("family", ["native-multi-group", "graphiti-flat"])
def test_search_finds_the_imported_rows(lcg: Lcg, tmp_path: Path, family: str) -> None:
    state = next(iter(_expected(family)["groups"].values()))
    group_id = next(iter(_expected(family)["groups"]))
    assert _import_json(lcg, tmp_path, FIXTURES / family)[0] == 0
    entity, edge = state["entities"][0], state["edges"][0]
    with _open(tmp_path) as ws, ws.reading():
        searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
        found = searcher.find_entities(entity["name"], [group_id], 5)
        assert entity["uuid"] in [hit.uuid for hit in found]
        facts = searcher.find_relationships(edge["fact"], [group_id], 5)
        assert edge["uuid"] in [hit.uuid for hit in facts]
        # The vector leg alone finds them too: the vectors were computed from the text.
        vector = ws.embedder.embed([entity["name"]])[0]
        hits = ws.vectors.search(group_id, "entity.name", vector, 1)
        assert hits[0][0] == entity["uuid"]


# ---- refusals and losses ------------------------------------------------------------------


def test_an_existing_group_is_refused_without_force(lcg: Lcg, tmp_path: Path) -> None:
    source = FIXTURES / "timestamps-in-params"
    with _open(tmp_path) as ws:
        assertion.assert_entity(ws, name="Already here", group_id="liminis", summary="ours")
        before = ws.store.generation("liminis")
    status, out, err = lcg(tmp_path, "import-reference", str(source), "-s")
    assert status == 1 and out == ""
    assert "group 'liminis' already exists" in err and "--force" in err
    with _open(tmp_path) as ws:  # untouched
        assert [e.name for e in gr.all_entities(ws.graph, "liminis")] == ["Already here"]
        assert ws.store.generation("liminis") == before

    status, result = _import_json(lcg, tmp_path, source, "--force")
    assert status == 0 and result["groups"][0]["replaced"]
    expected = _expected("timestamps-in-params")["groups"]["liminis"]
    with _open(tmp_path) as ws:
        assert _ours(ws, "liminis") == expected  # the old entity is gone: a new generation
        assert ws.store.generation("liminis") not in (None, before)
    status, out, _ = lcg(tmp_path, "verify")
    assert status == 0 and "verify: ok" in out


def test_unmappable_lines_are_reported_and_nothing_is_written(lcg: Lcg, tmp_path: Path) -> None:
    source = FIXTURES / "unmappable"
    expected = _expected("unmappable")
    status, result = _import_json(lcg, tmp_path, source)
    assert status == 1
    assert result["success"] is False and result["written"] is False
    [group] = result["groups"]
    assert group["unmapped"] == expected["unmapped"]["liminis"]
    assert result["unmapped_total"] == sum(expected["unmapped"]["liminis"].values())
    samples = {(s["reason"], s["where"]) for s in group["samples"]}
    seg = "20240501_000000_999999_0000.jsonl"
    assert ("unparseable", f"{seg}:2") in samples  # not JSON
    assert ("failed", f"{seg}:5 seq 2") in samples  # an unknown table
    assert ("no_effect", f"{seg}:6 seq 3") in samples  # a hop to a missing edge
    assert ("community_row", "Community c-1") in samples
    failed = next(s for s in group["samples"] if s["reason"] == "failed")
    assert "Widget" in failed["detail"]
    assert not (tmp_path / LCG_DIR / "wal" / encode_group("liminis")).exists()

    status, out, err = lcg(tmp_path, "import-reference", str(source), "-s")
    assert status == 1
    assert "NOT MAPPED 6" in out and "failed at" in out and "--accept-loss" in err

    status, result = _import_json(lcg, tmp_path, source, "--accept-loss")
    assert status == 0 and result["success"] and result["loss_accepted"] and result["written"]
    with _open(tmp_path) as ws:
        assert _ours(ws, "liminis") == expected["groups"]["liminis"]


def test_one_group_is_chosen_and_an_unknown_one_named(lcg: Lcg, tmp_path: Path) -> None:
    source = FIXTURES / "native-multi-group"
    status, result = _import_json(lcg, tmp_path, source, "--group", "team b")
    assert status == 0 and [g["group_id"] for g in result["groups"]] == ["team b"]
    with _open(tmp_path) as ws:
        assert ws.store.groups() == ["team b"]
    status, _, err = lcg(tmp_path, "import-reference", str(source), "--group", "nosuch")
    assert status == 1 and "nosuch" in err and "liminis, team b" in err


def test_a_group_directory_and_a_wal_root_are_accepted(tmp_path: Path) -> None:
    root = FIXTURES / "native-multi-group" / ".lcg" / "wal"
    assert sorted(layout.find_streams(root).groups) == ["liminis", "team b"]
    one = layout.find_streams(root / "team%20b")
    assert list(one.groups) == ["team b"]
    # A flat root's loose files join the liminis directory the migration would move them to.
    mixed = tmp_path / "wal"
    shutil.copytree(FIXTURES / "graphiti-flat" / "wal", mixed)
    (mixed / "liminis").mkdir()
    shutil.copy(root / "liminis" / "20240430_080000_aaaaaa_0000.jsonl", mixed / "liminis")
    found = layout.find_streams(tmp_path)
    assert [p.name for p in found.groups["liminis"]] == [
        "20231101_101010_eeeeee_0000.jsonl",
        "20231102_113000_ffffff_0000.jsonl",
        "20240430_080000_aaaaaa_0000.jsonl",
    ]


def test_files_replay_in_first_seq_order_not_name_order() -> None:
    files = layout.find_streams(FIXTURES / "native-multi-group").groups["liminis"]
    names = [p.name for p in layout.ordered(files)]
    assert names == ["20240501_090000_bbbbbb_0000.jsonl", "20240430_080000_aaaaaa_0000.jsonl"]


def test_a_running_service_is_named_and_nothing_is_written(lcg: Lcg) -> None:
    import _service_fixtures as sf

    with sf.in_process_service() as svc:
        source = FIXTURES / "timestamps-in-params"
        status, out, err = lcg(svc.workspace, "import-reference", str(source), "-s")
        assert status == 1 and out == ""
        assert "a service is running" in err and "stop it" in err
        assert not (svc.config.wal_dir / "liminis").exists()
