"""Conformance of the write methods against the reference (lcg-api.md §3.2–§3.3, §3.6–§3.7,
§3.10), over a real socket with real Kuzu and the hash test embedder.

Validation cases are table-driven and also check that a rejected call appends nothing to any
stream. Behaviour cases each use their own group, so they share one service.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import _service_fixtures as sf

CHUNK_KEYS = {
    "success", "chunk_id", "source_file", "episode_uuid", "nodes_extracted", "edges_extracted",
    "edges_dropped_unresolvable", "dropped_edges", "edges_reclassified_unclassified",
    "entities_reclassified_unclassified", "entities_dropped_malformed", "edges_dropped_malformed",
    "duration_seconds",
    "extraction",  # lcg: lite mode says extraction is pending (docs/compatibility.md)
}  # fmt: skip


class Svc:
    """The shared service: a raw connection and the stream directory."""

    def __init__(self, svc: sf.InProcessService, conn: sf.RawConnection) -> None:
        self.svc = svc
        self.conn = conn
        self.wal = svc.config.wal_dir

    def ok(self, method: str, params: dict[str, Any]) -> Any:
        return self.conn.result(method, params)

    def err(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        before = sf.stream_bytes(self.wal)
        error = self.conn.error(method, params)
        assert sf.stream_bytes(self.wal) == before, f"{method} appended although it failed"
        return error


@pytest.fixture(scope="module")
def svc() -> Iterator[Svc]:
    """One service for the module; each test writes to groups of its own (order-free: --reverse)."""
    from lcg import telemetry

    telemetry.set_sink(None, enabled=False)
    with sf.in_process_service() as s, sf.RawConnection(s.socket_path) as conn:
        yield Svc(s, conn)


# ---- validation table ---------------------------------------------------------------------

R_LIST = "group_ids is required and must be a non-empty array of non-empty strings"
ERRORS: list[tuple[str, dict[str, Any], int, str]] = [
    ("knowledge_process_chunk", {}, -32602, "chunk_text is required and must be non-empty"),
    ("knowledge_process_chunk", {"chunk_text": "", "chunk_id": "c", "source_file": "f"},
     -32602, "chunk_text is required and must be non-empty"),
    ("knowledge_process_chunk", {"chunk_text": "t"}, -32602, "chunk_id is required"),
    ("knowledge_process_chunk", {"chunk_text": "t", "chunk_id": "c"}, -32602,
     "source_file is required"),
    ("knowledge_process_chunk",
     {"chunk_text": "t", "chunk_id": "c", "source_file": "f", "reference_time": "yesterday"},
     -32602, "reference_time is not valid ISO 8601: yesterday"),
    ("knowledge_add_episode", {"name": "n", "episode_body": "b", "reference_time": "soon"},
     -32602, "reference_time 'soon'"),
    # required everywhere, as the MCP schema always said (issue 15 item 5)
    ("knowledge_add_episode", {"group_id": "eps"}, -32602, "name is required"),
    ("knowledge_add_episode", {"name": "n"}, -32602, "episode_body is required"),
    ("knowledge_delete_episode", {}, -32602, "episode_uuid is required"),
    # a wrong type is refused, not replaced by "{}" (issue 15 item 5)
    ("knowledge_assert_entity", {"name": "X", "attributes": [1]}, -32602,
     "attributes must be an object (got [1])"),
    ("knowledge_assert_entity", {}, -32602, "name is required"),
    ("knowledge_assert_entity", {"name": "   "}, -32602, "name is required"),
    ("knowledge_assert_entity", {"name": "X", "entity_uuid": "missing"}, -32000,
     "entity_uuid 'missing' does not exist in group 'liminis'"),
    ("knowledge_assert_relationship", {}, -32602, "source_name is required"),
    ("knowledge_assert_relationship", {"source_name": "a", "target_name": "b"}, -32602,
     "predicate is required"),
    ("knowledge_assert_relationship",
     {"source_name": "a", "target_name": "b", "predicate": "P", "valid_at": "nope"}, -32602,
     "valid_at 'nope' is not a valid RFC-3339 or 'YYYY-MM-DD HH:MM:SS' timestamp"),
    ("knowledge_assert_relationship",
     {"source_name": "nobody", "target_name": "b", "predicate": "P"}, -32000,
     "knowledge_add_cross_group_edge"),
    ("knowledge_delete_by_source", {}, -32602, "source_file is required"),
    ("knowledge_delete_by_source", {"source_file": "f"}, -32602, R_LIST),
    ("knowledge_delete_by_source", {"source_file": "f", "group_ids": []}, -32602, R_LIST),
    ("knowledge_delete_by_source", {"source_file": "f", "group_ids": "liminis"}, -32602, R_LIST),
    ("knowledge_delete_by_source", {"source_file": "f", "group_ids": ["a", ""]}, -32602, R_LIST),
    ("knowledge_delete_by_source", {"source_file": "f", "group_ids": ["a", 3]}, -32602, R_LIST),
    ("knowledge_delete_chunk_episode", {"group_ids": ["a"]}, -32602, "chunk_id is required"),
    ("knowledge_delete_chunk_episode", {"chunk_id": "c"}, -32602, R_LIST),
    ("knowledge_delete_by_group", {}, -32602, R_LIST),
    ("knowledge_delete_by_group", {"group_ids": ["x"]}, -32602,
     "Must set 'confirm' to true to purge group data (or 'dry_run' to preview)"),
    ("knowledge_clear_all", {}, -32602, "Must set 'confirm' to true to clear graph"),
    ("knowledge_clear_all", {"confirm": "true"}, -32602, "Must set 'confirm' to true"),
    ("knowledge_clear_all", {"confirm": False}, -32602, "Must set 'confirm' to true"),
    ("knowledge_add_cross_group_edge", {}, -32602, "source is required"),
    ("knowledge_add_cross_group_edge",
     {"source": {"uuid": "u", "endpoint_name": "n"}, "target": {"uuid": "v"}}, -32602,
     "endpoint must have either 'uuid' alone, or both 'source_group_id' and 'endpoint_name'"),
    ("knowledge_add_cross_group_edge",
     {"source": {"source_group_id": "g"}, "target": {"uuid": "v"}}, -32602,
     "endpoint must have either 'uuid' alone"),
    ("knowledge_add_cross_group_edge",
     {"source": {"source_group_id": "g", "endpoint_name": "  "}, "target": {"uuid": "v"}},
     -32602, "endpoint must have either 'uuid' alone"),
    ("knowledge_add_cross_group_edge", {"source": {"uuid": "nope"}, "target": {"uuid": "v"}},
     -32000, "source entity 'nope' does not exist in group 'liminis'"),
    ("knowledge_rebind_pointers", {}, -32602, "source_group_id is required"),
    ("knowledge_rebind_pointers", {"source_group_id": ""}, -32602, "source_group_id is required"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "params", "code", "text"), ERRORS, ids=[f"{m}{p}" for m, p, _, _ in ERRORS]
)
def test_write_validation(
    svc: Svc, method: str, params: dict[str, Any], code: int, text: str
) -> None:
    error = svc.err(method, params)
    assert error["code"] == code, error
    assert text in error["message"], error


# ---- ingestion ----------------------------------------------------------------------------


def test_process_chunk_lite_mode(svc: Svc) -> None:
    p = {"chunk_text": "Saturn V lifted off.", "chunk_id": "k1", "source_file": "notes.txt",
         "group_id": "ingest"}  # fmt: skip
    r = svc.ok("knowledge_process_chunk", p)
    assert set(r) == CHUNK_KEYS, set(r) ^ CHUNK_KEYS
    assert r["success"] is True and r["chunk_id"] == "k1" and r["source_file"] == "notes.txt"
    assert r["nodes_extracted"] == 0 and r["edges_extracted"] == 0 and r["dropped_edges"] == []
    assert r["extraction"]["status"] == "pending"
    assert "ANTHROPIC_API_KEY" in r["extraction"]["reason"]
    ep = svc.ok("knowledge_get_episodes", {"group_id": "ingest"})["episodes"][0]
    assert ep["uuid"] == r["episode_uuid"] and ep["name"] == "k1"
    assert ep["source_description"] == "notes.txt:k1" and ep["source"] == "text"
    # passage-searchable at once
    hits = svc.ok("knowledge_search_passages", {"query": "Saturn V", "group_ids": ["ingest"]})
    assert [h["uuid"] for h in hits["passages"]] == [r["episode_uuid"]]
    # resend of the same chunk: the same episode, nothing appended
    before = sf.stream_bytes(svc.wal)
    again = svc.ok("knowledge_process_chunk", p)
    assert again["episode_uuid"] == r["episode_uuid"]
    assert again["extraction"]["status"] == "duplicate"
    assert sf.stream_bytes(svc.wal) == before
    # .json (any case): the episode keeps source "text", as the reference (the JSON prompt is
    # chosen at extraction; see test_reference_contract.py)
    j = svc.ok("knowledge_process_chunk", {**p, "chunk_id": "k2", "source_file": "data.JSON"})
    eps = svc.ok("knowledge_get_episodes", {"group_id": "ingest"})["episodes"]
    assert {e["uuid"]: e["source"] for e in eps}[j["episode_uuid"]] == "text"


def test_process_chunk_oversized_warning(svc: Svc) -> None:
    text = "word " * 1700  # 8500 characters > the 8000 default advisory maximum
    r = svc.ok("knowledge_process_chunk",
               {"chunk_text": text, "chunk_id": "big", "source_file": "big.txt",
                "group_id": "oversized"})  # fmt: skip
    w = r["warning"]
    assert w["type"] == "chunk_text_oversized"
    assert w["chunk_text_chars"] == len(text) and w["recommended_max_chars"] == 8000
    assert isinstance(w["message"], str) and w["message"]
    ep = {
        e["uuid"]: e
        for e in svc.ok("knowledge_get_episodes", {"group_id": "oversized"})["episodes"]
    }
    assert ep[r["episode_uuid"]]["content"] == text  # nothing truncated


def test_add_episode_defaults_and_sources(svc: Svc) -> None:
    r = svc.ok("knowledge_add_episode", {"name": "", "episode_body": "", "group_id": "eps"})
    assert set(r) == {"episode_uuid", "extraction"}
    for src in ("JSON", "Message", "weird"):
        svc.ok(
            "knowledge_add_episode",
            {"name": src, "episode_body": f"body {src}", "source": src, "group_id": "eps"},
        )
    eps = svc.ok("knowledge_get_episodes", {"group_id": "eps"})["episodes"]
    by_name = {e["name"]: e for e in eps}
    assert by_name[""]["source"] == "text" and by_name[""]["content"] == ""
    assert by_name["JSON"]["source"] == "json" and by_name["Message"]["source"] == "message"
    assert by_name["weird"]["source"] == "text"


# ---- assertion ----------------------------------------------------------------------------


def test_assert_entity_create_update_and_rules(svc: Svc) -> None:
    g = {"group_id": "ents"}
    a = svc.ok("knowledge_assert_entity", {"name": "Ada Lovelace", "summary": "x", **g})
    assert set(a) == {"entity_uuid", "created", "embedding_warning"}
    assert a["created"] is True and a["embedding_warning"] is None
    # trimmed, case-insensitive exact name → the same entity, updated (full replace)
    b = svc.ok("knowledge_assert_entity",
               {"name": "  ada lovelace ", "labels": ["Person"], "attributes": {"born": 1815},
                **g})  # fmt: skip
    assert b == {"entity_uuid": a["entity_uuid"], "created": False, "embedding_warning": None}
    node = svc.ok("knowledge_get_nodes_by_group", {"group_ids": ["ents"]})["nodes"][0]
    assert node["labels"] == ["Entity", "Person"]
    assert json.loads(node["attributes"]) == {"born": 1815}
    assert node["summary"] == ""  # full replace: an omitted summary is empty
    # labels always start with Entity; no attributes → "{}" (a non-object is refused: ERRORS)
    c = svc.ok(
        "knowledge_assert_entity",
        {"name": "Charles Babbage", "labels": ["Person", "Entity"], **g},
    )
    nodes = {n["uuid"]: n for n in svc.ok("knowledge_get_nodes_by_group",
                                          {"group_ids": ["ents"]})["nodes"]}  # fmt: skip
    assert nodes[c["entity_uuid"]]["labels"][0] == "Entity"
    assert nodes[c["entity_uuid"]]["attributes"] == "{}"
    # by uuid: strict within the group
    by_uuid = svc.ok(
        "knowledge_assert_entity", {"name": "Ada King", "entity_uuid": a["entity_uuid"], **g}
    )
    assert by_uuid["entity_uuid"] == a["entity_uuid"] and by_uuid["created"] is False
    e = svc.err(
        "knowledge_assert_entity",
        {"name": "Ada King", "entity_uuid": a["entity_uuid"], "group_id": "other"},
    )
    assert f"entity_uuid '{a['entity_uuid']}' does not exist in group 'other'" in e["message"]
    # renaming onto a name another entity holds is refused
    e = svc.err(
        "knowledge_assert_entity", {"name": "charles babbage", "entity_uuid": a["entity_uuid"], **g}
    )
    assert f"cannot rename entity '{a['entity_uuid']}' to 'charles babbage'" in e["message"]
    assert e["code"] == -32000  # the graph's state refuses it, not the parameters
    # the same name in another group is another entity
    other = svc.ok("knowledge_assert_entity", {"name": "Ada King", "group_id": "ents2"})
    assert other["created"] is True and other["entity_uuid"] != a["entity_uuid"]


def test_assert_relationship_upsert(svc: Svc) -> None:
    g = {"group_id": "rels"}
    for name in ("Alan Turing", "Bletchley Park"):
        svc.ok("knowledge_assert_entity", {"name": name, **g})
    p = {
        "source_name": "alan turing",
        "target_name": "Bletchley Park",
        "predicate": "WORKED_AT",
        **g,
    }
    r = svc.ok("knowledge_assert_relationship", p)
    assert set(r) == {"edge_uuid", "created", "embedding_warning"} and r["created"] is True
    edge = svc.ok("knowledge_get_edges_by_uuids", {"uuids": [r["edge_uuid"]]})["edges"][0]
    assert edge["fact"] == "alan turing WORKED_AT Bletchley Park" and edge["name"] == "WORKED_AT"
    again = svc.ok(
        "knowledge_assert_relationship",
        {
            **p,
            "fact": "Turing broke Enigma at Bletchley Park",
            "valid_at": "1939-09-04 00:00:00",
            "relation_type": "WORKED_AT",
        },
    )
    assert again == {"edge_uuid": r["edge_uuid"], "created": False, "embedding_warning": None}
    edge = svc.ok("knowledge_get_edges_by_uuids", {"uuids": [r["edge_uuid"]]})["edges"][0]
    assert edge["fact"] == "Turing broke Enigma at Bletchley Park"
    assert edge["valid_at"] == "1939-09-04 00:00:00" and edge["relation_type"] == "WORKED_AT"
    # another predicate is another edge
    other = svc.ok("knowledge_assert_relationship", {**p, "predicate": "VISITED"})
    assert other["created"] is True and other["edge_uuid"] != r["edge_uuid"]
    # endpoints resolve only in the edge's group
    e = svc.err("knowledge_assert_relationship", {**p, "group_id": "elsewhere"})
    assert "not found in group 'elsewhere'" in e["message"]


# ---- deletion -----------------------------------------------------------------------------


def _chunk(svc: Svc, cid: str, source: str, group: str) -> str:
    r = svc.ok("knowledge_process_chunk",
               {"chunk_text": f"text of {cid} from {source}", "chunk_id": cid,
                "source_file": source, "group_id": group})  # fmt: skip
    return str(r["episode_uuid"])


def test_deletions(svc: Svc) -> None:
    a1 = _chunk(svc, "a1", "a.txt", "del")
    a2 = _chunk(svc, "a2", "a.txt", "del")
    b1 = _chunk(svc, "b1", "a.txt.bak", "del")
    c1 = _chunk(svc, "a1", "c.txt", "del2")
    # delete_episode: always {status: deleted}; an unknown uuid appends nothing
    before = sf.stream_bytes(svc.wal)
    assert svc.ok("knowledge_delete_episode", {"episode_uuid": "nope"}) == {"status": "deleted"}
    assert svc.ok("knowledge_delete_episode", {"episode_uuid": ""}) == {"status": "deleted"}
    assert sf.stream_bytes(svc.wal) == before
    # delete_by_source: equal or "<source>:" prefix only ("a.txt.bak" stays)
    r = svc.ok(
        "knowledge_delete_by_source",
        {"source_file": "a.txt", "group_ids": ["del", "del", "nobody"]},
    )
    assert r["success"] is True and r["source_file"] == "a.txt"
    assert r["deleted_count"] == 2 and set(r["deleted_uuids"]) == {a1, a2}
    left = {e["uuid"] for e in svc.ok("knowledge_get_episodes", {"group_id": "del"})["episodes"]}
    assert left == {b1}
    # delete_chunk_episode: by name, across the given groups
    r = svc.ok("knowledge_delete_chunk_episode", {"chunk_id": "a1", "group_ids": ["del2"]})
    assert r == {"success": True, "chunk_id": "a1", "deleted_count": 1, "deleted_uuids": [c1]}
    r = svc.ok("knowledge_delete_chunk_episode", {"chunk_id": "a1", "group_ids": ["del2"]})
    assert r["deleted_count"] == 0 and r["deleted_uuids"] == []
    svc.ok("knowledge_delete_episode", {"episode_uuid": b1})
    assert svc.ok("knowledge_get_episodes", {"group_id": "del"})["episodes"] == []


def test_delete_by_group(svc: Svc) -> None:
    g = {"group_id": "purge"}
    svc.ok("knowledge_assert_entity", {"name": "P1", **g})
    svc.ok("knowledge_assert_entity", {"name": "P2", **g})
    svc.ok(
        "knowledge_assert_relationship",
        {"source_name": "P1", "target_name": "P2", "predicate": "R", **g},
    )
    _chunk(svc, "p", "p.txt", "purge")
    before = sf.stream_bytes(svc.wal)
    dry = svc.ok(
        "knowledge_delete_by_group", {"group_ids": ["purge"], "dry_run": True, "confirm": True}
    )  # dry_run wins
    assert set(dry) == {"success", "dry_run", "groups", "unbound_impacts", "applied_seq_reset"}
    assert dry["dry_run"] is True and dry["applied_seq_reset"] is False
    assert dry["groups"] == [{"group_id": "purge", "entities": 2, "episodes": 1, "edges": 1}]
    assert sf.stream_bytes(svc.wal) == before
    real = svc.ok("knowledge_delete_by_group", {"group_ids": ["purge"], "confirm": True})
    assert real["dry_run"] is False and real["groups"] == dry["groups"]
    assert svc.ok("knowledge_get_nodes_by_group", {"group_ids": ["purge"]})["count"] == 0
    assert svc.ok("knowledge_get_episodes", {"group_id": "purge"})["count"] == 0


# ---- merge --------------------------------------------------------------------------------


def test_merge_entities(svc: Svc) -> None:
    g = {"group_id": "merge"}
    ids = {n: svc.ok("knowledge_assert_entity", {"name": n, **g})["entity_uuid"]
           for n in ("IBM", "I.B.M.", "Big Blue", "Watson")}  # fmt: skip
    svc.ok(
        "knowledge_assert_relationship",
        {"source_name": "Watson", "target_name": "I.B.M.", "predicate": "BUILT_BY", **g},
    )
    svc.ok(
        "knowledge_assert_relationship",
        {"source_name": "Watson", "target_name": "IBM", "predicate": "BUILT_BY", **g},
    )
    # soft errors (success false, no JSON-RPC error)
    for params in ({}, {"canonical_name": "IBM"}, {"canonical_uuid": "nope", "alias_names": ["x"]}):
        r = svc.ok("knowledge_merge_entities", {**params, **g})
        assert r["success"] is False and r["errors"], r
    before = sf.stream_bytes(svc.wal)
    dry = svc.ok("knowledge_merge_entities",
                 {"canonical_name": "IBM", "alias_names": ["I.B.M.", "Big Blue", "Nobody"],
                  "dry_run": True, **g})  # fmt: skip
    assert sf.stream_bytes(svc.wal) == before
    assert dry["success"] is True  # "matches no entities" errors keep success
    assert dry["errors"] == ["alias name 'Nobody' matches no entities"]
    assert set(dry["plan"]) == {"aliases", "total_edges_rewritten", "total_edges_collapsed",
                                "total_foreign_edges_skipped"}  # fmt: skip
    assert dry["merged_count"] == 2 and dry["edges_deduplicated"] == 1
    real = svc.ok("knowledge_merge_entities",
                  {"canonical_uuid": ids["IBM"], "alias_uuids": [ids["I.B.M."], ids["Big Blue"]],
                   **g})  # fmt: skip
    for key in ("success", "canonical_uuid", "merged_count", "skipped", "edges_rewritten",
                "edges_deduplicated", "foreign_edges_skipped", "errors"):  # fmt: skip
        assert key in real, key
    assert "plan" not in real
    assert real["success"] is True and real["merged_count"] == 2
    assert real["canonical_uuid"] == ids["IBM"]
    nodes = {n["uuid"]: n for n in svc.ok("knowledge_get_nodes_by_group",
                                          {"group_ids": ["merge"]})["nodes"]}  # fmt: skip
    alias = nodes[ids["I.B.M."]]
    assert "Merged" in alias["labels"]
    assert json.loads(alias["attributes"])["merged_into"] == ids["IBM"]
    # a second merge skips the tombstones
    again = svc.ok(
        "knowledge_merge_entities",
        {"canonical_uuid": ids["IBM"], "alias_uuids": [ids["I.B.M."]], **g},
    )
    assert again["skipped"] == [ids["I.B.M."]] and again["merged_count"] == 0
    # asserting by the alias name follows merged_into to the canonical
    fwd = svc.ok("knowledge_assert_entity", {"name": "Big Blue", "entity_uuid": ids["Big Blue"],
                                             **g})  # fmt: skip
    assert fwd["entity_uuid"] == ids["IBM"]
    # only one current Watson → IBM edge is left
    edges = svc.ok("knowledge_get_edges_by_group", {"group_ids": ["merge"]})["edges"]
    current = [e for e in edges if e["invalid_at"] is None]
    assert [(e["source_node_uuid"], e["target_node_uuid"]) for e in current] == [
        (ids["Watson"], ids["IBM"])
    ]


# ---- cross-group --------------------------------------------------------------------------


def test_cross_group_edge_and_rebind(svc: Svc) -> None:
    here = svc.ok("knowledge_assert_entity", {"name": "Project X", "group_id": "layer"})
    r = svc.ok(
        "knowledge_add_cross_group_edge",
        {
            "name": "USES",
            "fact": "Project X uses Library Y",
            "group_id": "layer",
            "source": {"uuid": here["entity_uuid"]},
            "target": {"source_group_id": "libs", "endpoint_name": "  Library Y "},
        },
    )
    assert set(r) == {"uuid", "name", "group_id", "source_node_uuid", "target_node_uuid", "fact",
                      "cross_group_pointers"}  # fmt: skip
    assert r["source_node_uuid"] == here["entity_uuid"] and r["target_node_uuid"] == ""
    dst = r["cross_group_pointers"]["dst"]
    assert dst["binding_state"] == "unbound" and dst["endpoint_name"] == "library y"
    assert dst["source_group_id"] == "libs"
    status = svc.ok("knowledge_status", {})
    assert status["cross_group_pointers"]["unbound"] >= 1
    lib = svc.ok("knowledge_assert_entity", {"name": "Library Y", "group_id": "libs"})
    rb = svc.ok("knowledge_rebind_pointers", {"source_group_id": "libs"})
    assert set(rb) == {"checked", "bound", "unbound", "ambiguous", "invalidated_self_loop",
                       "invalidated_duplicate", "staleness_skipped"}  # fmt: skip
    assert rb["checked"] == 1 and rb["bound"] == 1
    edge = svc.ok("knowledge_get_edges_by_uuids", {"uuids": [r["uuid"]]})["edges"][0]
    assert edge["target_node_uuid"] == lib["entity_uuid"]
    # a second rebind finds it fresh
    rb2 = svc.ok("knowledge_rebind_pointers", {"source_group_id": "libs"})
    assert rb2["checked"] + rb2["staleness_skipped"] == 1 and rb2["bound"] <= 1
    # bound at creation when the target exists
    r2 = svc.ok(
        "knowledge_add_cross_group_edge",
        {
            "group_id": "layer",
            "source": {"uuid": here["entity_uuid"]},
            "target": {"source_group_id": "libs", "endpoint_name": "library y"},
        },
    )
    assert r2["target_node_uuid"] == lib["entity_uuid"]
    assert r2["cross_group_pointers"]["dst"]["binding_state"] == "bound"
    assert r2["name"] == "" and r2["fact"] == ""  # name="" and fact="" defaults


# ---- clear_all (its own service: it empties everything) ------------------------------------


@pytest.mark.parametrize("preserve_wal", [False, True])
def test_clear_all(preserve_wal: bool) -> None:
    with sf.in_process_service() as s, sf.RawConnection(s.socket_path) as conn:
        conn.result("knowledge_assert_entity", {"name": "Gone"})
        conn.result("knowledge_assert_entity", {"name": "Gone too", "group_id": "g9"})
        r = conn.result("knowledge_clear_all", {"confirm": True, "preserve_wal": preserve_wal})
        assert r == {"success": True, "message": "Graph cleared and reinitialized successfully"}
        assert conn.result("knowledge_get_nodes_by_group", {})["count"] == 0
        status = conn.result("knowledge_status", {})
        assert status["entity_count"] == 0
        streams = sf.stream_events(s.config.wal_dir)
        if preserve_wal:
            # Clearing the projections is not an event: the streams are kept as they were.
            assert [e["type"] for e in streams["liminis"]] == ["EntityAsserted"]
            assert [e["type"] for e in streams["g9"]] == ["EntityAsserted"]
        else:
            assert all(not lines for lines in streams.values())
        # the service keeps working; later writes apply on top of the cleared graph
        conn.result("knowledge_assert_entity", {"name": "After"})
        assert conn.result("knowledge_status", {})["entity_count"] == 1
        verdict = conn.result("knowledge_verify", {})
        if preserve_wal:
            # verify says honestly that the projections lack what the clear removed ...
            assert verdict["ok"] is False
            # ... until a rebuild replays the kept stream (ADR 0100)
            conn.result("knowledge_rebuild_from_wal", {"force_clear": True, "_progress_token": 1})
            assert conn.result("knowledge_status", {})["entity_count"] == 2
            verdict = conn.result("knowledge_verify", {})
        assert verdict["ok"] is True


def test_chunk_advisory_maximum_from_the_environment() -> None:
    env = {"LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS": "10"}
    with sf.in_process_service(env=env) as s, sf.RawConnection(s.socket_path) as conn:
        base = {"chunk_id": "a", "source_file": "f.txt"}
        at = conn.result("knowledge_process_chunk", {**base, "chunk_text": "x" * 10})
        assert "warning" not in at
        over = conn.result(
            "knowledge_process_chunk", {**base, "chunk_id": "b", "chunk_text": "y" * 11}
        )
        assert over["warning"]["recommended_max_chars"] == 10
        assert over["warning"]["chunk_text_chars"] == 11


def test_search_defaults_return_ten(svc: Svc) -> None:
    g = "defaults"
    for i in range(12):
        svc.ok("knowledge_assert_entity", {"name": f"Moon probe {i}", "group_id": g})
        _chunk(svc, f"d{i}", "moon.txt", g)
    ents = svc.ok("knowledge_find_entities", {"query": "moon probe", "group_ids": [g]})
    assert ents["count"] == 10  # num_results=10
    passages = svc.ok(
        "knowledge_search_passages", {"query": "text moon", "group_ids": [g], "min_score": 0}
    )
    assert passages["count"] == 10  # num_results=10
    listed = svc.ok("knowledge_list_entities", {"group_ids": [g]})
    assert listed["count"] == 12  # num_results=500
