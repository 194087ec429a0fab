"""A dump replays to the same graph as the stream it compacts, with a fresh generation — over
the full event history (issue 31, ADR 0221): every type of the ``Event`` union, recorded by its
step in ``event_registry`` (the real command where there is one), and the graph story of
``event_samples.history`` committed as it stands. The replayed workspace must hold the same
rows in every table of the real Kuzu graph and the same digests in every projection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from event_registry import UNION, record_history, tag_of
from event_samples import G, H, ent, history
from lcg.config import Config
from lcg.errors import StreamError
from lcg.events import EntityAsserted, StreamReader
from lcg.events.generation import read_generation
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.ingest.dump import dump_groups
from lcg.workspace import Workspace

#: A group's applied position: a dump changes it on purpose (a fresh generation, fewer seqs).
POSITION_TABLE = "WalPosition"


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None), list)) else str(value)


def _node(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in row.items() if k not in ("_id", "_src", "_dst")}


def _key(node: dict[str, Any]) -> list[Any]:
    return [node["_label"], node.get("uuid", node.get("id", node.get("version")))]


def graph_rows(ws: Workspace, groups: list[str]) -> dict[str, list[str]]:
    """Every row of every table of the graph (Kuzu's own list of tables) that belongs to
    ``groups`` or to no group, canonical and sorted; a relationship names its endpoints."""
    out: dict[str, list[str]] = {}
    with ws.reading():
        for name, kind in ws.graph.query("CALL show_tables() RETURN name, type"):
            if name == POSITION_TABLE:
                continue
            if kind == "NODE":
                rows = [_node(r[0]) for r in ws.graph.query(f"MATCH (n:{name}) RETURN n")]
            else:
                rows = [
                    {"from": _key(_node(a)), "rel": _node(r), "to": _key(_node(b))}
                    for a, r, b in ws.graph.query(f"MATCH (a)-[r:{name}]->(b) RETURN a, r, b")
                ]
            mine = [
                r for r in rows if r.get("group_id", r.get("rel", {}).get("group_id")) in groups
                or "group_id" not in r and "group_id" not in r.get("rel", {})
            ]  # fmt: skip
            out[str(name)] = sorted(json.dumps(r, sort_keys=True) for r in mine)
    return out


def episode_parts(ws: Workspace, groups: list[str]) -> dict[str, list[dict[str, str]]]:
    """Each episode's parts the text projection keeps beside its digest's text: the source
    it ranks under, its reference time and its extraction keys."""
    out: dict[str, list[dict[str, str]]] = {}
    with ws.reading():
        for g in groups:
            uuids = [
                str(u)
                for (u,) in ws.graph.query(
                    "MATCH (p:Episodic) WHERE p.group_id = $g RETURN p.uuid", {"g": g}
                )
            ]
            out[g] = [
                ws.text.sources_of(g, uuids),
                ws.text.times_of(g, uuids),
                ws.text.keys_of(g, uuids),
            ]
    return out


def _tags(ws: Workspace, groups: list[str]) -> set[str]:
    return {tag_of(type(e)) for g in groups for e in StreamReader(ws.store.group_dir(g)).events()}


def test_dump_of_the_full_history_replays_to_the_same_graph(tmp_path: Path) -> None:
    cfg = Config.from_env(tmp_path / "ws", env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(cfg, HashEmbedder()) as ws:
        groups = record_history(ws, "story")
        # The graph story too, as its events stand (an unbound pointer, a removed document).
        ws.commit(H, [EntityAsserted(group_id=H, entity=ent("h1", "Hugo"), created=True)])
        for event in history():
            ws.commit(event.group_id, [event])
        groups = sorted([*groups, G, H])
        missing = {tag_of(t) for t in UNION} - _tags(ws, groups)
        assert not missing, f"the history records no event of {sorted(missing)}"
        rows = graph_rows(ws, groups)
        digests = {g: ws.digests(g) for g in groups}
        parts = episode_parts(ws, groups)
        generations = {g: ws.store.generation(g) for g in groups}
        result = dump_groups(ws, tmp_path / "compacted", None)
    assert result.groups == groups
    assert result.files_written >= len(groups) - 1  # the purged group: a generation, no segment
    for g in groups:
        assert read_generation(tmp_path / "compacted" / g) not in (None, generations[g])
    replica = Config.from_env(
        tmp_path / "replica",
        env={"LCG_EMBEDDER": "hash", "LCG_WAL_DIR": str(tmp_path / "compacted")},
    )
    with Workspace.open(replica, HashEmbedder()) as ws2:
        replayed = graph_rows(ws2, groups)
        assert {g: ws2.digests(g) for g in groups} == digests
        assert episode_parts(ws2, groups) == parts
    differing = {
        table: {
            "lost": sorted(set(rows[table]) - set(replayed.get(table, []))),
            "new": sorted(set(replayed.get(table, [])) - set(rows[table])),
        }
        for table in rows.keys() | replayed.keys()
        if rows.get(table) != replayed.get(table)
    }
    assert not differing, differing


def test_dump_refuses_a_non_empty_target(tmp_path: Path) -> None:
    cfg = Config.from_env(tmp_path / "ws", env={"LCG_EMBEDDER": "hash"})
    target = tmp_path / "busy"
    target.mkdir()
    (target / "keep.txt").write_text("x")
    with Workspace.open(cfg, HashEmbedder()) as ws:
        assertion.assert_entity(ws, name="A", group_id="g")
        with pytest.raises(StreamError, match="not empty"):
            dump_groups(ws, target, None)
    assert (target / "keep.txt").read_text() == "x"
