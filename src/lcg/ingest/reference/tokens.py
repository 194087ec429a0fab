"""Split a reference line's Cypher text into tokens, in one linear pass.

Comments (``// …`` to the end of the line, ``/* … */``) are dropped, so a word inside one
never reaches the parser. String literals (``'…'`` and ``"…"``) are decoded with Cypher's
escapes; a backquoted name (``\u0060…\u0060``, a doubled backquote inside) is a name, never a
keyword. Anything else the small grammar of the reference's templates has no use for (an
unknown escape, a stray character, an unterminated string or comment) is a ``TokenError``:
the line is not a template.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

__all__ = ["Kind", "Token", "TokenError", "tokenize"]


class Kind(Enum):
    """What a token is."""

    WORD = "word"  # a name or a keyword (unquoted): compared case-insensitively as keyword
    NAME = "name"  # a backquoted name: never a keyword
    PARAM = "param"  # ``$name``
    STRING = "string"
    NUMBER = "number"
    PUNCT = "punct"


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind, its text (a string literal decoded) and where it starts."""

    kind: Kind
    text: str
    at: int


class TokenError(ValueError):
    """The text holds something no template of the reference is made of."""


_ESCAPES: Final = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r",
                   "b": "\b", "f": "\f"}  # fmt: skip
_PUNCT: Final = frozenset("()[]{}:,.=;-<>+*")
_PAIRS: Final = frozenset({"->", "<-"})
_WORD_START: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_WORD_CHARS: Final = _WORD_START | frozenset("0123456789")
_DIGITS: Final = frozenset("0123456789")


def _string(text: str, start: int) -> tuple[str, int]:
    """The decoded literal opening at ``start`` and the index after its closing quote."""
    quote = text[start]
    out: list[str] = []
    i = start + 1
    while True:
        end = i
        while end < len(text) and text[end] not in (quote, "\\"):
            end += 1
        out.append(text[i:end])
        if end >= len(text):
            raise TokenError(f"a string literal at {start} never ends")
        if text[end] == quote:
            return "".join(out), end + 1
        code = text[end + 1 : end + 2]
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            i = end + 2
        elif code in ("u", "U"):
            width = 4 if code == "u" else 8
            digits = text[end + 2 : end + 2 + width]
            if len(digits) != width or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise TokenError(f"a bad \\{code} escape at {end}")
            point = int(digits, 16)
            if point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
                raise TokenError(f"a \\{code} escape at {end} names no character")
            out.append(chr(point))
            i = end + 2 + width
        else:
            raise TokenError(f"an unknown escape \\{code} at {end}")


def _backquoted(text: str, start: int) -> tuple[str, int]:
    out: list[str] = []
    i = start + 1
    while True:
        end = text.find("`", i)
        if end < 0:
            raise TokenError(f"a backquoted name at {start} never ends")
        out.append(text[i:end])
        if text.startswith("``", end):
            out.append("`")
            i = end + 2
            continue
        return "".join(out), end + 1


def _number(text: str, start: int) -> int:
    i = start
    while i < len(text) and text[i] in _DIGITS:
        i += 1
    if text[i : i + 1] == "." and text[i + 1 : i + 2] in _DIGITS:
        i += 1
        while i < len(text) and text[i] in _DIGITS:
            i += 1
    if text[i : i + 1] in ("e", "E"):
        j = i + 1
        if text[j : j + 1] in ("+", "-"):
            j += 1
        if text[j : j + 1] in _DIGITS:
            i = j
            while i < len(text) and text[i] in _DIGITS:
                i += 1
    if text[i : i + 1] in _WORD_CHARS:
        raise TokenError(f"a malformed number at {start}")
    return i


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, comments dropped; ``TokenError`` for anything unknown."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise TokenError(f"a comment at {i} never ends")
            i = end + 2
        elif c in ("'", '"'):
            value, end = _string(text, i)
            tokens.append(Token(Kind.STRING, value, i))
            i = end
        elif c == "`":
            value, end = _backquoted(text, i)
            tokens.append(Token(Kind.NAME, value, i))
            i = end
        elif c == "$":
            end = i + 1
            while end < n and text[end] in _WORD_CHARS:
                end += 1
            if end == i + 1:
                raise TokenError(f"a '$' without a parameter name at {i}")
            tokens.append(Token(Kind.PARAM, text[i + 1 : end], i))
            i = end
        elif c in _WORD_START:
            end = i + 1
            while end < n and text[end] in _WORD_CHARS:
                end += 1
            tokens.append(Token(Kind.WORD, text[i:end], i))
            i = end
        elif c in _DIGITS:
            end = _number(text, i)
            tokens.append(Token(Kind.NUMBER, text[i:end], i))
            i = end
        elif text[i : i + 2] in _PAIRS:
            tokens.append(Token(Kind.PUNCT, text[i : i + 2], i))
            i += 2
        elif c in _PUNCT:
            tokens.append(Token(Kind.PUNCT, c, i))
            i += 1
        else:
            raise TokenError(f"an unexpected character {c!r} at {i}")
    return tokens
