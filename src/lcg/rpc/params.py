"""Parameter types shared by the method Structs, and the reference's lenient group rules.

Types are checked by ``lcg.rpc.schema.parse``; what is left here is the reference's documented
leniency (§2.1), applied to values that already have the accepted JSON shape:

* ``group_id`` (``GroupId``) – one group; absent/null/``""`` → the default group ``liminis``;
* required ``group_id`` (``RequiredGroupId``) – a non-empty string, else
  ``group_id is required and must be a non-empty string``;
* read ``group_ids`` (``ReadGroupIds``) – omitted/null → every group (``None``); ``[]`` →
  nothing for *preserve-empty* reads, every group for *collapse* reads; a bare string → one
  group; non-string elements dropped (``read_group_ids``);
* required ``group_ids`` (``RequiredGroupIds``) – a non-empty array of non-empty strings,
  de-duplicated in order (``unique``).
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from lcg.events import DEFAULT_GROUP
from lcg.rpc.schema import GROUP_PARAM, MAX_SAFE_INT, Int

__all__ = [
    "Count100",
    "Count100k",
    "Count500",
    "GROUP_PARAM",
    "GroupId",
    "Int",
    "PositiveCount",
    "PositiveInt",
    "ReadGroupIds",
    "RequiredGroupId",
    "RequiredGroupIds",
    "SeqInt",
    "Strings",
    "clamp",
    "read_group_ids",
    "strings",
    "unique",
    "write_group",
]

#: An integer that must be at least 1 (``limit``).
PositiveInt = Annotated[int, Meta(ge=1, le=MAX_SAFE_INT)]
#: A stream position (``from_seq``, ``to_seq``): a non-negative integer.
SeqInt = Annotated[int, Meta(ge=0, le=MAX_SAFE_INT)]

# Numbers of results (ADR 0195). Below 1 is refused (-32602 naming the parameter and its
# range: a count of -5 has no meaning, and the reference passed it to LIMIT); above the
# documented maximum is read as the maximum, as the reference documents for
# knowledge_search_passages and lcg for the others (ADR 0062). ``schema.parse`` applies both,
# and the JSON schema states ``minimum`` and ``maximum``.
#: A number of results from 1 to 100 (more is read as 100).
Count100 = Annotated[int, Meta(ge=1, le=100, extra={"clamp": True})]
#: A number of results from 1 to 500 (more is read as 500).
Count500 = Annotated[int, Meta(ge=1, le=500, extra={"clamp": True})]
#: A number of results from 1 to 100,000 (more is read as 100,000).
Count100k = Annotated[int, Meta(ge=1, le=100_000, extra={"clamp": True})]
#: A number of results of at least 1, refused below in the reference's words.
PositiveCount = Annotated[int, Meta(ge=1, le=MAX_SAFE_INT, extra={"below": "{name} must be > 0"})]

#: One group to write to or read from (default ``liminis``; ``""`` also means the default).
#: Every group parameter is marked ``GROUP_PARAM``, so ``parse`` puts its ids in NFC.
GroupId = Annotated[str | None, Meta(description="group (default liminis)", extra=GROUP_PARAM)]
#: One group that must be named.
RequiredGroupId = Annotated[
    str,
    Meta(
        min_length=1,
        description="group (required)",
        extra={**GROUP_PARAM, "required": "group_id is required and must be a non-empty string"},
    ),
]
#: The groups a read spans: an array of strings (non-strings dropped) or one bare string.
ReadGroupIds = Annotated[
    list[Any] | str | None,
    Meta(
        description="groups to read (default: every group; a bare string is one group)",
        extra=GROUP_PARAM,
    ),
]
#: The groups a deletion spans: a non-empty array of non-empty strings.
RequiredGroupIds = Annotated[
    list[Annotated[str, Meta(min_length=1)]],
    Meta(
        min_length=1,
        description="groups (non-empty)",
        extra={
            **GROUP_PARAM,
            "required": "group_ids is required and must be a non-empty array of non-empty strings",
        },
    ),
]
#: An array whose non-string elements are dropped (the reference's ``uuids`` rule).
Strings = list[Any] | None


def write_group(value: str | None) -> str:
    """A single group: ``value``, or the default group when absent or ``""``."""
    return value or DEFAULT_GROUP


def read_group_ids(value: list[Any] | str | None, *, preserve_empty: bool) -> list[str] | None:
    """The groups a read spans (``None`` = every group)."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    groups = [g for g in value if isinstance(g, str)]
    if not groups:
        return [] if preserve_empty else None
    return groups


def unique(values: list[str]) -> list[str]:
    """``values`` de-duplicated, first occurrence kept."""
    return list(dict.fromkeys(values))


def strings(value: list[Any] | None) -> list[str]:
    """The string elements of ``value`` (absent → ``[]``)."""
    return [] if value is None else [v for v in value if isinstance(v, str)]


def clamp(value: int, low: int, high: int) -> int:
    """``value`` limited to ``low..high`` (the reference's documented clamps)."""
    return max(low, min(high, value))
