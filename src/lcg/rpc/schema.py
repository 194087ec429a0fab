"""Typed method parameters: one msgspec Struct per method, checked once for every transport.

A method's parameters are a ``Params`` subclass: field names, types, defaults (a field without
a default is required) and ``msgspec.Meta`` descriptions. ``parse`` turns a request's
``params`` object into that Struct, and is the only place parameters are checked:

* keys starting with ``_`` are protocol fields (``_progress_token``, MCP's ``_meta``) and are
  let through unseen; ``null`` means absent (the reference treats both the same);
* an unknown key is refused, naming the closest known parameter;
* a missing required parameter, a wrong type, a non-finite number or an integer outside
  ±(2^53 - 1) is refused with the parameter's name and what it must be;
* an integer outside its declared range (``Meta(ge=…, le=…)``, which the JSON schema states
  as ``minimum``/``maximum``) is refused the same way (``num_results must be an integer from
  1 to 500 (got -5)``), except above the maximum of a field marked ``extra={"clamp": True}``:
  that is read as the maximum (the documented clamps, ADR 0062/0195);
* a float with an integral value is accepted for an integer parameter (JSON has one number
  type), and ``__post_init__`` applies each method's other documented clamps.

The reference's lenient rules (its four ``group_id`` parsers, ``uuids`` dropping non-strings)
are kept by typing those fields as the raw JSON they accept and parsing them in ``params.py``.
``json_schema`` and ``describe`` render the same Struct for MCP and ``lcg methods``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Final

import msgspec
from msgspec import Meta
from msgspec import inspect as mi

from lcg.errors import InvalidParamsError
from lcg.events import nfc_group_ids

__all__ = [
    "MAX_SAFE_INT",
    "GROUP_PARAM",
    "FieldDoc",
    "Int",
    "NoParams",
    "Params",
    "closest",
    "example_params",
    "field_docs",
    "json_schema",
    "parse",
    "required_names",
]

#: The largest integer every JSON implementation carries exactly (2^53 - 1); the bound of
#: every integer parameter, so a huge number is a parameter error, never a database error.
MAX_SAFE_INT = 2**53 - 1

#: An integer parameter (bounded so that it always fits the engine's 64-bit integers).
Int = Annotated[int, Meta(ge=-MAX_SAFE_INT, le=MAX_SAFE_INT)]

#: The ``Meta(extra=...)`` of a parameter that names groups, whatever it is called: every
#: group id it carries enters in NFC (NFC and NFD spellings name one group, ADR 0151).
GROUP_PARAM: Final[dict[str, Any]] = {"names_groups": True}


class Params(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of every method's parameter Struct."""

    #: Words naming an example value per parameter, used by ``lcg methods NAME``.
    examples: ClassVar[Mapping[str, Any]] = {}


class NoParams(Params):
    """A method that takes no parameters."""


# ---- similarity ----------------------------------------------------------------------------


def closest(word: str, choices: list[str], *, prefix: str = "", cutoff: float = 70.0) -> str | None:
    """The choice most like ``word``, or ``None`` when none is near.

    ``prefix`` (``knowledge_``) is ignored on both sides, so a shared prefix does not make
    unrelated names look alike. rapidfuzz's ``WRatio`` also matches a word that is part of a
    name (``search`` → ``knowledge_search_passages``).
    """
    from rapidfuzz import fuzz, process

    def bare(name: str) -> str:
        return name[len(prefix) :] if prefix and name.startswith(prefix) else name

    if not choices:
        return None
    best = process.extractOne(
        bare(word), [bare(c) for c in choices], scorer=fuzz.WRatio, score_cutoff=cutoff
    )
    return None if best is None else choices[best[2]]


# ---- field inspection ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldDoc:
    """What ``lcg methods NAME`` and the MCP schema say about one parameter."""

    name: str
    required: bool
    #: ``msgspec.inspect`` type of the field, without its ``Metadata`` wrapper.
    type: mi.Type
    default: Any
    description: str
    #: JSON Schema type names this parameter accepts (``null`` never listed: it means absent).
    json_types: tuple[str, ...]


