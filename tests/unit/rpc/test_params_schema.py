"""Typed method parameters (issue 15 item 5, issue 11 item 10): every method's one Struct.

Checked against the real registry: unknown parameters are refused with the closest name,
required means required, a wrong type is an error, huge or non-finite numbers are -32602
material, protocol fields pass, the reference's documented leniencies hold, and every
parameter the reference documents (lcg-api.md §3, transcribed below) is accepted.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from lcg.errors import InvalidParamsError
from lcg.rpc.mcp_server import default_registry
from lcg.rpc.params import read_group_ids
from lcg.rpc.registry import MethodSpec, input_schema
from lcg.rpc.schema import MAX_SAFE_INT, closest, example_params, field_docs, json_schema

REGISTRY = default_registry()

#: The parameters lcg-api.md §3 documents for each of the reference's 44 methods.
REFERENCE_PARAMS: dict[str, list[str]] = {
    "health_check": [],
    "knowledge_status": [],
    "knowledge_rebuild_status": ["job_id"],
    "knowledge_process_chunk": [
        "chunk_text", "chunk_id", "source_file", "group_id", "reference_time",
    ],
    "knowledge_add_episode": [
        "name", "episode_body", "source", "source_description", "reference_time", "group_id",
    ],
    "knowledge_assert_entity": [
        "name", "entity_uuid", "group_id", "labels", "summary", "attributes",
    ],
    "knowledge_assert_relationship": [
        "source_name", "target_name", "predicate", "group_id", "fact", "attributes",
        "relation_type", "valid_at",
    ],
    "knowledge_find_entities": ["query", "group_ids", "num_results"],
    "knowledge_find_relationships": ["query", "group_ids", "num_results"],
    "knowledge_search_passages": ["query", "num_results", "min_score", "group_ids"],
    "knowledge_query_cypher": ["query"],
    "knowledge_get_episodes": ["group_id", "last_n"],
    "knowledge_get_nodes_by_group": ["group_ids"],
    "knowledge_get_edges_by_group": ["group_ids"],
    "knowledge_get_edges_by_uuids": ["uuids"],
    "knowledge_list_entities": ["num_results", "group_ids"],
    "knowledge_list_relationships": ["num_results", "group_ids"],
    "knowledge_get_entity_neighbors": ["entity_uuid", "num_results", "group_ids"],
    "knowledge_get_entities_by_source": ["source", "num_results", "group_ids"],
    "knowledge_delete_episode": ["episode_uuid"],
    "knowledge_delete_by_source": ["source_file", "group_ids"],
    "knowledge_delete_chunk_episode": ["chunk_id", "group_ids"],
    "knowledge_delete_by_group": ["group_ids", "confirm", "dry_run"],
    "knowledge_clear_all": ["confirm", "preserve_wal"],
    "knowledge_merge_entities": [
        "canonical_uuid", "canonical_name", "alias_uuids", "alias_names", "merge_all_by_name",
        "group_id", "dry_run",
    ],
    "knowledge_validate_corrections": [],
    "knowledge_apply_corrections": ["dry_run"],
    "knowledge_reprocess_entity_types": ["group_id", "scope", "dry_run"],
    "knowledge_canonicalize_relations": ["group_id", "dry_run", "embedding_threshold"],
    "knowledge_backfill_relation_types": ["group_id", "dry_run"],
    "knowledge_reprocess_relation_types": ["group_id", "scope", "dry_run"],
    "knowledge_dump_wal": ["group_id", "target_dir"],
    "knowledge_prepare_checkpoint": [],
    "knowledge_wal_mark_create": ["name", "group_id"],
    "knowledge_wal_mark_list": ["group_id"],
    "knowledge_wal_mark_delete": ["name", "group_id"],
    "knowledge_rebuild_from_wal": ["group_id", "from_seq", "to_seq", "dry_run", "force_clear"],
    "knowledge_build_indices": [],
    "knowledge_add_cross_group_edge": [
        "name", "source", "target", "group_id", "fact", "valid_at", "relation_type",
    ],
    "knowledge_rebind_pointers": ["source_group_id"],
    "knowledge_recover": ["strategy"],
    "knowledge_recover_full": [],
    "knowledge_close": [],
    "knowledge_backfill_summary_embeddings": ["group_id", "dry_run"],
}  # fmt: skip

#: A value of the documented type for each documented parameter name (method-specific first).
SAMPLES: dict[str, Any] = {
    "group_ids": ["liminis"],
    "uuids": ["u1"],
    "labels": ["Person"],
    "alias_uuids": ["u2"],
    "alias_names": ["Ada"],
    "attributes": {"born": 1815},
    "source": "mission.txt",
    "target": {"uuid": "u3"},
    "num_results": 5,
    "last_n": 5,
    "from_seq": 0,
    "to_seq": 3,
    "min_score": 0.25,
    "embedding_threshold": 0.7,
    "confirm": True,
    "dry_run": True,
    "preserve_wal": False,
    "force_clear": False,
    "merge_all_by_name": False,
    "reference_time": "2024-01-01T00:00:00Z",
    "valid_at": "2024-01-01T00:00:00Z",
    "scope": "untyped",
    "strategy": "drop_lbug_wal",
}
OBJECT_SOURCE = {"knowledge_add_cross_group_edge": {"source": {"uuid": "u4"}}}


def _spec(name: str) -> MethodSpec:
    spec = REGISTRY.get(name)
    assert spec is not None, name
    return spec


def _parse(name: str, params: dict[str, Any]) -> Any:
    return _spec(name).parse(params)


def _refused(name: str, params: dict[str, Any]) -> str:
    with pytest.raises(InvalidParamsError) as info:
        _parse(name, params)
    return str(info.value)


def _full_call(method: str) -> dict[str, Any]:
    names = REFERENCE_PARAMS[method]
    return {n: OBJECT_SOURCE.get(method, {}).get(n, SAMPLES.get(n, "x")) for n in names}


def test_every_reference_method_exists_and_is_typed() -> None:
    assert len(REFERENCE_PARAMS) == 44
    for name in REFERENCE_PARAMS:
        assert _spec(name).params is not None, name
    # lcg's own methods are typed too: nothing reaches a handler unchecked.
    assert all(spec.params is not None for spec in REGISTRY)


@pytest.mark.parametrize("method", sorted(REFERENCE_PARAMS))
def test_every_documented_parameter_is_accepted(method: str) -> None:
    declared = {d.name for d in field_docs(_spec(method).params)}  # type: ignore[arg-type]
    assert set(REFERENCE_PARAMS[method]) <= declared, set(REFERENCE_PARAMS[method]) - declared
    # All documented parameters at once, each with a value of its documented type ...
    _parse(method, _full_call(method))
    # ... and each optional one as null (= absent), beside the required ones.
    required = _spec(method).required_params()
    base = {n: v for n, v in _full_call(method).items() if n in required}
    for name in REFERENCE_PARAMS[method]:
        if name not in required:
            _parse(method, {**base, name: None})


def test_unknown_parameter_names_the_closest() -> None:
    text = _refused("knowledge_search_passages", {"query": "x", "nmu_results": 3})
    assert text == "unknown parameter 'nmu_results' — did you mean 'num_results'?"
    # get_episodes with group_ids used to read the default group silently.
    text = _refused("knowledge_get_episodes", {"group_ids": ["g2"]})
    assert text == "unknown parameter 'group_ids' — did you mean 'group_id'?"
    # Nothing near: the message lists what the method takes.
    text = _refused("knowledge_get_episodes", {"zzz": 1})
    assert text == "unknown parameter 'zzz': knowledge_get_episodes takes group_id, last_n"
    text = _refused("knowledge_status", {"verbose": True})
    assert text == "unknown parameter 'verbose': knowledge_status takes no parameters"


def test_protocol_fields_pass() -> None:
    parsed = _parse(
        "knowledge_find_entities",
        {"query": "x", "_progress_token": True, "_meta": {"progressToken": 3}, "_trace": "t"},
    )
    assert parsed.query == "x"
    _parse("knowledge_status", {"_meta": {}})


def test_required_means_required() -> None:
    # find_entities {} used to answer an empty list; search_passages {} an error.
    text = _refused("knowledge_find_entities", {})
    assert text.startswith("query is required and must be a string")
    assert "lcg methods knowledge_find_entities" in text
    assert _refused("knowledge_search_passages", {}).startswith(
        "query is required and must be non-empty"
    )
    assert _refused("knowledge_find_entities", {"query": None}).startswith("query is required")
    # The reference's own wording is kept where it has one.
    assert _refused("knowledge_canonicalize_relations", {"group_id": ""}).startswith(
        "group_id is required and must be a non-empty string"
    )


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("knowledge_search_passages", {"query": "x", "min_score": "abc"},
         'min_score must be a finite number (got "abc")'),
        ("knowledge_find_entities", {"query": "x", "num_results": "ten"},
         "num_results must be an integer"),
        ("knowledge_find_entities", {"query": "x", "num_results": True},
         "num_results must be an integer"),
        ("knowledge_find_entities", {"query": "x", "num_results": 2.5},
         "num_results must be an integer"),
        ("knowledge_find_relationships", {"query": "x", "current_only": "yes"},
         'current_only must be a boolean (true or false) (got "yes")'),
        ("knowledge_find_entities", {"query": "x", "group_ids": 5},
         "group_ids must be an array or a string (got 5)"),
        ("knowledge_assert_entity", {"name": "x", "labels": "Person"},
         'labels must be an array of strings (got "Person")'),
        ("knowledge_get_episodes", {"group_id": 7}, "group_id must be a string (got 7)"),
        ("knowledge_rebuild_from_wal", {"from_seq": True}, "from_seq must be a non-negative"),
        ("knowledge_rebuild_from_wal", {"to_seq": -2}, "to_seq must be a non-negative"),
        ("knowledge_canonicalize_relations", {"group_id": "g", "embedding_threshold": 2},
         "embedding_threshold must be"),
        ("knowledge_extract_pending", {"limit": 0}, "limit must be"),
    ],
)  # fmt: skip
def test_wrong_type_is_an_error(method: str, params: dict[str, Any], message: str) -> None:
    assert message in _refused(method, params)


@pytest.mark.parametrize("value", [2**63, 2**64 + 1, -(2**63) - 1, 1e308, -1e308, 2**53])
def test_huge_integers_are_parameter_errors(value: float) -> None:
    for method, extra in (
        ("knowledge_find_entities", {"query": "x"}),
        ("knowledge_list_entities", {}),
        ("knowledge_get_episodes", {}),
    ):
        name = "last_n" if method == "knowledge_get_episodes" else "num_results"
        text = _refused(method, {**extra, name: value})
        assert text.startswith(f"{name} must be an integer"), text
        assert str(MAX_SAFE_INT) in text


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_numbers_are_refused(value: float) -> None:
    text = _refused("knowledge_search_passages", {"query": "x", "min_score": value})
    assert text.startswith("min_score must be a finite number"), text
    text = _refused("knowledge_find_entities", {"query": "x", "num_results": value})
    assert text.startswith("num_results must be an integer"), text


def test_documented_clamps_and_integral_floats() -> None:
    p = _parse("knowledge_find_entities", {"query": "x", "num_results": MAX_SAFE_INT})
    assert p.num_results == 500
    # Below the range is refused, naming it (issue 27); above it is read as the maximum.
    assert _refused("knowledge_find_entities", {"query": "x", "num_results": -4}) == (
        "num_results must be an integer from 1 to 500 (got -4)"
    )
    p = _parse("knowledge_search_passages", {"query": "x", "num_results": 1000, "min_score": 7})
    assert (p.num_results, p.min_score) == (100, 1.0)
    assert _parse("knowledge_search_passages", {"query": "x", "min_score": -5}).min_score == 0.0
    assert _parse("knowledge_get_episodes", {"last_n": 10**9}).last_n == 100_000
    # JSON has one number type: 10.0 is the integer 10.
    p = _parse("knowledge_find_entities", {"query": "x", "num_results": 10.0})
    assert p.num_results == 10 and isinstance(p.num_results, int)
    assert "num_results must be > 0" in _refused("knowledge_list_entities", {"num_results": 0})


def test_reference_group_rules_are_kept() -> None:
    # read group_ids: bare string, non-strings dropped, [] per method family (§2.1)
    p = _parse("knowledge_find_entities", {"query": "x", "group_ids": "g2"})
    assert read_group_ids(p.group_ids, preserve_empty=True) == ["g2"]
    p = _parse("knowledge_find_entities", {"query": "x", "group_ids": [5, "a", None]})
    assert read_group_ids(p.group_ids, preserve_empty=True) == ["a"]
    assert read_group_ids([], preserve_empty=True) == []
    assert read_group_ids([3], preserve_empty=False) is None
    # uuids drops non-strings (§3.5)
    assert _parse("knowledge_get_edges_by_uuids", {"uuids": [1, "u"]}).uuids == [1, "u"]
    # a write group "" is the default group; required lists are de-duplicated in the handler
    assert _parse("knowledge_wal_mark_list", {"group_id": ""}).group_id == ""
    refused = _refused("knowledge_delete_by_group", {"group_ids": ["a", 3]})
    assert refused.startswith(
        "group_ids is required and must be a non-empty array of non-empty strings"
    )


def test_mcp_schema_is_generated_from_the_struct() -> None:
    for spec in REGISTRY:
        assert spec.params is not None
        schema = input_schema(spec)
        assert schema == json_schema(spec.params)
        assert schema["type"] == "object"
        assert list(schema["properties"]) == [d.name for d in field_docs(spec.params)]
        assert schema.get("required", []) == spec.required_params()
        for prop in schema["properties"].values():
            assert prop["type"], (spec.name, prop)
        # The example of `lcg methods NAME` is itself a valid call.
        spec.parse(example_params(spec.params))
    schema = input_schema(_spec("knowledge_search_passages"))
    assert schema["required"] == ["query"]
    assert schema["properties"]["num_results"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "description": "maximum number of results (1-100)",
        "default": 10,
    }
    assert schema["properties"]["group_ids"]["type"] == ["array", "string"]


def test_closest_ignores_the_shared_prefix() -> None:
    names = REGISTRY.names()

    def near(word: str) -> str | None:
        return closest(word, names, prefix="knowledge_", cutoff=75.0)

    assert near("knowledge_find_entity") == "knowledge_find_entities"
    assert near("search_pasages") == "knowledge_search_passages"
    assert near("status") == "knowledge_status"
    assert near("knowledge_no_such_method") is None
