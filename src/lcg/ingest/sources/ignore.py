"""Git's ignore-file rules, matched without backtracking (ADR 0192).

A ``.gitignore`` line is parsed as git does (``gitignore(5)``): ``#`` comments, trailing
spaces dropped unless escaped, ``!`` negation, a trailing ``/`` for folders only, a ``/`` at
the start or in the middle anchoring the pattern to the ignore file's folder (otherwise it
matches a name at any depth), ``**`` as a whole component for any number of folders (``**/x``,
``a/**/b``; a trailing ``/**`` for everything inside), ``*`` and ``?`` within one component,
``[...]`` classes (``!``/``^`` negation, ranges, ``[:alpha:]``-style names) and ``\\``
escapes. Within a file the last matching line decides.

Matching never backtracks exponentially: a path is matched component by component (a set of
positions in the pattern, ``**`` keeping its position), and one component's glob is a
regular expression in which every ``*`` but the last finds the *leftmost* occurrence of the
fixed piece after it inside an atomic group, which is enough for a glob (taking the first
place a fixed-length piece fits never loses a match) and costs at most name × pattern steps.
``a*a*…a*b`` against ``aaaa…`` (exponential for a backtracking translation) is immediate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

__all__ = ["IgnoreFile", "IgnorePattern", "parse_pattern"]

_Token = tuple[Literal["lit", "any", "class", "star", "slash"], str]

_POSIX = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


def _class(line: str, i: int) -> tuple[str, int] | None:
    """The regex of the ``[...]`` class starting at ``line[i]`` and the index after it."""
    n = len(line)
    j = i + 1
    negate = j < n and line[j] in "!^"
    j += negate
    items: list[str] = []
    first = True
    while j < n:
        c = line[j]
        if c == "]" and not first:
            body = "".join(items)
            if not body:
                return ("[\\s\\S]" if negate else "(?!)"), j + 1
            return f"[{'^' if negate else ''}{body}]", j + 1
        first = False
        if c == "[" and line.startswith("[:", j):
            end = line.find(":]", j + 2)
            if end != -1 and line[j + 2 : end] in _POSIX:
                items.append(_POSIX[line[j + 2 : end]])
                j = end + 2
                continue
        if c == "\\" and j + 1 < n:
            j += 1
            c = line[j]
        j += 1
        if j + 1 < n and line[j] == "-" and line[j + 1] != "]":
            hi, j = line[j + 1], j + 2
            if hi == "\\" and j < n:
                hi, j = line[j], j + 1
            if ord(hi) >= ord(c):  # a reversed range matches nothing
                items.append(f"{re.escape(c)}-{re.escape(hi)}")
            continue
        items.append(re.escape(c))
    return None  # no closing bracket: the "[" is a plain character


def _tokens(line: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\" and i + 1 < n:
            out.append(("lit", line[i + 1]))
            i += 2
        elif c == "*":
            out.append(("star", ""))
            i += 1
        elif c == "?":
            out.append(("any", ""))
            i += 1
        elif c == "/":
            out.append(("slash", ""))
            i += 1
        elif c == "[" and (cls := _class(line, i)) is not None:
            out.append(("class", cls[0]))
            i = cls[1]
        else:
            out.append(("lit", c))
            i += 1
    return out


class _Glob:
    """One path component's glob (no ``/``): a fixed string, a prefix/suffix, or a regex."""

    __slots__ = ("_exact", "_prefix", "_regex", "_suffix")

    def __init__(self, tokens: list[_Token]) -> None:
        self._exact: str | None = None
        self._prefix: str | None = None
        self._suffix: str | None = None
        self._regex: re.Pattern[str] | None = None
        pieces: list[list[_Token]] = [[]]
        for tok in tokens:
            if tok[0] == "star":
                if pieces[-1] or len(pieces) == 1:
                    pieces.append([])
            else:
                pieces[-1].append(tok)
        literal = [all(t[0] == "lit" for t in p) for p in pieces]
        text = ["".join(t[1] for t in p) for p in pieces]
        if len(pieces) == 1 and literal[0]:
            self._exact = text[0]
        elif len(pieces) == 2 and all(literal):
            self._prefix, self._suffix = text[0], text[1]
        else:
            self._regex = re.compile(_glob_regex(pieces), re.DOTALL)

    def matches(self, name: str) -> bool:
        """Whether ``name`` (one component) matches."""
        if self._exact is not None:
            return name == self._exact
        if self._prefix is not None and self._suffix is not None:
            return (
                len(name) >= len(self._prefix) + len(self._suffix)
                and name.startswith(self._prefix)
                and name.endswith(self._suffix)
            )
        assert self._regex is not None
        return self._regex.match(name) is not None


