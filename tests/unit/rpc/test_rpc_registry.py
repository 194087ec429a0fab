"""The method registry and the MCP input schemas built from each method's parameter Struct."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from msgspec import Meta

from lcg.rpc.registry import CallContext, MethodSpec, Params, Registry, input_schema


async def _handler(ctx: CallContext, params: Any) -> dict[str, Any]:
    return {}


def _spec(name: str, scope: Any = "read", **kw: Any) -> MethodSpec:
    return MethodSpec(name, scope, _handler, **kw)


class _FindParams(Params):
    query: Annotated[str, Meta(description="search text")]
    group_ids: list[Any] | str | None = None
    num_results: int = 10


def test_lookup_order_and_scopes() -> None:
    reg = Registry(
        [_spec("health_check", "none"), _spec("a"), _spec("b", "write"), _spec("c", "cypher")]
    )
    assert reg.names() == ["health_check", "a", "b", "c"]
    assert reg.get("b") is not None and reg.get("b").scope == "write"  # type: ignore[union-attr]
    assert reg.get("zzz") is None
    assert len(reg) == 4 and "a" in reg and "zzz" not in reg
    assert [s.name for s in reg] == reg.names()


def test_duplicates_are_refused() -> None:
    reg = Registry([_spec("a")])
    with pytest.raises(ValueError, match="already registered"):
        reg.add(_spec("a"))


def test_input_schema_from_the_params_struct() -> None:
    spec = _spec("knowledge_find_entities", params=_FindParams)
    assert spec.required_params() == ["query"]
    assert input_schema(spec) == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "search text"},
            "group_ids": {"type": ["array", "string"]},
            "num_results": {"type": "integer", "default": 10},
        },
        "required": ["query"],
    }


def test_schema_without_params_has_no_required() -> None:
    assert input_schema(_spec("knowledge_status")) == {"type": "object", "properties": {}}
    assert _spec("knowledge_status").required_params() == []
