"""The client's shortcuts name their methods' required parameters and nothing else: the
service's parameter Structs are the one declaration of what a method takes (issue 31,
"Smaller"; ADR 0218), so a parameter added there is usable through a shortcut at once."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import msgspec
import pytest

from lcg.client import SHORTCUTS, Client
from lcg.rpc import default_registry


class _Recorder(Client):
    """A client that records the calls it would send."""

    def __init__(self) -> None:
        super().__init__("/nonexistent.sock")
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def call(
        self, method: str, params: Mapping[str, Any] | None = None, *, on_progress: Any = None
    ) -> Any:
        self.sent.append((method, dict(params or {})))
        return {}


@pytest.mark.parametrize("shortcut", sorted(SHORTCUTS))
def test_a_shortcut_names_its_method_s_required_parameters_in_order(shortcut: str) -> None:
    spec = default_registry().get(SHORTCUTS[shortcut])
    assert spec is not None, f"{shortcut} calls {SHORTCUTS[shortcut]}, which is no method"
    required = (
        [f.name for f in msgspec.structs.fields(spec.params) if f.required]
        if spec.params is not None
        else []
    )
    signature = inspect.signature(getattr(Client, shortcut))
    named = [
        p.name
        for p in signature.parameters.values()
        if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    assert named == required
    takes_more = spec.params is not None and len(msgspec.structs.fields(spec.params)) > len(named)
    has_rest = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    assert has_rest == takes_more, f"{shortcut}: the other parameters pass as keywords"


def test_every_other_parameter_passes_through_as_the_method_takes_it() -> None:
    client = _Recorder()
    client.find_relationships("who", current_only=True, group_ids=["g"], num_results=None)
    client.assert_entity("Ada", attributes=msgspec.structs.asdict(_Attrs(born=1815)))
    client.process_chunk("text", "c#0", "c.md", group_id="g")
    assert client.sent == [
        (
            "knowledge_find_relationships",
            {"query": "who", "current_only": True, "group_ids": ["g"]},
        ),
        ("knowledge_assert_entity", {"name": "Ada", "attributes": {"born": 1815}}),
        (
            "knowledge_process_chunk",
            {"chunk_text": "text", "chunk_id": "c#0", "source_file": "c.md", "group_id": "g"},
        ),
    ]


class _Attrs(msgspec.Struct):
    born: int