def _piece_regex(piece: list[_Token]) -> str:
    return "".join(re.escape(v) if k == "lit" else "." if k == "any" else v for k, v in piece)


def _glob_regex(pieces: list[list[_Token]]) -> str:
    """``p0 * p1 * … * pk`` as a regex: each middle piece found leftmost and kept (atomic)."""
    head, *middle_tail = pieces
    if not middle_tail:
        return _piece_regex(head) + r"\Z"
    *middle, tail = middle_tail
    out = [_piece_regex(head)]
    out.extend(f"(?>.*?{_piece_regex(p)})" for p in middle)
    out.append(f".*{_piece_regex(tail)}" + r"\Z")
    return "".join(out)


#: ``**`` as a whole component (any number of folders) is ``None`` in a pattern's parts.
_ANY_DEPTH = None


class IgnorePattern:
    """One parsed ignore line: what it matches and whether it ignores or re-includes."""

    __slots__ = ("dir_only", "negated", "_parts", "_basename")

    def __init__(self, parts: list[_Glob | None], *, negated: bool, dir_only: bool) -> None:
        self.negated = negated
        self.dir_only = dir_only
        self._parts = parts
        # An unanchored pattern (``**`` then one glob) looks at the last component only.
        self._basename = parts[1] if len(parts) == 2 and parts[0] is _ANY_DEPTH else None

    def matches(self, components: list[str], *, is_dir: bool) -> bool:
        """Whether the path ``components`` (relative to the ignore file's folder) matches."""
        if self.dir_only and not is_dir:
            return False
        if self._basename is not None:
            return self._basename.matches(components[-1])
        parts = self._parts
        states = self._closure({0})
        for name in components:
            nxt: set[int] = set()
            for i in states:
                if i == len(parts):
                    continue
                glob = parts[i]
                if glob is None:  # ``**``
                    nxt.add(i)
                elif glob.matches(name):
                    nxt.add(i + 1)
            states = self._closure(nxt)
            if not states:
                return False
        return len(parts) in states

    def _closure(self, states: set[int]) -> set[int]:
        # Consecutive ``**`` were merged at parse time, so one step reaches every state.
        return states | {i + 1 for i in states if i < len(self._parts) and self._parts[i] is None}


def _strip_trailing_spaces(line: str) -> str:
    end = len(line)
    while end and line[end - 1] == " ":
        slashes = 0
        while end - 1 - slashes > 0 and line[end - 2 - slashes] == "\\":
            slashes += 1
        if slashes % 2:
            break
        end -= 1
    return line[:end]


def parse_pattern(line: str) -> IgnorePattern | None:
    """The pattern of one ignore-file line, ``None`` for a blank line or a comment."""
    if line.startswith("#"):
        return None
    line = _strip_trailing_spaces(line)
    negated = line.startswith("!")
    tokens = _tokens(line[1:] if negated else line)
    dir_only = False
    while tokens and tokens[-1][0] == "slash":
        tokens.pop()
        dir_only = True
    anchored = any(t[0] == "slash" for t in tokens)
    components: list[list[_Token]] = [[]]
    for tok in tokens:
        if tok[0] == "slash":
            components.append([])
        else:
            components[-1].append(tok)
    components = [c for c in components if c]
    if not components:
        return None
    parts: list[_Glob | None] = [] if anchored else [_ANY_DEPTH]
    for comp in components:
        if len(comp) >= 2 and all(t[0] == "star" for t in comp):
            if not parts or parts[-1] is not _ANY_DEPTH:
                parts.append(_ANY_DEPTH)
        else:
            parts.append(_Glob(comp))
    if len(parts) > 1 and parts[-1] is _ANY_DEPTH:
        # A trailing "/**" is everything inside, not the folder itself: one component or more.
        parts[-1:] = [_Glob([("star", "")]), _ANY_DEPTH]
    return IgnorePattern(parts, negated=negated, dir_only=dir_only)


class IgnoreFile:
    """The patterns of one folder's ignore files, in order (the last match decides)."""

    __slots__ = ("_patterns",)

    def __init__(self, lines: Iterable[str]) -> None:
        self._patterns = [p for p in map(parse_pattern, lines) if p is not None]

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def decide(self, path: str, *, is_dir: bool) -> bool | None:
        """``True``: ``path`` is ignored, ``False``: re-included, ``None``: no line matches."""
        components = path.split("/")
        for pattern in reversed(self._patterns):
            if pattern.matches(components, is_dir=is_dir):
                return not pattern.negated
        return None