def _extra(t: mi.Type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    while isinstance(t, mi.Metadata):
        out.update(t.extra or {})
        t = t.type
    return out


def _unwrap(t: mi.Type) -> tuple[mi.Type, dict[str, Any]]:
    schema: dict[str, Any] = {}
    while isinstance(t, mi.Metadata):
        schema.update(t.extra_json_schema or {})
        t = t.type
    return t, schema


def _members(t: mi.Type) -> list[mi.Type]:
    t, _ = _unwrap(t)
    if isinstance(t, mi.UnionType):
        out: list[mi.Type] = []
        for member in t.types:
            out.extend(_members(member))
        return out
    return [t]


_JSON_NAMES: dict[type[mi.Type], str] = {
    mi.IntType: "integer",
    mi.FloatType: "number",
    mi.StrType: "string",
    mi.BoolType: "boolean",
    mi.ListType: "array",
    mi.DictType: "object",
    # A parameter that is a record of its own (``knowledge_declare_structure``'s structure).
    mi.StructType: "object",
    mi.NoneType: "null",
}


def _json_name(t: mi.Type) -> str | None:
    return _JSON_NAMES.get(type(t))


@functools.cache
def _fields(cls: type[Params]) -> tuple[mi.Field, ...]:
    # ``type_info`` builds decoders (about a millisecond): once per class, not per call.
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return info.fields


@functools.cache
def _by_name(cls: type[Params]) -> dict[str, mi.Field]:
    return {f.name: f for f in _fields(cls)}


@functools.cache
def _int_fields(cls: type[Params]) -> frozenset[str]:
    return frozenset(f.name for f in _fields(cls) if _int_field(f.type))


def _int_range(t: mi.Type) -> tuple[int | None, int | None]:
    """The ``(minimum, maximum)`` an integer type declares (``None``: unbounded)."""
    for m in _members(t):
        if isinstance(m, mi.IntType):
            lo = m.ge if m.ge is not None else (None if m.gt is None else m.gt + 1)
            hi = m.le if m.le is not None else (None if m.lt is None else m.lt - 1)
            return lo, hi
    return None, None


@functools.cache
def _ceilings(cls: type[Params]) -> dict[str, int]:
    """Integer parameters read as their maximum when above it (``extra={"clamp": True}``)."""
    out: dict[str, int] = {}
    for f in _fields(cls):
        high = _int_range(f.type)[1]
        if _extra(f.type).get("clamp") and high is not None:
            out[f.name] = high
    return out


def field_docs(cls: type[Params]) -> list[FieldDoc]:
    """The parameters of ``cls`` in declaration order."""
    out = []
    for f in _fields(cls):
        bare, schema = _unwrap(f.type)
        if isinstance(bare, mi.UnionType):
            # ``Annotated[X, Meta(...)] | None`` keeps its description on the member.
            for member in bare.types:
                schema = {**_unwrap(member)[1], **schema}
        names = [n for n in (_json_name(m) for m in _members(bare)) if n and n != "null"]
        out.append(
            FieldDoc(
                name=f.name,
                required=f.required,
                type=bare,
                default=None if f.default is msgspec.NODEFAULT else f.default,
                description=str(schema.get("description", "")),
                json_types=tuple(dict.fromkeys(names)),
            )
        )
    return out


def required_names(cls: type[Params]) -> list[str]:
    """Names of the required parameters of ``cls``, in declaration order."""
    return [f.name for f in _fields(cls) if f.required]


def _describe(t: mi.Type) -> str:
    """``t`` in words, as it ends ``X must be …``."""
    members = [m for m in _members(t) if not isinstance(m, mi.NoneType)]
    if len(members) > 1:
        return " or ".join(_describe(m) for m in members)
    (m,) = members or [t]
    if isinstance(m, mi.IntType):
        lo, hi = _int_range(m)
        if lo == 0 and hi == MAX_SAFE_INT:
            return f"a non-negative integer (at most {MAX_SAFE_INT})"
        if lo is not None and lo > 0 and hi == MAX_SAFE_INT:
            return f"an integer of at least {lo} (at most {MAX_SAFE_INT})"
        if lo == -MAX_SAFE_INT and hi == MAX_SAFE_INT:
            return f"an integer (at most {MAX_SAFE_INT} in absolute value)"
        if lo is not None and hi is not None:
            return f"an integer from {lo} to {hi}"
        return "an integer"
    if isinstance(m, mi.FloatType):
        return "a finite number"
    if isinstance(m, mi.StrType):
        if m.pattern is not None:
            return "a non-blank string"
        return "a non-empty string" if m.min_length else "a string"
    if isinstance(m, mi.BoolType):
        return "a boolean (true or false)"
    if isinstance(m, mi.ListType):
        item = _unwrap(m.item_type)[0]
        array = "a non-empty array" if m.min_length else "an array"
        if isinstance(item, mi.AnyType):
            return array
        return f"{array} of {_plural(_describe(item))}"
    if isinstance(m, mi.DictType):
        return "an object"
    return "a JSON value"


def _plural(words: str) -> str:
    for article in ("an ", "a "):
        if words.startswith(article):
            words = words[len(article) :]
    head, _, tail = words.partition(" (")
    head = head + "s" if not head.endswith("s") else head
    return head + (f" ({tail}" if tail else "")


def describe_field(cls: type[Params], name: str) -> str:
    """What parameter ``name`` of ``cls`` must be, in words (``a non-empty string``)."""
    for f in _fields(cls):
        if f.name == name:
            return _describe(f.type)
    raise KeyError(name)


# ---- parsing -------------------------------------------------------------------------------


def _shown(value: Any) -> str:
    if _non_finite(value) or not _encodable(value):
        text = repr(value)
    else:
        text = msgspec.json.encode(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _encodable(value: Any) -> bool:
    try:
        msgspec.json.encode(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _int_field(t: mi.Type) -> bool:
    return any(isinstance(m, mi.IntType) for m in _members(t)) and not any(
        isinstance(m, mi.FloatType) for m in _members(t)
    )


def _non_finite(value: Any) -> bool:
    # Iterative: a deeply nested value must not become a RecursionError (-32603).
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return False


_PATH = re.compile(r"at `\$\.([A-Za-z0-9_]+)")


def _required_text(f: mi.Field) -> str:
    """The message for a required parameter that is absent or unusable."""
    # Some methods keep the reference's own wording (``chunk_text is required and must be
    # non-empty``), declared on the field as ``Meta(extra={"required": ...})``.
    text = _extra(f.type).get("required")
    return str(text) if text else f"{f.name} is required and must be {_describe(f.type)}"


def _invalid(cls: type[Params], f: mi.Field, value: Any) -> str:
    low, high = _int_range(f.type)
    huge = _is_number(value) and abs(value) > MAX_SAFE_INT
    if huge and high != MAX_SAFE_INT and _int_field(f.type):
        # A range such as 1-500 would hide the rule this value breaks: every integer
        # parameter lies within ±(2^53 - 1).
        return (
            f"{f.name} must be an integer (at most {MAX_SAFE_INT} in absolute value) "
            f"(got {_shown(value)})"
        )
    below = _extra(f.type).get("below")
    if below and not huge and _is_int(value) and low is not None and value < low:
        # The reference's own wording for a count below its minimum (``num_results must be
        # > 0``), declared on the field as ``Meta(extra={"below": ...})``.
        return f"{str(below).format(name=f.name)} (got {_shown(value)})"
    if f.required:
        return f"{_required_text(f)} (got {_shown(value)})"
    return f"{f.name} must be {describe_field(cls, f.name)} (got {_shown(value)})"


def _names_groups(t: mi.Type) -> bool:
    """Whether ``t`` (or a member of its union) is marked ``GROUP_PARAM``."""
    while isinstance(t, mi.Metadata):
        if (t.extra or {}).get("names_groups"):
            return True
        t = t.type
    return isinstance(t, mi.UnionType) and any(_names_groups(m) for m in t.types)


@functools.cache
def _group_fields(cls: type[Params]) -> frozenset[str]:
    return frozenset(f.name for f in _fields(cls) if _names_groups(f.type))


def parse(method: str, cls: type[Params], params: Mapping[str, Any]) -> Params:
    """``params`` checked against ``cls`` (raises ``InvalidParamsError`` saying what to fix)."""
    fields = _by_name(cls)
    ints = _int_fields(cls)
    groups = _group_fields(cls)
    given: dict[str, Any] = {}
    for key, value in params.items():
        if key.startswith("_"):
            continue  # protocol fields: _progress_token, MCP's _meta, and any future ones
        if key not in fields:
            raise InvalidParamsError(_unknown(method, key, list(fields)))
        if value is None:
            continue  # null means absent, as in the reference's parsers
        # Every group id enters in NFC: NFC and NFD spellings name one group (ADR 0151).
        given[key] = nfc_group_ids(value) if key in groups else value
    for name, f in fields.items():
        if f.required and name not in given:
            raise InvalidParamsError(f"{_required_text(f)} (see `lcg methods {method}`)")
    for name, value in list(given.items()):
        if _non_finite(value):
            raise InvalidParamsError(_invalid(cls, fields[name], value))
        if isinstance(value, float) and name in ints and value.is_integer():
            given[name] = value = int(value)
        high = _ceilings(cls).get(name)
        if high is not None and _is_int(value) and high < value <= MAX_SAFE_INT:
            given[name] = high
    try:
        return msgspec.convert(given, cls, strict=True)
    except msgspec.ValidationError as exc:
        found = _PATH.search(str(exc))
        if found is None or found.group(1) not in fields:
            raise InvalidParamsError(f"invalid parameters for {method}: {exc}") from None
        name = found.group(1)
        raise InvalidParamsError(_invalid(cls, fields[name], params.get(name))) from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _unknown(method: str, key: str, known: list[str]) -> str:
    if not known:
        return f"unknown parameter {key!r}: {method} takes no parameters"
    guess = closest(key, known)
    if guess is not None:
        return f"unknown parameter {key!r} — did you mean {guess!r}?"
    return f"unknown parameter {key!r}: {method} takes {', '.join(known)}"


# ---- rendering -----------------------------------------------------------------------------


def _property(doc: FieldDoc) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # null is accepted for every optional parameter (it means "the default") but not listed:
    # several MCP clients mishandle type unions.
    types = list(doc.json_types)
    out["type"] = types[0] if len(types) == 1 else types
    for m in _members(doc.type):
        if isinstance(m, mi.ListType):
            item = _json_name(_unwrap(m.item_type)[0])
            if item is not None:
                out["items"] = {"type": item}
        if isinstance(m, mi.IntType):
            lo, hi = _int_range(m)
            if lo is not None and lo != -MAX_SAFE_INT:
                out["minimum"] = lo
            if hi is not None and hi != MAX_SAFE_INT:
                out["maximum"] = hi
        if isinstance(m, mi.StrType) and m.min_length:
            out["minLength"] = m.min_length
    if doc.description:
        out["description"] = doc.description
    if doc.default is not None:
        out["default"] = doc.default
    return out


def json_schema(cls: type[Params]) -> dict[str, Any]:
    """The flat JSON Schema object of ``cls`` (an MCP ``inputSchema``)."""
    docs = field_docs(cls)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {d.name: _property(d) for d in docs},
    }
    required = [d.name for d in docs if d.required]
    if required:
        schema["required"] = required
    return schema


_PLACEHOLDER: dict[str, Any] = {
    "string": "text",
    "integer": 10,
    "number": 0.5,
    "boolean": True,
    "array": ["liminis"],
    "object": {},
}


def example_params(cls: type[Params]) -> dict[str, Any]:
    """Example ``params`` for ``cls``: every required parameter, plus the class's examples."""
    out: dict[str, Any] = {}
    for d in field_docs(cls):
        if d.name in cls.examples:
            out[d.name] = cls.examples[d.name]
        elif d.required:
            out[d.name] = _PLACEHOLDER.get(d.json_types[0] if d.json_types else "string", "x")
    return out
