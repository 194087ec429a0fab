"""Every parameter that names groups puts its ids in NFC (ADR 0151), whatever it is called.

The mark is on the parameter's type (``GROUP_PARAM`` in its ``Meta``), not on a list of
parameter names: a parameter called ``target_group`` is normalised as ``group_id`` is.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any

from msgspec import Meta
from msgspec import inspect as mi

from lcg.rpc.mcp_server import default_registry
from lcg.rpc.params import GROUP_PARAM, GroupId, ReadGroupIds
from lcg.rpc.schema import Params, parse

NFC = unicodedata.normalize("NFC", "grüppe")
NFD = unicodedata.normalize("NFD", "grüppe")


class _MoveParams(Params):
    """A method of the test's own whose group parameters are not called ``group_id``."""

    group_id: GroupId = None
    target_group: GroupId = None
    also_read: ReadGroupIds = None
    into: Annotated[str | None, Meta(description="a group", extra=GROUP_PARAM)] = None


def test_a_group_parameter_of_any_name_is_normalised_as_group_id_is() -> None:
    assert NFC != NFD
    got: Any = parse(
        "test_move",
        _MoveParams,
        {"group_id": NFD, "target_group": NFD, "also_read": [NFD, 7], "into": NFD},
    )
    assert got.group_id == NFC
    assert got.target_group == got.group_id
    assert got.also_read == [NFC, 7]
    assert got.into == NFC


def _marked(t: mi.Type) -> bool:
    while isinstance(t, mi.Metadata):
        if (t.extra or {}).get("names_groups"):
            return True
        t = t.type
    return isinstance(t, mi.UnionType) and any(_marked(m) for m in t.types)


def test_every_group_parameter_of_the_service_is_marked() -> None:
    # A new parameter naming groups with a type of its own must carry the mark, or its ids
    # would enter un-normalised.
    unmarked = []
    for spec in default_registry():
        if spec.params is None:
            continue
        info = mi.type_info(spec.params)
        assert isinstance(info, mi.StructType)
        for f in info.fields:
            if "group" in f.name and not _marked(f.type):
                unmarked.append(f"{spec.name}.{f.name}")
    assert unmarked == []
