"""Conformance of the read methods against the reference (lcg-api.md §2–§3), table-driven.

One real service (real socket, real Kuzu, hash test embedder) is seeded with two groups:
``liminis`` (three entities, two relationships, two episodes) and ``g2`` (one entity, one
episode). Every case sends raw JSON-RPC lines and checks result keys, defaults and errors;
the ``group_ids`` table checks omitted / ``[]`` / bare string / non-string elements for all
nine read tools (§2.1: preserve-empty vs collapse).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import _service_fixtures as sf

ENTITY_KEYS = {
    "uuid", "name", "group_id", "labels", "created_at", "summary", "attributes",
    "episode_uuids", "source_descriptions",
}  # fmt: skip
EDGE_KEYS = {
    "uuid", "name", "source_node_uuid", "target_node_uuid", "group_id", "fact", "created_at",
    "valid_at", "invalid_at", "attributes", "relation_type", "episode_uuids",
    "source_descriptions",
}  # fmt: skip
EPISODE_KEYS = {
    "uuid", "name", "group_id", "created_at", "source", "source_description", "content",
    "valid_at", "entity_edges",
}  # fmt: skip
PASSAGE_KEYS = {
    "uuid", "name", "content", "source_description", "group_id", "created_at", "valid_at",
    "score", "fused_score",
}  # fmt: skip


@dataclass
class Seeded:
    """The seeded service and the uuids it holds."""

    conn: sf.RawConnection
    ids: dict[str, str]


@pytest.fixture(scope="module")
def seeded() -> Iterator[Seeded]:
    from lcg import telemetry

    telemetry.set_sink(None, enabled=False)
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as conn:
        ids: dict[str, str] = {}
        for key, name, summary, group in (
            ("neil", "Neil Armstrong", "astronaut who walked on the Moon", "liminis"),
            ("apollo", "Apollo 11", "the first crewed Moon landing mission", "liminis"),
            ("nasa", "NASA", "the United States space agency", "liminis"),
            ("buzz", "Buzz Aldrin", "lunar module pilot", "g2"),
        ):
            r = conn.result(
                "knowledge_assert_entity", {"name": name, "summary": summary, "group_id": group}
            )
            ids[key] = r["entity_uuid"]
        for key, src, pred, dst in (
            ("commanded", "Neil Armstrong", "COMMANDED", "Apollo 11"),
            ("worked", "Neil Armstrong", "WORKED_FOR", "NASA"),
        ):
            r = conn.result(
                "knowledge_assert_relationship",
                {"source_name": src, "target_name": dst, "predicate": pred},
            )
            ids[key] = r["edge_uuid"]
        r = conn.result(
            "knowledge_process_chunk",
            {
                "chunk_text": "Apollo 11 landed on the Moon in July 1969.",
                "chunk_id": "c1",
                "source_file": "mission.txt",
                "reference_time": "2020-01-01T00:00:00Z",
            },
        )
        ids["c1"] = r["episode_uuid"]
        r = conn.result(
            "knowledge_add_episode",
            {
                "name": "e2",
                "episode_body": "Neil Armstrong commanded the Apollo 11 mission to the Moon.",
                "source_description": "notes",
                "reference_time": "2021-01-01T00:00:00Z",
            },
        )
        ids["e2"] = r["episode_uuid"]
        r = conn.result(
            "knowledge_process_chunk",
            {
                "chunk_text": "Buzz Aldrin followed Armstrong onto the Moon.",
                "chunk_id": "c2",
                "source_file": "g2.txt",
                "group_id": "g2",
            },
        )
        ids["g2ep"] = r["episode_uuid"]
        yield Seeded(conn, ids)


# ---- result shapes and defaults ------------------------------------------------------------


def _rows_have(key: str, keys: set[str]) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        assert set(result) >= {key, "count"}, result
        assert result["count"] == len(result[key])
        for row in result[key]:
            assert set(row) == keys, set(row) ^ keys

    return check


@dataclass(frozen=True)
class Case:
    """One call and what must hold of its answer."""

    method: str
    params: dict[str, Any]
    check: Callable[[Any], None] | None = None
    error: tuple[int, str] | None = None

    def __str__(self) -> str:
        return f"{self.method}{self.params}"


def _keys(expected: set[str]) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        assert set(result) == expected, set(result) ^ expected

    return check


def _count(n: int, inner: Callable[[Any], None]) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        inner(result)
        assert result["count"] == n, result

    return check


CASES = [
    # searches (§3.4)
    Case("knowledge_find_entities", {"query": "Moon"}, _rows_have("nodes", ENTITY_KEYS)),
    # query is required everywhere, as the MCP schema says (issue 15 item 5); "" is allowed
    Case("knowledge_find_entities", {}, error=(-32602, "query is required")),
    Case("knowledge_find_entities", {"query": ""}, _rows_have("nodes", ENTITY_KEYS)),
    Case("knowledge_find_entities", {"query": "Moon", "num_results": 1},
         _count(1, _rows_have("nodes", ENTITY_KEYS))),
    Case("knowledge_find_relationships", {"query": "commanded"}, _rows_have("facts", EDGE_KEYS)),
    Case("knowledge_find_relationships", {"query": "x", "num_results": 1},
         _count(1, _rows_have("facts", EDGE_KEYS))),
    Case("knowledge_search_passages", {"query": "Moon", "min_score": 0},
         _rows_have("passages", PASSAGE_KEYS)),
    Case("knowledge_search_passages", {}, error=(-32602, "query is required")),
    Case("knowledge_search_passages", {"query": "   "}, error=(-32602, "query is required")),
    # num_results below 1 is refused (issue 27), above 100 read as 100; min_score clamps to 0..1
    Case("knowledge_search_passages", {"query": "Moon", "num_results": 0},
         error=(-32602, "num_results must be an integer from 1 to 100 (got 0)")),
    Case("knowledge_search_passages", {"query": "Moon", "num_results": 1, "min_score": -5},
         _count(1, _rows_have("passages", PASSAGE_KEYS))),
    Case("knowledge_search_passages", {"query": "Moon", "num_results": 1000, "min_score": 7},
         _rows_have("passages", PASSAGE_KEYS)),
    # graph reads (§3.5)
    Case("knowledge_get_episodes", {}, _count(2, _rows_have("episodes", EPISODE_KEYS))),
    Case("knowledge_get_episodes", {"last_n": 1}, _count(1, _rows_have("episodes", EPISODE_KEYS))),
    Case("knowledge_get_episodes", {"group_id": "g2"},
         _count(1, _rows_have("episodes", EPISODE_KEYS))),
    Case("knowledge_get_episodes", {"group_id": "nobody"},
         _count(0, _rows_have("episodes", EPISODE_KEYS))),
    Case("knowledge_get_nodes_by_group", {}, _count(4, _rows_have("nodes", ENTITY_KEYS))),
    Case("knowledge_get_edges_by_group", {}, _count(2, _rows_have("edges", EDGE_KEYS))),
    Case("knowledge_get_edges_by_uuids", {}, _count(0, _rows_have("edges", EDGE_KEYS))),
    Case("knowledge_get_edges_by_uuids", {"uuids": []}, _count(0, _rows_have("edges", EDGE_KEYS))),
    # a wrong type is refused, not read as [] (issue 15 item 5)
    Case("knowledge_get_edges_by_uuids", {"uuids": "not-a-list"},
         error=(-32602, 'uuids must be an array (got "not-a-list")')),
    Case("knowledge_list_entities", {}, _count(4, _rows_have("nodes", ENTITY_KEYS))),
    Case("knowledge_list_entities", {"num_results": 2},
         _count(2, _rows_have("nodes", ENTITY_KEYS))),
    Case("knowledge_list_entities", {"num_results": 0}, error=(-32602, "num_results must be > 0")),
    Case("knowledge_list_entities", {"num_results": -3}, error=(-32602, "num_results must be > 0")),
    Case("knowledge_list_relationships", {}, _count(2, _rows_have("facts", EDGE_KEYS))),
    Case("knowledge_list_relationships", {"num_results": 0},
         error=(-32602, "num_results must be > 0")),
    Case("knowledge_list_relationships", {"num_results": "ten"},
         error=(-32602, "num_results must be an integer")),
    Case("knowledge_get_entity_neighbors", {}, error=(-32602, "entity_uuid is required")),
    Case("knowledge_get_entity_neighbors", {"entity_uuid": ""},
         error=(-32602, "entity_uuid is required")),
    Case("knowledge_get_entity_neighbors", {"entity_uuid": "no-such-uuid"},
         _keys({"center_uuid", "nodes", "edges", "count", "node_count", "edge_count"})),
    Case("knowledge_get_entities_by_source", {}, error=(-32602, "source is required")),
    Case("knowledge_get_entities_by_source", {"source": "mission.txt"},
         _keys({"source", "nodes", "count"})),
    # status / health / jobs (§3.1)
    Case("health_check", {}, lambda r: r.__eq__({"ok": True, "healthy": True, "state": "healthy"})
         or pytest.fail(str(r))),
    Case("knowledge_rebuild_status", {}, error=(-32602, "job_id is required")),
    Case("knowledge_rebuild_status", {"job_id": ""}, error=(-32602, "job_id is required")),
    Case("knowledge_rebuild_status", {"job_id": "nope"}, _keys({"status"})),
    Case("knowledge_query_cypher", {"query": "MATCH (e:Entity) RETURN e.name ORDER BY e.name"},
         lambda r: r.__eq__({"rows": [["Apollo 11"], ["Buzz Aldrin"], ["NASA"],
                                      ["Neil Armstrong"]]}) or pytest.fail(str(r))),
    Case("knowledge_query_cypher", {"query": "MATCH (e:Entity) WHERE e.name = 'zz' RETURN e"},
         lambda r: r.__eq__({"rows": []}) or pytest.fail(str(r))),
    Case("knowledge_no_such_method", {},
         error=(-32601, "Method not found: knowledge_no_such_method")),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=str)
def test_read_method_conformance(seeded: Seeded, case: Case) -> None:
    answer = seeded.conn.request(case.method, case.params)
    assert answer["jsonrpc"] == "2.0"
    if case.error is not None:
        assert "error" in answer, answer
        code, text = case.error
        assert answer["error"]["code"] == code, answer
        assert text in answer["error"]["message"], answer
    else:
        assert "error" not in answer, answer
        assert case.check is not None
        case.check(answer["result"])


# ---- group_ids semantics (§2.1) ------------------------------------------------------------

PRESERVE = "preserve"
COLLAPSE = "collapse"


def _groups_of(method: str, result: Any) -> set[str]:
    key = {
        "knowledge_find_entities": "nodes",
        "knowledge_find_relationships": "facts",
        "knowledge_get_nodes_by_group": "nodes",
        "knowledge_get_edges_by_group": "edges",
        "knowledge_search_passages": "passages",
        "knowledge_list_entities": "nodes",
        "knowledge_list_relationships": "facts",
        "knowledge_get_entity_neighbors": "edges",
        "knowledge_get_entities_by_source": "nodes",
    }[method]
    return {row["group_id"] for row in result[key]}


GROUP_TOOLS: list[tuple[str, str, dict[str, Any]]] = [
    ("knowledge_find_entities", PRESERVE, {"query": "Moon", "num_results": 50}),
    ("knowledge_find_relationships", PRESERVE, {"query": "Moon", "num_results": 50}),
    ("knowledge_get_nodes_by_group", PRESERVE, {}),
    ("knowledge_get_edges_by_group", PRESERVE, {}),
    ("knowledge_search_passages", COLLAPSE, {"query": "Moon", "min_score": 0, "num_results": 50}),
    ("knowledge_list_entities", COLLAPSE, {}),
    ("knowledge_list_relationships", COLLAPSE, {}),
]


@pytest.mark.parametrize(("method", "rule", "base"), GROUP_TOOLS, ids=[t[0] for t in GROUP_TOOLS])
def test_group_ids_semantics(seeded: Seeded, method: str, rule: str, base: dict[str, Any]) -> None:
    conn = seeded.conn
    every = _groups_of(method, conn.result(method, base))
    # edges exist only in liminis; everything else spans both groups
    edges_only = method.endswith(("_edges_by_group", "_relationships"))
    assert every == ({"liminis"} if edges_only else {"liminis", "g2"}), every
    assert _groups_of(method, conn.result(method, {**base, "group_ids": None})) == every
    empty = _groups_of(method, conn.result(method, {**base, "group_ids": []}))
    assert empty == (set() if rule == PRESERVE else every), (method, empty)
    dropped = _groups_of(method, conn.result(method, {**base, "group_ids": [5, None]}))
    assert dropped == (set() if rule == PRESERVE else every), (method, dropped)
    one = _groups_of(method, conn.result(method, {**base, "group_ids": "liminis"}))
    assert one == {"liminis"}
    mixed = _groups_of(method, conn.result(method, {**base, "group_ids": ["liminis", 7]}))
    assert mixed == {"liminis"}
    none_ = _groups_of(method, conn.result(method, {**base, "group_ids": ["nobody"]}))
    assert none_ == set()


def test_neighbors_group_ids_collapse_and_shape(seeded: Seeded) -> None:
    conn, ids = seeded.conn, seeded.ids
    base = {"entity_uuid": ids["neil"]}
    every = conn.result("knowledge_get_entity_neighbors", base)
    assert every["center_uuid"] == ids["neil"]
    assert {e["uuid"] for e in every["edges"]} == {ids["commanded"], ids["worked"]}
    assert {n["uuid"] for n in every["nodes"]} == {ids["apollo"], ids["nasa"]}
    assert every["count"] == every["node_count"] == 2 and every["edge_count"] == 2
    for row in every["nodes"]:
        assert set(row) == ENTITY_KEYS
    for row in every["edges"]:
        assert set(row) == EDGE_KEYS
    # collapse: [] and all-dropped mean every group
    for groups in ([], [3]):
        r = conn.result("knowledge_get_entity_neighbors", {**base, "group_ids": groups})
        assert r["edge_count"] == 2, (groups, r)
    assert (
        conn.result("knowledge_get_entity_neighbors", {**base, "group_ids": "g2"})["edge_count"]
        == 0
    )
    one = conn.result("knowledge_get_entity_neighbors", {**base, "num_results": 1})
    assert one["edge_count"] == 1 and one["node_count"] == 1
    # incoming edges count too
    inc = conn.result("knowledge_get_entity_neighbors", {"entity_uuid": ids["apollo"]})
    assert [n["uuid"] for n in inc["nodes"]] == [ids["neil"]]


def test_entities_by_source_collapse(seeded: Seeded) -> None:
    # Lite mode records no MENTIONS, so no episode names an entity: the result is empty for
    # every group filter, and the shape and echo still hold.
    for groups in (None, [], "g2", ["liminis"]):
        r = seeded.conn.result(
            "knowledge_get_entities_by_source", {"source": "mission", "group_ids": groups}
        )
        assert r == {"source": "mission", "nodes": [], "count": 0}


def test_episodes_newest_first_with_reference_times(seeded: Seeded) -> None:
    eps = seeded.conn.result("knowledge_get_episodes", {})["episodes"]
    assert [e["uuid"] for e in eps] == [seeded.ids["e2"], seeded.ids["c1"]]
    c1 = eps[1]
    assert c1["name"] == "c1" and c1["source"] == "text"
    assert c1["source_description"] == "mission.txt:c1"
    # DB timestamps render "YYYY-MM-DD HH:MM:SS" (§2.2)
    assert c1["created_at"] == "2020-01-01 00:00:00" and c1["valid_at"] == "2020-01-01 00:00:00"
    assert c1["entity_edges"] == []


def test_edge_rows_render_like_the_reference(seeded: Seeded) -> None:
    r = seeded.conn.result("knowledge_get_edges_by_uuids", {"uuids": [seeded.ids["commanded"], 4]})
    assert r["count"] == 1
    edge = r["edges"][0]
    assert edge["name"] == "COMMANDED"
    assert edge["fact"] == "Neil Armstrong COMMANDED Apollo 11"  # blank fact → default sentence
    assert edge["source_node_uuid"] == seeded.ids["neil"]
    assert edge["target_node_uuid"] == seeded.ids["apollo"]
    assert edge["relation_type"] is None and edge["valid_at"] is None
    assert edge["invalid_at"] is None and edge["attributes"] == "{}"


def test_list_orders_by_uuid_descending(seeded: Seeded) -> None:
    nodes = seeded.conn.result("knowledge_list_entities", {})["nodes"]
    uuids = [n["uuid"] for n in nodes]
    assert uuids == sorted(uuids, reverse=True)
    facts = seeded.conn.result("knowledge_list_relationships", {})["facts"]
    fuuids = [f["uuid"] for f in facts]
    assert fuuids == sorted(fuuids, reverse=True)


def test_status_shape_queryable(seeded: Seeded) -> None:
    s = seeded.conn.result("knowledge_status", {})
    for key in (
        "database_path", "embedding_model", "embedding_dim", "entity_count",
        "relationship_count", "episode_count", "last_index_time", "index_created_at",
        "context_graph_initialized", "connected", "queryable", "initializing", "wal",
        "wal_groups", "indices_built", "name_index_trusted", "name_index_fallback_scans",
        "cross_group_pointers", "ontology",
    ):  # fmt: skip
        assert key in s, key
    assert (s["entity_count"], s["relationship_count"], s["episode_count"]) == (4, 2, 3)
    assert s["queryable"] is True and s["initializing"] is False
    assert s["index_created_at"] == "2020-01-01T00:00:00Z"
    for key in ("exists", "file_count", "byte_size", "applied_seq", "max_seq", "generation",
                "generation_status", "hydration_status"):  # fmt: skip
        assert key in s["wal"], key
    assert s["wal"]["exists"] is True and s["wal"]["file_count"] >= 1
    assert s["wal"]["hydration_status"] == "hydrated"
    assert s["wal"]["generation_status"] == "known"
    assert set(s["wal_groups"]) == {"liminis", "g2"}
    for g in s["wal_groups"].values():
        assert g["applied_seq"] == g["max_seq"] and g["hydration_status"] == "hydrated"
    assert s["wal_groups"]["liminis"]["max_seq"] == 6  # seven events in liminis, seq 0-based
    assert set(s["cross_group_pointers"]) == {"bound", "unbound", "ambiguous"}
    assert set(s["ontology"]) >= {"present", "loaded", "mode", "entity_type_count",
                                  "relation_type_count", "drifted", "drift_summary"}  # fmt: skip
