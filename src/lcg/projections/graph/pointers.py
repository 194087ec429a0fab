"""The cross-group pointers an edge's attributes may carry, decoded in this one place.

A cross-group edge names an endpoint of another group by a pointer stored in its
``attributes.cross_group_pointers.{src,dst}``. The command that
writes and rebinds them (``ingest/cross_group``) and the graph's counts (purge impacts, status)
all read them through ``pointers_of`` and write them through ``with_pointers``, so they agree
on what a pointer is.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

__all__ = ["ATTRIBUTE", "BindingState", "Pointer", "Pointers", "pointers_of", "with_pointers"]

#: The key of ``EdgeRecord.attributes`` that holds the pointers.
ATTRIBUTE: Final = "cross_group_pointers"

BindingState = Literal["bound", "unbound", "ambiguous"]


class Pointer(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One side of a cross-group edge that names an entity of another group."""

    source_group_id: str
    endpoint_name: str
    binding_state: BindingState
    resolved_uuid: str | None = None
    bound_at_seq: int | None = None


class Pointers(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Both sides' pointers (a side given by uuid has none)."""

    src: Pointer | None = None
    dst: Pointer | None = None

    def sides(self) -> list[Pointer]:
        """The pointers present, ``src`` before ``dst``."""
        return [p for p in (self.src, self.dst) if p is not None]


class _Attributes(msgspec.Struct):
    # Only the pointers are decoded; every other attribute is skipped unread.
    cross_group_pointers: Pointers | None = None


def pointers_of(attributes: str) -> Pointers | None:
    """The pointers in an edge's attributes JSON; ``None`` when it holds none or they are
    not pointers (attributes a client wrote are not trusted to have this shape)."""
    if ATTRIBUTE not in attributes:  # most edges: spare the decode
        return None
    try:
        return msgspec.json.decode(attributes, type=_Attributes).cross_group_pointers
    except msgspec.DecodeError:  # ValidationError is a DecodeError
        return None


def with_pointers(attributes: str, pointers: Pointers) -> str:
    """The attributes JSON with its pointers set to ``pointers`` (keys sorted); attributes
    that are not a JSON object are replaced."""
    try:
        attrs = msgspec.json.decode(attributes or "{}")
    except msgspec.DecodeError:
        attrs = {}
    if not isinstance(attrs, dict):
        attrs = {}
    attrs[ATTRIBUTE] = msgspec.to_builtins(pointers)
    return msgspec.json.encode(attrs, order="sorted").decode()
