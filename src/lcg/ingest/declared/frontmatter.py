"""YAML front matter, read bounded and never trusted (issue 29, ADR 0204).

``read_front_matter`` parses the block between the opening ``---`` and the closing
``---``/``...`` with PyYAML's safe loader (its events from libyaml's parser when PyYAML has
it: the pure-Python scanner was most of the declared pass's cost; composing, where the
bounds are, stays PyYAML's), bounded at the mechanism: a block over
``MAX_FRONT_MATTER_CHARS`` is not parsed, an alias (``*name``) refuses the block (so a
"billion laughs" expansion can never be built or walked), and composing stops past
``MAX_NODES`` nodes or ``MAX_DEPTH`` levels of nesting. Whatever refuses the block, or a block
that is not a mapping, reads as no front matter: the file is still a document.

A flat block (``key: value`` lines and simple lists, nearly every note's) is read without the
parser (``flat``, ADR 0223), to the same result; the parser reads every other block.

``FrontMatter`` keeps what the declared pass reads: ``title``, ``id``, ``aliases``/``alias``,
``tags``/``tag``, ``parent``/``part_of``, ``supersedes``, and every other key whose value is a
scalar (dates as ISO text), as ``fields``.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import msgspec
import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from lcg.ingest.declared.flat import read_flat
from lcg.ingest.declared.model import Scalar

__all__ = [
    "MAX_DEPTH",
    "MAX_FRONT_MATTER_CHARS",
    "MAX_NODES",
    "FrontMatter",
    "read_front_matter",
    "read_yaml_front_matter",
]

#: The longest front matter parsed (characters between the fences); a longer one reads as none.
MAX_FRONT_MATTER_CHARS = 64 * 1024
#: The most YAML nodes one front matter may compose into.
MAX_NODES = 10_000
#: The deepest nesting of collections in a front matter.
MAX_DEPTH = 32

#: The keys read for themselves; every other scalar key is a field.
_TITLE = ("title",)
_ID = ("id",)
_ALIASES = ("aliases", "alias")
_TAGS = ("tags", "tag")
_PARENTS = ("parent", "part_of")
_SUPERSEDES = ("supersedes",)
_KEYS = frozenset((*_TITLE, *_ID, *_ALIASES, *_TAGS, *_PARENTS, *_SUPERSEDES))

_INT64 = 2**63
_TAG_SPLIT = re.compile(r"[,\s]+")


class FrontMatter(msgspec.Struct, frozen=True, kw_only=True):
    """What a front matter declares, its values made text (links still as written)."""

    title: str | None = None
    doc_id: str | None = None
    aliases: list[str] = []
    tags: list[str] = []
    parents: list[str] = []
    supersedes: list[str] = []
    fields: dict[str, Scalar] = {}


class _Refused(yaml.YAMLError):
    """A front matter beyond the bounds (an alias, too many nodes, too deep)."""


if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _Loader(Composer, CParser, SafeConstructor, Resolver):
        """The safe loader on libyaml's events: scanned and parsed in C, composed here."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml

    class _Loader(yaml.SafeLoader):  # type: ignore[no-redef]
        """The safe loader, all in Python."""


class _BoundedLoader(_Loader):
    """The safe loader, refusing aliases and bounding the nodes it composes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._nodes = 0
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        """Compose one node, refusing an alias and any node past the bounds."""
        if self.check_event(yaml.AliasEvent):
            raise _Refused("aliases are not read in front matter")
        self._nodes += 1
        self._depth += 1
        try:
            if self._nodes > MAX_NODES or self._depth > MAX_DEPTH:
                raise _Refused("front matter too large or too deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _load(block: str) -> tuple[yaml.Node | None, object]:
    """The block's node tree (for the keys read as written) and its values (for fields)."""
    loader = _BoundedLoader(block)
    try:
        node = loader.get_single_node()
        return node, (None if node is None else loader.construct_document(node))
    finally:
        loader.dispose()


_NULL = "tag:yaml.org,2002:null"


def _raw(node: yaml.Node, depth: int = 0) -> list[str]:
    """A value's scalars as written (``id: 0042`` is ``0042``, never the octal 34), through
    two levels of lists (``[[Note]]`` written unquoted is a list in a list)."""
    if isinstance(node, yaml.ScalarNode):
        text = str(node.value).strip()
        return [text] if text and node.tag != _NULL else []
    if isinstance(node, yaml.SequenceNode) and depth < 3:
        return [t for item in node.value for t in _raw(item, depth + 1)]
    return []


def read_front_matter(block: str) -> FrontMatter | None:
    """The front matter ``block`` (the text between its fences) declares, or ``None`` when it
    is empty, too long, malformed, beyond the bounds, or not a mapping.

    The keys read for themselves are taken as written; the other keys' scalar values as
    YAML reads them (numbers, booleans; dates as ISO text).
    """
    if not block.strip() or len(block) > MAX_FRONT_MATTER_CHARS:
        return None
    flat = read_flat(block, MAX_NODES)
    if flat is None:
        return read_yaml_front_matter(block)
    raw = {k: v.raw for k, v in flat.items() if k in _KEYS}
    return _front_matter(raw, {k: v.value for k, v in flat.items()})


def read_yaml_front_matter(block: str) -> FrontMatter | None:
    """``read_front_matter`` through the YAML parser alone, whatever the block's shape (the
    path every block that is not flat takes, and what the flat reader is tested against)."""
    if not block.strip() or len(block) > MAX_FRONT_MATTER_CHARS:
        return None
    try:
        node, data = _load(block)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError):
        return None
    if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
        return None
    raw: dict[str, list[str]] = {}
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value in _KEYS:
            raw[key_node.value] = _raw(value_node)
    return _front_matter(raw, data)


def _front_matter(raw: dict[str, list[str]], data: dict[Any, Any]) -> FrontMatter:
    """The front matter of a mapping: ``raw`` the read keys' scalars as written, ``data``
    every key's value as YAML constructs it."""
    fields: dict[str, Scalar] = {}
    for key in sorted(k for k in data if isinstance(k, str) and k not in _KEYS):
        value = _field(data[key])
        if value is not None:
            fields[key] = value

    def first(keys: tuple[str, ...]) -> str | None:
        return next((raw[k][0] for k in keys if raw.get(k)), None)

    def every(keys: tuple[str, ...]) -> list[str]:
        return _unique(t for k in keys for t in raw.get(k, []))

    return FrontMatter(
        title=first(_TITLE),
        doc_id=first(_ID),
        aliases=every(_ALIASES),
        tags=_unique(w for t in every(_TAGS) for w in _TAG_SPLIT.split(t) if w),
        parents=every(_PARENTS),
        supersedes=every(_SUPERSEDES),
        fields=fields,
    )


def _field(value: object) -> Scalar | None:
    """A field's value as stored: a JSON-safe scalar, or text where it would not be one."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return None


def _unique(texts: Any) -> list[str]:
    seen: dict[str, None] = {}
    for text in texts:
        seen.setdefault(text, None)
    return list(seen)
