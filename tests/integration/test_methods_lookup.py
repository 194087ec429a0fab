"""lcg's own lookups (ADR 0224), on a real service: entities and episodes by uuid (in the
given order, missing ones left out, at most 500 a call), an entity with the episodes that
mention it, and a file's declared document by its path as served."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _without_mentions(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in r.items() if k not in ("episode_uuids", "source_descriptions")}
        for r in rows
    ]


def test_the_neighbors_of_several_entities_are_what_each_ones_read_answers(
    served: tuple[Client, Path],
) -> None:
    c, _ = served
    g = {"group_id": "g"}
    ids = {
        n: c.call("knowledge_assert_entity", {"name": n, **g})["entity_uuid"]
        for n in ("Hub", "A", "B", "C", "D")
    }
    far = c.call("knowledge_assert_entity", {"name": "Far", "group_id": "h"})["entity_uuid"]
    for n in ("A", "B", "C", "D"):
        c.call(
            "knowledge_assert_relationship",
            {"source_name": n, "target_name": "Hub", "predicate": "LINKS_TO", **g},
        )
    for n in ("A", "B"):
        c.call(
            "knowledge_assert_relationship",
            {"source_name": "Hub", "target_name": n, "predicate": "PART_OF", **g},
        )
    # An edge of another group into the hub, and an unbound one out of A (no endpoint yet).
    c.call(
        "knowledge_add_cross_group_edge",
        {
            "name": "NEAR",
            "group_id": "h",
            "source": {"uuid": far},
            "target": {"source_group_id": "g", "endpoint_name": "Hub"},
        },
    )
    c.call(
        "knowledge_add_cross_group_edge",
        {
            "name": "USES",
            "group_id": "g",
            "source": {"uuid": ids["A"]},
            "target": {"source_group_id": "libs", "endpoint_name": "Library"},
        },
    )
    centres = [ids["Hub"], ids["A"], "no-such-uuid", ids["B"], ids["Hub"], 7]
    for groups in (None, ["g"], ["h"], []):
        for n in (1, 3, 50):
            got = c.call(
                "knowledge_get_entities_neighbors",
                {"entity_uuids": centres, "num_results": n, "group_ids": groups},
            )
            hoods = got["neighborhoods"]
            assert [h["center_uuid"] for h in hoods] == [
                ids["Hub"],
                ids["A"],
                "no-such-uuid",
                ids["B"],
            ]
            assert got["count"] == 4
            for hood in hoods:
                one = c.call(
                    "knowledge_get_entity_neighbors",
                    {"entity_uuid": hood["center_uuid"], "num_results": n, "group_ids": groups},
                )
                assert _without_mentions(hood["edges"]) == _without_mentions(one["edges"])
                assert _without_mentions(hood["nodes"]) == _without_mentions(one["nodes"])
                assert {k: hood[k] for k in ("count", "node_count", "edge_count")} == {
                    k: one[k] for k in ("count", "node_count", "edge_count")
                }
    hub = c.call("knowledge_get_entities_neighbors", {"entity_uuids": [ids["Hub"]]})
    (only,) = hub["neighborhoods"]
    assert only["edge_count"] == 7 and {n["name"] for n in only["nodes"]} == {
        "A",
        "B",
        "C",
        "D",
        "Far",
    }


def test_a_neighbors_read_takes_at_most_20_entities(served: tuple[Client, Path]) -> None:
    c, _ = served
    many = [f"u{i}" for i in range(21)]
    with pytest.raises(InvalidParamsError, match="at most 20"):
        c.call("knowledge_get_entities_neighbors", {"entity_uuids": many})
    got = c.call("knowledge_get_entities_neighbors", {"entity_uuids": many[:20]})
    assert got["count"] == 20 and all(h["edges"] == [] for h in got["neighborhoods"])
