"""Flat front matter read without a YAML parser (issue 29, ADR 0223).

Nearly every note's front matter is a column of ``key: value`` lines with a few lists
(``tags: [a, b]`` or ``- item`` lines under a key). ``read_flat`` reads exactly that shape
and answers ``None`` for anything else — an indented continuation, a nested mapping, an
anchor, an alias, a tag (``!x``), a block scalar (``|``/``>``), a comment after a value,
escapes, tabs, line breaks YAML knows that Python does not split at, a repeated key, a key
that YAML would not read as text, more nodes than ``MAX_NODES`` — so the caller gives the block
to the YAML parser (``frontmatter``), which keeps every bound. Where it answers, it answers
what the YAML path would: each plain value is resolved with PyYAML's own ``Resolver`` (so
``0042`` is an int, ``2026-01-10`` a date, ``on`` a bool, ``~`` null, as YAML 1.1 says) and
built with PyYAML's ``SafeConstructor``; a property test holds the two paths equal.
"""

from __future__ import annotations

import re
from typing import Final

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

__all__ = ["FlatValue", "read_flat"]

_STR: Final = "tag:yaml.org,2002:str"
_NULL: Final = "tag:yaml.org,2002:null"
#: The implicit tags built here; any other (``=``, ``<<``) goes to the YAML path.
_BUILT: Final = frozenset(
    {_STR, _NULL, *(f"tag:yaml.org,2002:{t}" for t in ("bool", "int", "float", "timestamp"))}
)

#: Anything YAML reads differently from a plain line of printable text: control characters
#: and tabs, ``\r``, the line breaks ``\x85``, ``\u2028``, ``\u2029``, a byte-order mark.
_NOT_PLAIN_TEXT: Final = re.compile(
    "[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff]"
)
_KEY_LINE: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?")
_ITEM_LINE: Final = re.compile(r"( *)- +(.*)")
#: A plain scalar may not start with an indicator (or a space); ``[`` starts a flow list and
#: quotes a quoted scalar, read on their own.
_INDICATORS: Final = frozenset("-?:,[]{}#&*!|>'\"%@`")
#: What ends or changes a plain scalar inside it: ``: ``, `` #``, a final ``:``.
_PLAIN_STOP: Final = re.compile(r": | #|:$")
_FLOW_STOP: Final = re.compile(r"[\[\]{},:#]")

_RESOLVER: Final = Resolver()
_CONSTRUCTOR: Final = SafeConstructor()


class FlatValue:
    """One key's value: what the YAML path's ``_raw`` would read of it (its scalars as
    written, nulls left out) and the value as YAML constructs it (a list for a list)."""

    __slots__ = ("raw", "value")

    def __init__(self, raw: list[str], value: object) -> None:
        self.raw = raw
        self.value = value


class _NotFlat(Exception):
    """The block is not flat: the YAML path reads it."""


def read_flat(block: str, max_nodes: int) -> dict[str, FlatValue] | None:
    """The flat front matter ``block`` by key, in order, or ``None`` when it is not flat
    (then only the YAML parser may say what it holds)."""
    if _NOT_PLAIN_TEXT.search(block):
        return None
    try:
        out = _read(block.split("\n"), max_nodes)
    except _NotFlat:
        return None
    return out or None  # comments alone: no mapping


def _read(lines: list[str], max_nodes: int) -> dict[str, FlatValue]:
    out: dict[str, FlatValue] = {}
    nodes = 1  # the mapping
    key: str | None = None  # a key whose value is a block list still open
    items: list[tuple[str, object]] = []
    indent = -1
    for line in lines:
        stripped = line.strip(" ")
        if not stripped or stripped[0] == "#":
            continue  # a blank or comment line
        item = _ITEM_LINE.fullmatch(line) if key is not None else None
        if item is not None:
            if indent < 0:
                indent = len(item.group(1))
            elif len(item.group(1)) != indent:
                raise _NotFlat
            items.append(_scalar(item.group(2).rstrip(" "), flow=False))
            continue
        if key is not None:
            out[key] = _close(items, indent)
            nodes += len(items)
            key = None
        m = _KEY_LINE.fullmatch(line)
        if m is None:
            raise _NotFlat
        name, rest = m.group(1), (m.group(2) or "").rstrip(" ")
        if name in out or _resolve(name) != _STR:
            raise _NotFlat  # a repeated key, or one YAML reads as no text (``on``, ``null``)
        nodes += 2
        if not rest:
            key, items, indent = name, [], -1  # a block list may follow, else null
            continue
        if rest[0] == "[":
            listed = _flow(rest)
            nodes += len(listed)
            out[name] = FlatValue([r for r, v in listed if r], [v for _, v in listed])
            continue
        text, value = _scalar(rest, flow=False)
        out[name] = FlatValue([text] if text else [], value)
    if key is not None:
        out[key] = _close(items, indent)
        nodes += len(items)
    if nodes > max_nodes:
        raise _NotFlat  # the YAML path refuses it, and says so
    return out


