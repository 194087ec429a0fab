"""Make a reference line runnable by Kuzu as the reference's replay would run it (lcg-api §5.4).

Only what Kuzu cannot run is rewritten; the statement's meaning is left to Kuzu:

* ``vecf32(…)`` / ``VECF32(…)`` (FalkorDB era) wrappers are stripped to their argument;
* ``timestamp($x)`` and the dump's ``CASE WHEN $x IS NULL THEN NULL ELSE timestamp($x) END``
  become ``$x``, and ``$x`` is bound as a time; a ``timestamp('…')`` literal, and a string
  literal given to a time column (graphiti's literal-valued ``CREATE``), become a parameter
  bound as a time, since Kuzu casts no string to ``TIMESTAMP``;
* ``SET n = $props`` with a non-empty object becomes ``SET n.k = $props_k, …``;
* parameters bind as the reference binds them (§2.3): those named ``created_at``,
  ``valid_at``, ``invalid_at``, ``expired_at`` (and any unwrapped above) as times, RFC 3339
  or ``YYYY-MM-DD HH:MM:SS`` taken as UTC; objects as their JSON text; numbers as numbers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from lcg import timestamps

__all__ = ["Prepared", "TIME_NAMES", "is_index_statement", "is_mutation", "prepare"]

#: Parameters the reference binds as TIMESTAMP by name (lcg-api §2.3).
TIME_NAMES: Final = frozenset({"created_at", "valid_at", "invalid_at", "expired_at"})

_MUTATIONS: Final = frozenset({"CREATE", "MERGE", "SET", "DELETE", "DETACH", "DROP", "REMOVE"})
_QUOTED: Final = re.compile(r"'(?:[^'\\]|\\.)*'")
_VECF32: Final = re.compile(r"vecf32\s*\(", re.IGNORECASE)
_CASE_TS: Final = re.compile(
    r"CASE\s+WHEN\s+\$(\w+)\s+IS\s+NULL\s+THEN\s+NULL\s+ELSE\s+timestamp\s*\(\s*\$\1\s*\)\s+END",
    re.IGNORECASE,
)
_TS_PARAM: Final = re.compile(r"\btimestamp\s*\(\s*\$(\w+)\s*\)", re.IGNORECASE)
_TS_LITERAL: Final = re.compile(r"\btimestamp\s*\(\s*('(?:[^'\\]|\\.)*')\s*\)", re.IGNORECASE)
_TIME_LITERAL: Final = re.compile(
    r"\b(created_at|valid_at|invalid_at|expired_at)(\s*(?::|=)\s*)('(?:[^'\\]|\\.)*')"
)
_SET_MAP: Final = re.compile(r"\bSET\s+(\w+)\s*=\s*\$(\w+)(?!\s*\.)", re.IGNORECASE)


class BindError(ValueError):
    """A parameter the reference binds as a time holds no time."""


def _tokens(cypher: str) -> list[str]:
    return _QUOTED.sub("''", cypher).upper().split()


def is_index_statement(cypher: str) -> bool:
    """An index statement the reference's writer never logs (vectors and indexes are ours)."""
    upper = cypher.upper()
    return any(k in upper for k in ("CREATE_VECTOR_INDEX", "CREATE INDEX", "DROP INDEX"))


def is_mutation(cypher: str) -> bool:
    """Whether a whitespace token (quoted literals blanked) is a write keyword (§5.4)."""
    return any(t in _MUTATIONS for t in _tokens(cypher))


def _strip_vecf32(cypher: str) -> str:
    out: list[str] = []
    pos = 0
    while (m := _VECF32.search(cypher, pos)) is not None:
        out.append(cypher[pos : m.start()])
        depth, i = 1, m.end()
        start = i
        while i < len(cypher) and depth:
            depth += {"(": 1, ")": -1}.get(cypher[i], 0)
            i += 1
        if depth:  # unbalanced: leave the rest for Kuzu to refuse
            out.append(cypher[m.start() :])
            return "".join(out)
        out.append(cypher[start : i - 1])
        pos = i
    out.append(cypher[pos:])
    return "".join(out)


def _literal(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


@dataclass
class Prepared:
    """A statement Kuzu can run and its bound parameters."""

    cypher: str
    params: dict[str, Any]
    #: Vector parameters bound as null: vectors are computed again, never imported.
    vectors_dropped: int = 0


def _bind_time(name: str, value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value.strip():
        raise BindError(f"${name} is {value!r}, not a time")
    try:
        return timestamps.parse(value.strip()).replace(tzinfo=None)
    except ValueError:
        raise BindError(f"${name} is {value!r}, not a time") from None


def _bind(value: Any) -> Any:
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, list):
        return [_bind(v) if isinstance(v, dict) else v for v in value]
    return value


def prepare(cypher: str, params: dict[str, Any]) -> Prepared:
    """``cypher`` and ``params`` rewritten for Kuzu; ``BindError`` for a time that is none."""
    params = dict(params)
    times = {k for k in params if k in TIME_NAMES}
    text = _strip_vecf32(cypher)

    def case_ts(m: re.Match[str]) -> str:
        times.add(m.group(1))
        return f"${m.group(1)}"

    text = _CASE_TS.sub(case_ts, text)
    text = _TS_PARAM.sub(case_ts, text)
    counter = iter(range(1_000_000))

    def literal_param(value: str) -> str:
        name = f"__lcg_time_{next(counter)}"
        params[name] = _literal(value)
        times.add(name)
        return f"${name}"

    text = _TS_LITERAL.sub(lambda m: literal_param(m.group(1)), text)
    text = _TIME_LITERAL.sub(lambda m: m.group(1) + m.group(2) + literal_param(m.group(3)), text)

    def flatten(m: re.Match[str]) -> str:
        alias, name = m.group(1), m.group(2)
        value = params.get(name)
        if not isinstance(value, dict) or not value:
            return m.group(0)
        parts = []
        for key, item in value.items():
            flat = f"{name}_{key}"
            params[flat] = item
            if key in TIME_NAMES:
                times.add(flat)
            parts.append(f"{alias}.{key} = ${flat}")
        del params[name]
        return "SET " + ", ".join(parts)

    text = _SET_MAP.sub(flatten, text)
    # Kuzu refuses a parameter the statement does not name (a line's spare keys).
    used = set(re.findall(r"\$(\w+)", _QUOTED.sub("''", text)))
    bound: dict[str, Any] = {}
    dropped = 0
    for key, value in params.items():
        if key not in used:
            continue
        if key not in times and _is_vector(value):
            # Every list-of-numbers column of the schema is a vector; carrying hundreds of
            # floats through Kuzu only to drop them costs most of a replay's time.
            bound[key] = None
            dropped += 1
        else:
            bound[key] = _bind_time(key, value) if key in times else _bind(value)
    return Prepared(text, bound, dropped)


def _is_vector(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    )
