"""The reference's restore point imports: ``knowledge_dump_wal`` with no group (issue 30 item 1,
ADR 0212).

lcg-api §3.9 and §5.6: ``knowledge_dump_wal`` with ``group_id`` absent dumps *all* groups into
one new stream in ``target_dir`` (default ``.lcg/wal-compacted``): a fresh writer from seq 0,
500-row pages ordered by uuid, phase 1 the nodes as ``MERGE (n:L {uuid: $uuid}) SET n.col =
$col, …`` with ``timestamp($x)`` and ``CASE WHEN $x IS NULL THEN NULL ELSE timestamp($x) END``,
values RFC 3339 with 6 fraction digits and ``Z``; phase 2 the two-hop ``RELATES_TO`` and the
``MENTIONS``; the group filter is on the row's own ``group_id``. The seed calls it "the way to
take a restore-point snapshot". The lines below are written by hand from that text: rows of two
groups (``alpha`` and ``team b``) interleaved by uuid in one directory. ``lcg import-reference``
of that directory must route each row by its own ``group_id`` — one import per group found —
with the refusals and the loss accounting of any import. Real Kuzu, real files, the CLI in
process; the embedder is the hash test double.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import lcg.cli.main as cli_main
from lcg.config import Config
from lcg.events.layout import LCG_DIR
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

Lcg = Callable[..., tuple[int, str, str]]

TS = "2024-06-01T12:00:00.000000+00:00"
T1 = "2024-04-01T08:30:00.250000Z"
ENTITY = (
    "MERGE (n:Entity {uuid: $uuid}) SET n.name = $name, n.group_id = $group_id, "
    "n.labels = $labels, n.created_at = timestamp($created_at), n.name_embedding = "
    "$name_embedding, n.summary = $summary, n.attributes = $attributes"
)
EPISODE = (
    "MERGE (n:Episodic {uuid: $uuid}) SET n.name = $name, n.group_id = $group_id, "
    "n.created_at = timestamp($created_at), n.source = $source, n.source_description = "
    "$source_description, n.content = $content, n.content_embedding = $content_embedding, "
    "n.valid_at = CASE WHEN $valid_at IS NULL THEN NULL ELSE timestamp($valid_at) END, "
    "n.entity_edges = $entity_edges"
)
EDGE = (
    "MERGE (n:RelatesToNode_ {uuid: $uuid}) SET n.name = $name, n.group_id = $group_id, "
    "n.created_at = timestamp($created_at), n.fact = $fact, n.fact_embedding = "
    "$fact_embedding, n.episodes = $episodes, n.expired_at = CASE WHEN $expired_at IS NULL "
    "THEN NULL ELSE timestamp($expired_at) END, n.valid_at = CASE WHEN $valid_at IS NULL THEN "
    "NULL ELSE timestamp($valid_at) END, n.invalid_at = CASE WHEN $invalid_at IS NULL THEN "
    "NULL ELSE timestamp($invalid_at) END, n.attributes = $attributes, n.relation_type = "
    "$relation_type"
)
HOPS = (
    "MATCH (src:Entity {uuid: $src_uuid}), (rn:RelatesToNode_ {uuid: $rn_uuid}), "
    "(dst:Entity {uuid: $dst_uuid}) MERGE (src)-[:RELATES_TO]->(rn) "
    "MERGE (rn)-[:RELATES_TO]->(dst)"
)
MENTIONS = (
    "MATCH (ep:Episodic {uuid: $ep_uuid}), (en:Entity {uuid: $en_uuid}) "
    "MERGE (ep)-[r:MENTIONS]->(en) SET r.uuid = $uuid, r.group_id = $group_id, "
    "r.created_at = timestamp($created_at)"
)
VEC = [0.25, -0.5, 0.125]


def _entity(uuid: str, name: str, group_id: Any) -> tuple[str, dict[str, Any]]:
    return ENTITY, {
        "uuid": uuid, "name": name, "group_id": group_id, "labels": ["Entity"],
        "created_at": T1, "name_embedding": VEC, "summary": f"{name}.", "attributes": "{}",
    }  # fmt: skip


def _dump_lines() -> list[tuple[str, dict[str, Any]]]:
    """An all-groups dump of ``alpha`` (two entities, an edge, an episode mentioning both)
    and ``team b`` (one entity), nodes by table then uuid, then the relationships."""
    return [
        _entity("u-01", "Ada Lovelace", "alpha"),
        _entity("u-02", "Grace Hopper", "team b"),
        _entity("u-03", "Analytical Engine", "alpha"),
        (
            EPISODE,
            {
                "uuid": "u-04",
                "name": "notes",
                "group_id": "alpha",
                "created_at": T1,
                "source": "text",
                "source_description": "notes.md",
                "content": "Ada Lovelace wrote about the Analytical Engine.",
                "content_embedding": VEC,
                "valid_at": None,
                "entity_edges": ["u-01", "u-03"],
            },
        ),  # fmt: skip
        (
            EDGE,
            {
                "uuid": "u-05",
                "name": "WROTE_ABOUT",
                "group_id": "alpha",
                "created_at": T1,
                "fact": "Ada Lovelace wrote about the Analytical Engine.",
                "fact_embedding": VEC,
                "episodes": ["u-04"],
                "expired_at": None,
                "valid_at": T1,
                "invalid_at": None,
                "attributes": "{}",
                "relation_type": "WROTE_ABOUT",
            },
        ),  # fmt: skip
        (HOPS, {"src_uuid": "u-01", "rn_uuid": "u-05", "dst_uuid": "u-03"}),
        (
            MENTIONS,
            {
                "ep_uuid": "u-04",
                "en_uuid": "u-01",
                "uuid": "u-06",
                "group_id": "alpha",
                "created_at": T1,
            },
        ),  # fmt: skip
    ]


def _write_dump(target: Path, lines: list[tuple[str, dict[str, Any]]]) -> Path:
    """``lines`` as the reference's dump writes them into ``target`` (one segment and a
    freshly minted generation, §5.5 and §5.6)."""
    target.mkdir(parents=True)
    (target / ".wal-generation.json").write_text(json.dumps({"generation": "d1d2d3"}))
    text = "".join(
        json.dumps(
            {"seq": seq, "ts": TS, "db": "", "cypher": cypher, "params": params},
            separators=(",", ":"),
        )
        + "\n"
        for seq, (cypher, params) in enumerate(lines)
    )
    (target / "20240601_120000_d0d0d0_0000.jsonl").write_text(text, encoding="utf-8")
    return target


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


def _open(ws: Path) -> Workspace:
    return Workspace.open(Config.from_env(ws, env={"LCG_EMBEDDER": "hash"}), HashEmbedder())


def _import(lcg: Lcg, ws: Path, source: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    status, out, _ = lcg(ws, "import-reference", str(source), "--json", "-s", *extra)
    result: dict[str, Any] = json.loads(out)
    return status, result


def _names(ws: Workspace, group_id: str) -> list[str]:
    return sorted(e.name for e in gr.all_entities(ws.graph, group_id))


def test_an_all_groups_dump_imports_each_row_into_its_own_group(lcg: Lcg, tmp_path: Path) -> None:
    dump = _write_dump(tmp_path / "old" / ".lcg" / "wal-compacted", _dump_lines())
    ws_dir = tmp_path / "ws"
    status, result = _import(lcg, ws_dir, dump)
    assert status == 0, result
    assert result["success"] and result["written"] and result["unmapped_total"] == 0
    assert result["routed_by_row"] is True and result["layout"] == "stream"
    by_group = {g["group_id"]: g for g in result["groups"]}
    assert sorted(by_group) == ["alpha", "team b"]
    assert (by_group["alpha"]["entities"], by_group["alpha"]["edges"]) == (2, 1)
    assert (by_group["alpha"]["episodes"], by_group["alpha"]["mentions"]) == (1, 2)
    assert (by_group["team b"]["entities"], by_group["team b"]["edges"]) == (1, 0)
    # The stream's seven lines are counted once, not once per group.
    assert sum(g["lines"] for g in result["groups"]) == 7
    with _open(ws_dir) as ws:
        assert ws.store.groups() == ["alpha", "team b"]
        assert _names(ws, "alpha") == ["Ada Lovelace", "Analytical Engine"]
        assert _names(ws, "team b") == ["Grace Hopper"]
        [edge] = gr.all_edges(ws.graph, "alpha")
        assert (edge.source_uuid, edge.target_uuid) == ("u-01", "u-03")
        [episode] = gr.all_episodes(ws.graph, "alpha")
        assert sorted(episode.mentions) == ["u-01", "u-03"]
        # No group is named after the dump's directory.
        assert gr.all_entities(ws.graph, "wal-compacted") == []
    status, out, _ = lcg(ws_dir, "verify")
    assert status == 0 and "verify: ok" in out, out
    # The human output says the rows were routed.
    status, out, _ = lcg(tmp_path / "ws2", "import-reference", str(dump), "-s")
    assert status == 0 and "2 group(s): alpha, team b" in out, out


def test_a_dump_row_that_names_no_group_is_a_loss(lcg: Lcg, tmp_path: Path) -> None:
    lines = _dump_lines() + [_entity("u-07", "Nobody's", "")]
    dump = _write_dump(tmp_path / "dump", lines)
    status, result = _import(lcg, tmp_path / "ws", dump)
    assert status == 1 and not result["written"]
    assert result["unmapped_total"] == 1
    [sample] = [s for g in result["groups"] for s in g["samples"]]
    assert sample["reason"] == "row_of_no_imported_group" and "u-07" in sample["where"]
    assert not (tmp_path / "ws" / LCG_DIR / "wal" / "alpha").exists()
    status, result = _import(lcg, tmp_path / "ws", dump, "--accept-loss")
    assert status == 0 and result["loss_accepted"]
    with _open(tmp_path / "ws") as ws:
        assert ws.store.groups() == ["alpha", "team b"]


def test_a_group_of_the_dump_this_workspace_has_is_refused(lcg: Lcg, tmp_path: Path) -> None:
    dump = _write_dump(tmp_path / "dump", _dump_lines())
    ws_dir = tmp_path / "ws"
    with _open(ws_dir) as ws:
        assertion.assert_entity(ws, name="Already here", group_id="team b", summary="ours")
    status, out, err = lcg(ws_dir, "import-reference", str(dump), "-s")
    assert status == 1 and "group 'team b' already exists" in err and "--force" in err
    with _open(ws_dir) as ws:  # nothing written, not even the group it did not refuse
        assert ws.store.groups() == ["team b"]
        assert _names(ws, "team b") == ["Already here"]
    status, result = _import(lcg, ws_dir, dump, "--force")
    assert status == 0 and [g["replaced"] for g in result["groups"]] == [False, True]
    with _open(ws_dir) as ws:
        assert _names(ws, "team b") == ["Grace Hopper"]


def test_one_group_of_a_dump_is_chosen(lcg: Lcg, tmp_path: Path) -> None:
    dump = _write_dump(tmp_path / "dump", _dump_lines())
    status, result = _import(lcg, tmp_path / "ws", dump, "--group", "team b")
    assert status == 0 and [g["group_id"] for g in result["groups"]] == ["team b"]
    # The other group's rows were left on purpose: not a loss.
    assert result["unmapped_total"] == 0
    assert result["groups"][0]["not_carried"]["rows_of_groups_not_chosen"] == 4
    with _open(tmp_path / "ws") as ws:
        assert ws.store.groups() == ["team b"]
    status, _, err = lcg(tmp_path / "ws3", "import-reference", str(dump), "--group", "nosuch")
    assert status == 1 and "nosuch" in err and "alpha, team b" in err