def _close(items: list[tuple[str, object]], indent: int) -> FlatValue:
    """A key with no value on its line: its block list, or null when no item follows."""
    if indent < 0:
        return FlatValue([], None)
    return FlatValue([r for r, _ in items if r], [v for _, v in items])


def _flow(text: str) -> list[tuple[str, object]]:
    """``[a, b, 'c']`` as (raw, value) per item."""
    if text[-1] != "]":
        raise _NotFlat
    inner = text[1:-1].strip(" ")
    if not inner:
        return []
    out: list[tuple[str, object]] = []
    for part in _split_flow(inner):
        out.append(_scalar(part.strip(" "), flow=True))
    return out


def _split_flow(inner: str) -> list[str]:
    """The items of a flow list at its commas; a quoted item may hold a comma."""
    if "'" not in inner and '"' not in inner:
        return inner.split(",")
    parts: list[str] = []
    pos = 0
    while True:
        while pos < len(inner) and inner[pos] == " ":
            pos += 1
        if pos < len(inner) and inner[pos] in "'\"":
            end = _quote_end(inner, pos)
            comma = inner.find(",", end)
            if inner[end : comma if comma >= 0 else len(inner)].strip(" "):
                raise _NotFlat
        else:
            comma = inner.find(",", pos)
        parts.append(inner[pos : comma if comma >= 0 else len(inner)])
        if comma < 0:
            return parts
        pos = comma + 1


def _quote_end(text: str, start: int) -> int:
    """The offset past the quoted scalar opening at ``start``."""
    quote = text[start]
    pos = start + 1
    while True:
        at = text.find(quote, pos)
        if at < 0:
            raise _NotFlat
        if quote == "'" and text.startswith("''", at):
            pos = at + 2
            continue
        return at + 1


def _scalar(text: str, *, flow: bool) -> tuple[str, object]:
    """A scalar written on one line: what ``_raw`` reads of it ("" for null) and its value."""
    if not text:
        raise _NotFlat  # an empty item: YAML's own rules
    first = text[0]
    if first in "'\"":
        if _quote_end(text, 0) != len(text):
            raise _NotFlat  # something after the closing quote
        body = text[1:-1]
        if first == "'":
            body = body.replace("''", "'")
        elif "\\" in body:
            raise _NotFlat  # escapes
        return body.strip(), body
    if first in _INDICATORS or _PLAIN_STOP.search(text) or (flow and _FLOW_STOP.search(text)):
        raise _NotFlat
    tag = _resolve(text)
    if tag == _NULL:
        return "", None
    if tag == _STR:
        return text.strip(), text
    if tag not in _BUILT:
        raise _NotFlat
    try:
        value = _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, text))
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        raise _NotFlat from exc
    return text.strip(), value


#: The first characters some implicit resolver looks at; a plain scalar starting with any
#: other is text (``Resolver.resolve`` then has no resolver to try).
_RESOLVED_FIRST: Final = (
    frozenset(k for k in Resolver.yaml_implicit_resolvers if k)
    if None not in Resolver.yaml_implicit_resolvers
    else None  # a resolver for every first character: ask it always
)
#: Tags of short plain scalars already resolved (keys and values repeat across notes).
_TAGS: dict[str, str] = {}


def _resolve(text: str) -> str:
    if text and _RESOLVED_FIRST is not None and text[0] not in _RESOLVED_FIRST:
        return _STR
    tag = _TAGS.get(text)
    if tag is None:
        tag = str(_RESOLVER.resolve(yaml.ScalarNode, text, (True, False)))  # type: ignore[no-untyped-call]
        if len(text) <= 64 and len(_TAGS) < 4096:
            _TAGS[text] = tag
    return tag
