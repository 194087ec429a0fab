"""What a folder's files declare, through the real ``lcg serve`` and ``lcg ingest`` (issue 29
item 1, ADR 0203): a hand-written vault's documents, tags and typed edges read back through
the RPC reads; an edit, a delete and a move synced exactly; an unchanged tree appending
nothing; ``lcg verify`` clean after it. Hash embedder (the test double), no LLM."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.rpc import Client

PLAN = """---
title: Plan
id: STORY-1
tags: [moon]
status: open
---
The plan links to [[Log]] and to [[Nowhere]].

```
[[Epic]] in a code block is no link
```
"""
LOG = """---
parent: "[[Epic]]"
---
# Log

What happened, as STORY-1 planned it.
"""
EPIC = "# Epic\n\nThe whole mission.\n"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, Client]]:
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


def _vault(root: Path) -> Path:
    for rel, text in {
        "a.md": PLAN,
        "b.md": LOG,
        "c.md": EPIC,
        "code/main.py": "import helper\n\nhelper.run()\n",
        "code/helper.py": "def run() -> None:\n    print('run')\n",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _ingest(ws: Path, vault: Path) -> str:
    done = sf.run_lcg(ws, "ingest", str(vault))
    assert done.returncode == 0, done.stderr
    return done.stdout


def _node(client: Client, name: str) -> dict[str, Any] | None:
    found = client.call("knowledge_find_entities", {"query": name, "num_results": 20})
    return next((n for n in found["nodes"] if n["name"] == name), None)


def _neighbours(client: Client, node: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(source name, relation type, target name) of the edges one hop from ``node``."""
    got = client.call("knowledge_get_entity_neighbors", {"entity_uuid": node["uuid"]})
    names = {n["uuid"]: n["name"] for n in got["nodes"]} | {node["uuid"]: node["name"]}
    return {
        (
            names.get(e["source_node_uuid"], "?"),
            e["relation_type"],
            names.get(e["target_node_uuid"], "?"),
        )
        for e in got["edges"]
    }


def _events(ws: Path) -> int:
    return sum(len(v) for v in sf.stream_events(ws / ".lcg" / "wal").values())


def test_a_vault_declares_its_graph_and_syncs_it_exactly(
    served: tuple[Path, Client], tmp_path: Path
) -> None:
    ws, client = served
    vault = _vault(tmp_path / "vault")
    out = _ingest(ws, vault)
    assert "declared: 5 documents, 2 links, 1 tags, 1 imports, 1 mentions, 1 unresolved" in out

    plan = _node(client, "Plan")
    assert plan is not None and "Document" in plan["labels"]
    attrs = plan["attributes"]
    attrs = json.loads(attrs) if isinstance(attrs, str) else attrs
    assert (attrs["origin"], attrs["path"], attrs["id"], attrs["status"]) == (
        "declared", "a.md", "STORY-1", "open",
    )  # fmt: skip
    log = _node(client, "Log")
    assert log is not None
    assert _neighbours(client, plan) == {
        ("Plan", "LINKS_TO", "Log"),
        ("Plan", "TAGGED", "#moon"),
    }
    assert ("Log", "PART_OF", "Epic") in _neighbours(client, log)
    main = _node(client, "main")
    assert main is not None
    assert _neighbours(client, main) == {("main", "IMPORTS", "helper")}
    facts = client.call("knowledge_find_relationships", {"query": "Log part of Epic"})
    assert any(e["relation_type"] == "PART_OF" for e in facts["facts"]), facts

    # An edit drops the link, a delete takes the epic, a move keeps the log's entity.
    (vault / "a.md").write_text(PLAN.replace("[[Log]] and to ", ""))
    (vault / "c.md").unlink()
    (vault / "archive").mkdir()
    (vault / "b.md").rename(vault / "archive" / "b.md")
    _ingest(ws, vault)
    assert _neighbours(client, plan) == {("Plan", "TAGGED", "#moon")}
    assert _node(client, "Epic") is None
    moved = _node(client, "Log")
    assert moved is not None and moved["uuid"] == log["uuid"]
    attrs = moved["attributes"]
    attrs = json.loads(attrs) if isinstance(attrs, str) else attrs
    assert attrs["path"] == "archive/b.md"
    assert _neighbours(client, log) == set()

    # Unchanged: nothing appended.
    before = _events(ws)
    _ingest(ws, vault)
    assert _events(ws) == before


def test_lcg_verify_is_clean_after_a_declared_sync(tmp_path: Path) -> None:
    ws = sf.short_tmp()
    try:
        vault = _vault(tmp_path / "vault")
        _ingest(ws, vault)  # the command serves the workspace itself while it runs
        (vault / "c.md").unlink()
        _ingest(ws, vault)
        verified = sf.run_lcg(ws, "verify")
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        shutil.rmtree(ws, ignore_errors=True)
