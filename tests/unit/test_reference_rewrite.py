"""A reference line is rewritten only where Kuzu cannot run it (lcg-api §5.4, §2.3, ADR 0170)."""

from __future__ import annotations

from datetime import datetime

import pytest

from lcg.ingest.reference.cypher import BindError, is_mutation, prepare


def test_vecf32_wrappers_are_stripped_with_balanced_parentheses() -> None:
    p = prepare(
        "CREATE (:E {a: vecf32($v), b: VECF32([0.5, (1.0)]), c: VecF32( $w )})",
        {"v": [1, 2], "w": [0.5]},
    )
    assert p.cypher == "CREATE (:E {a: $v, b: [0.5, (1.0)], c:  $w })"
    # Vectors are computed again from the text: their values are never carried.
    assert p.params == {"v": None, "w": None} and p.vectors_dropped == 2


def test_timestamp_wrappers_and_the_dump_case_become_time_parameters() -> None:
    p = prepare(
        "MERGE (n:X {uuid: $u}) SET n.created_at = timestamp($new), n.valid_at = CASE WHEN "
        "$valid_at IS NULL THEN NULL ELSE timestamp($valid_at) END",
        {"u": "x", "new": "2024-01-02 03:04:05", "valid_at": None, "unused": 1},
    )
    assert p.cypher == "MERGE (n:X {uuid: $u}) SET n.created_at = $new, n.valid_at = $valid_at"
    assert p.params == {"u": "x", "new": datetime(2024, 1, 2, 3, 4, 5), "valid_at": None}


def test_time_literals_become_parameters_and_other_literals_stay() -> None:
    p = prepare(
        "CREATE (:R {uuid: 'created_at: x', created_at: '2023-11-01 10:00:00', "
        "valid_at: '2023-11-01T12:00:00+02:00'}) SET r.x = timestamp('2024-01-01T00:00:00Z')",
        {},
    )
    assert "'created_at: x'" in p.cypher and "'2023" not in p.cypher
    assert sorted(p.params.values()) == [
        datetime(2023, 11, 1, 10, 0),
        datetime(2023, 11, 1, 10, 0),
        datetime(2024, 1, 1, 0, 0),
    ]


def test_set_of_a_map_is_flattened_and_objects_bind_as_json() -> None:
    p = prepare(
        "MATCH (n:E {uuid: $uuid}) SET n = $props",
        {"uuid": "e", "props": {"summary": "s", "attributes": {"k": [1, "ü"]}}},
    )
    assert p.cypher == (
        "MATCH (n:E {uuid: $uuid}) SET n.summary = $props_summary, n.attributes = $props_attributes"
    )
    assert p.params["props_attributes"] == '{"k":[1,"ü"]}'


def test_a_time_parameter_holding_no_time_is_refused() -> None:
    with pytest.raises(BindError, match="created_at"):
        prepare("CREATE (:E {created_at: $created_at})", {"created_at": "soon"})


def test_the_mutation_check_ignores_keywords_inside_literals() -> None:
    assert is_mutation("MATCH (n) SET n.x = 1")
    assert not is_mutation("MATCH (n) WHERE n.name = 'CREATE SET' RETURN n")
