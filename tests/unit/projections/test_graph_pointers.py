"""Cross-group pointers: one typed decoding (``graph/pointers.py``) that the rebind command,
the purge impacts and status's pointer counts all read through (issue 13 item 3)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from event_samples import G, H, edge, scene, stamp
from lcg.events.model import CrossGroupEdgeAdded, Event
from lcg.projections.graph import GraphProjection
from lcg.projections.graph import records as grec
from lcg.projections.graph.pointers import Pointer, Pointers, pointers_of, with_pointers

SRC = Path(__file__).resolve().parents[3] / "src" / "lcg"
PTR = '{"source_group_id":"g2","endpoint_name":"Yan","binding_state":"unbound"}'


def test_pointers_decode_into_typed_structs() -> None:
    got = pointers_of('{"note":1,"cross_group_pointers":{"dst":' + PTR + "}}")
    assert got == Pointers(
        dst=Pointer(source_group_id="g2", endpoint_name="Yan", binding_state="unbound")
    )
    assert got is not None and got.sides() == [got.dst]


@pytest.mark.parametrize(
    "attributes",
    [
        "",
        "{}",
        '{"note":"cross_group_pointers"}',  # the word, not the key
        "not json cross_group_pointers",
        '["cross_group_pointers"]',
        '{"cross_group_pointers":null}',
        '{"cross_group_pointers":{"dst":{"source_group_id":"g2"}}}',  # not a pointer
        '{"cross_group_pointers":{"dst":{"source_group_id":"g2","endpoint_name":"Y",'
        '"binding_state":"lost"}}}',  # a state that does not exist
    ],
)
def test_attributes_without_valid_pointers_decode_to_none(attributes: str) -> None:
    assert pointers_of(attributes) is None


def test_with_pointers_round_trips_and_keeps_other_attributes() -> None:
    ptrs = Pointers(src=Pointer(source_group_id="g2", endpoint_name="A", binding_state="bound"))
    out = with_pointers('{"z":1,"a":2}', ptrs)
    assert msgspec.json.decode(out) == {
        "a": 2,
        "cross_group_pointers": {
            "src": {"source_group_id": "g2", "endpoint_name": "A", "binding_state": "bound"}
        },
        "z": 1,
    }
    assert pointers_of(out) == ptrs
    assert pointers_of(with_pointers("[1]", ptrs)) == ptrs  # a non-object is replaced


def _string_constants(tree: ast.AST) -> Iterator[ast.Constant]:
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                yield node


def test_the_pointer_key_is_spelled_in_one_module() -> None:
    # Code that names the attribute key reads or writes pointers itself; only pointers.py may.
    spelled = sorted(
        f"{path.relative_to(SRC)}:{node.lineno}"
        for path in SRC.rglob("*.py")
        for node in _string_constants(ast.parse(path.read_text()))
        if "cross_group_pointers" in node.value
    )
    assert spelled and all(s.startswith("projections/graph/pointers.py:") for s in spelled)


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[GraphProjection]:
    g = GraphProjection(tmp_path / "db")
    yield g
    g.close()


def test_counts_skip_what_rebind_skips(graph: GraphProjection) -> None:
    # An edge whose attributes carry a malformed pointer into H: the rebind command cannot
    # decode it, so the purge impacts and status counts must not count it either.
    bad = '{"cross_group_pointers":{"dst":{"source_group_id":"%s","binding_state":"unbound"}}}'
    bad %= H  # no endpoint_name: not a pointer
    good = '{"cross_group_pointers":{"dst":' + PTR + "}}"  # into g2, which is H
    events: list[Event] = [
        *scene(),
        CrossGroupEdgeAdded(group_id=G, edge=edge("bad", "e1", "", attributes=bad)),
        CrossGroupEdgeAdded(group_id=G, edge=edge("good", "e1", "", attributes=good)),
    ]
    graph.apply(G, "gen1", stamp(events, 0))
    assert pointers_of(bad) is None
    assert grec.unbound_impacts(graph, [H]) == {G: 1}
    assert grec.pointer_counts(graph) == {"bound": 0, "unbound": 1, "ambiguous": 0}
