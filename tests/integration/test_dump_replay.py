"""A dump replays to the same digests as the stream it compacts, with a fresh generation."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.config import Config
from lcg.errors import StreamError
from lcg.events.generation import read_generation
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import (
    assertion,
    cross_group,
    deletion,
    episodes,
    forget_source,
    merge,
    resolve_source,
)
from lcg.ingest.dump import dump_groups
from lcg.workspace import Workspace


def _populate(ws: Workspace) -> None:
    g = "notes"
    for name, summary in [("Ada", "mathematician"), ("Charles", "engineer"), ("ada ", "dup")]:
        assertion.assert_entity(ws, name=name, group_id=g, summary=summary)
    assertion.assert_entity(ws, name="Analytical Engine", group_id=g, labels=["Machine"])
    assertion.assert_relationship(
        ws, source_name="Ada", target_name="Analytical Engine", predicate="PROGRAMMED", group_id=g
    )
    assertion.assert_relationship(
        ws,
        source_name="Charles",
        target_name="Analytical Engine",
        predicate="DESIGNED",
        group_id=g,
        valid_at="1837-01-01T00:00:00Z",
    )
    for i in range(5):
        episodes.process_chunk(
            ws,
            chunk_text=f"note {i} about the engine",
            chunk_id=f"n{i}",
            source_file="a.md",
            group_id=g,
        )
    deletion.delete_chunk_episode(ws, "n3", [g])
    assertion.assert_entity(ws, name="Babbage", group_id=g)
    merge.merge_entities(ws, group_id=g, canonical_name="Charles", alias_names=["Babbage"])
    assertion.assert_entity(ws, name="Lovelace", group_id="people")
    cross_group.add_cross_group_edge(
        ws,
        group_id="notes",
        source={"source_group_id": "people", "endpoint_name": "Lovelace"},
        target={"source_group_id": "people", "endpoint_name": "Nobody"},
        name="SAME_AS",
    )
    # Sources (ADR 0200): two folders of one name, and one registered then removed.
    for root in ("/home/ada/notes", "/work/notes", "/home/ada/old"):
        resolve_source(ws, g, root, "folder")
    forget_source(ws, g, "/home/ada/old")


def test_dump_then_replay_gives_the_same_digests(tmp_path: Path) -> None:
    cfg = Config.from_env(tmp_path / "ws", env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(cfg, HashEmbedder()) as ws:
        _populate(ws)
        original = {g: ws.digests(g) for g in ("notes", "people")}
        generations = {g: ws.store.generation(g) for g in ("notes", "people")}
        target = tmp_path / "compacted"
        result = dump_groups(ws, target, None)
    assert result.groups == ["notes", "people"]
    assert result.files_written >= 2
    for g in ("notes", "people"):
        assert read_generation(target / g) not in (None, generations[g])
    replica = Config.from_env(
        tmp_path / "replica", env={"LCG_EMBEDDER": "hash", "LCG_WAL_DIR": str(target)}
    )
    with Workspace.open(replica, HashEmbedder()) as ws2:
        # Groups replay in name order, so "people" comes after "notes": the pointer into it
        # was unbound at dump time and stays unbound; everything else is identical.
        assert {g: ws2.digests(g) for g in ("notes", "people")} == original


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
