"""Current truth after a supersession (issue 29 item 1, ADR 0211), through the real
``lcg serve`` and ``lcg ingest``: a vault where ``story-b.md`` says ``supersedes: story-a``;
the RPC reads and ``lcg search --entities`` serve the successor before the old story and
mark the old one ``superseded_by``; an edit removing ``supersedes:`` restores the plain order.
Hash embedder (the test double), no LLM."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.rpc import Client

# The old story matches the questions below better than its successor, so without the rule
# the old one comes first.
STORY_A = """---
title: Story A
id: STORY-A
---
# Story A

The launch window for the moon rocket opens in March. Launch window, moon rocket: March.
"""
STORY_B = """---
title: Story B
supersedes: story-a
---
# Story B

The moon rocket now flies in April.
"""
PASSAGES = "launch window moon rocket March"


@pytest.fixture
def served() -> Iterator[tuple[Path, Client]]:
    ws = sf.short_tmp()
    proc = sf.spawn_serve(ws)
    sock = ws / ".lcg" / "service.sock"
    try:
        sf.wait_healthy(sock, proc)
        with Client(sock, timeout=120) as client:
            yield ws, client
    finally:
        sf.stop_serve(proc, sock)
        shutil.rmtree(ws, ignore_errors=True)


def _ingest(lcg_main: sf.LcgMain, ws: Path, vault: Path) -> None:
    done = lcg_main(ws, "ingest", str(vault))
    assert done.returncode == 0, done.stderr


def _attrs(row: dict[str, Any]) -> dict[str, Any]:
    raw = row.get("attributes")
    parsed = json.loads(raw) if isinstance(raw, str) else raw
    return parsed if isinstance(parsed, dict) else {}


def _entity_names(client: Client, query: str, n: int = 10) -> list[tuple[str, Any]]:
    found = client.call("knowledge_find_entities", {"query": query, "num_results": n})
    return [
        (r["name"], _attrs(r).get("superseded_by"))
        for r in found["nodes"]
        if r["name"] in ("Story A", "Story B")
    ]


def _passage_files(client: Client) -> list[tuple[str, Any]]:
    got = client.call(
        "knowledge_search_passages", {"query": PASSAGES, "num_results": 10, "min_score": 0.0}
    )
    return [
        (p["source_description"].split(":", 1)[0], p.get("superseded_by")) for p in got["passages"]
    ]


def _facts(client: Client) -> list[str]:
    got = client.call(
        "knowledge_find_relationships",
        {"query": "Story A", "num_results": 10, "current_only": True},
    )
    return [str(f["relation_type"]) for f in got["facts"]]


def _cli_entities(lcg_main: sf.LcgMain, ws: Path) -> list[str]:
    done = lcg_main(ws, "search", "Story A", "--entities", "-n", "5")
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if "Story " in line]


def test_a_read_of_current_truth_serves_the_successor_first(
    served: tuple[Path, Client], tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    ws, client = served
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "story-a.md").write_text(STORY_A)
    (vault / "story-b.md").write_text(STORY_B)
    _ingest(lcg_main, ws, vault)

    # Entities: the successor first, the old one marked (the declared attribute, a path).
    assert _entity_names(client, "Story A") == [("Story B", None), ("Story A", "story-b.md")]
    # Asked for one, the answer is the successor: the old story was replaced.
    assert _entity_names(client, "Story A", n=1) == [("Story B", None)]
    # Facts: the SUPERSEDES fact comes before any other fact about the old story.
    assert _facts(client)[:1] == ["SUPERSEDES"]
    # Passages: the successor's chunk first, the old one's marked with the successor's file.
    got = _passage_files(client)
    assert got == [("vault/story-b.md", None), ("vault/story-a.md", "vault/story-b.md")], got
    lines = _cli_entities(lcg_main, ws)
    assert [line.split()[2] for line in lines[:2]] == ["B", "A"], lines
    assert "superseded by story-b.md" in lines[1] and "superseded" not in lines[0], lines
    # The plain passage output says it too.
    done = lcg_main(ws, "search", PASSAGES, "--min-score", "0", "-n", "10")
    assert done.returncode == 0, done.stderr
    heads = [line for line in done.stdout.splitlines() if line[:1].isdigit()]
    old = [line for line in heads if line.split()[1] == "vault/story-a.md"]
    new = [line for line in heads if line.split()[1] == "vault/story-b.md"]
    assert old and new and heads.index(new[0]) < heads.index(old[0]), heads
    assert all("superseded by vault/story-b.md" in line for line in old), heads
    assert not any("superseded" in line for line in new), heads

    # An edit removing ``supersedes:`` restores the plain order, nothing marked.
    (vault / "story-b.md").write_text(STORY_B.replace("supersedes: story-a\n", ""))
    _ingest(lcg_main, ws, vault)
    assert _entity_names(client, "Story A")[0] == ("Story A", None)
    assert all(mark is None for _name, mark in _entity_names(client, "Story A"))
    assert "SUPERSEDES" not in _facts(client)
    plain = _passage_files(client)
    assert plain[0] == ("vault/story-a.md", None), plain
    assert all(mark is None for _file, mark in plain), plain
    lines = _cli_entities(lcg_main, ws)
    assert lines[0].split()[2] == "A" and not any("superseded" in x for x in lines), lines
