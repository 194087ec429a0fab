"""lcg's own lookups (ADR 0224), on a real service: entities and episodes by uuid (in the
given order, missing ones left out, at most 500 a call), an entity with the episodes that
mention it, and a file's declared document by its path as served."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import _service_fixtures as sf
from lcg.errors import InvalidParamsError
from lcg.rpc.client import Client


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Client, Path]]:
    with sf.in_process_service() as svc:
        yield svc.client(), svc.workspace


def test_entities_and_episodes_by_uuid_in_the_order_asked(served: tuple[Client, Path]) -> None:
    c, _ = served
    first = c.call("knowledge_assert_entity", {"name": "Moon", "group_id": "g"})["entity_uuid"]
    second = c.call("knowledge_assert_entity", {"name": "Mars", "group_id": "g"})["entity_uuid"]
    other = c.call("knowledge_assert_entity", {"name": "Venus", "group_id": "h"})["entity_uuid"]
    found = c.call("knowledge_get_entities_by_uuids", {"uuids": [second, "nope", first, 7]})
    assert [n["name"] for n in found["nodes"]] == ["Mars", "Moon"] and found["count"] == 2
    one_group = c.call(
        "knowledge_get_entities_by_uuids", {"uuids": [first, other], "group_ids": ["h"]}
    )
    assert [n["name"] for n in one_group["nodes"]] == ["Venus"]
    a = c.process_chunk(chunk_text="alpha text", chunk_id="a#1", source_file="a.md", group_id="g")
    b = c.process_chunk(chunk_text="beta text", chunk_id="b#1", source_file="b.md", group_id="g")
    eps = c.call(
        "knowledge_get_episodes_by_uuids", {"uuids": [b["episode_uuid"], a["episode_uuid"]]}
    )
    assert [e["content"] for e in eps["episodes"]] == ["beta text", "alpha text"]
    assert eps["episodes"][0]["source_description"] == "b.md:b#1"


def test_a_lookup_takes_at_most_500_uuids(served: tuple[Client, Path]) -> None:
    c, _ = served
    many = [f"u{i}" for i in range(501)]
    for method in ("knowledge_get_entities_by_uuids", "knowledge_get_episodes_by_uuids"):
        with pytest.raises(InvalidParamsError, match="at most 500"):
            c.call(method, {"uuids": many})
        assert c.call(method, {"uuids": many[:500]})["count"] == 0


def test_a_files_document_and_its_mentions(served: tuple[Client, Path]) -> None:
    c, ws = served
    root = ws / "outside" / "notes"
    (root / "deep").mkdir(parents=True)
    (root / "moon.md").write_text("# Moon\n\nSee [[Base]].\n")
    (root / "deep" / "base.md").write_text('---\ntitle: "Base \\"One\\""\n---\n# Base\n\nHome.\n')
    (root / "other.md").write_text("# Other\n\nNothing.\n")
    done = sf.run_lcg(ws, "ingest", str(root), "--group", "g", "--no-commits")
    assert done.returncode == 0, done.stderr
    doc = c.call("knowledge_get_document", {"file": "notes/deep/base.md", "group_id": "g"})
    assert [n["name"] for n in doc["nodes"]] == ['Base "One"']
    moon = c.call("knowledge_get_document", {"file": "notes/moon.md", "group_id": "g"})
    assert [n["name"] for n in moon["nodes"]] == ["Moon"]
    for missing in ("notes/none.md", "moon.md", "other/moon.md"):
        got = c.call("knowledge_get_document", {"file": missing, "group_id": "g"})
        assert got["nodes"] == [], missing
    assert (
        c.call("knowledge_get_document", {"file": "notes/moon.md", "group_id": "h"})["nodes"] == []
    )
