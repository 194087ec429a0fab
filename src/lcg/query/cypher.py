"""The read-only guard of ``knowledge_query_cypher``: one lexer, one allow-list.

The graph is a projection of the streams: a raw Cypher write would change it behind the
stream's back and vanish at the next rebuild, and Kuzu's file clauses (``LOAD FROM``,
``COPY … TO``) would read and write files with the service's rights. So only reads pass.

``tokenize`` reads the query once, left to right, exactly as Kuzu 0.11's lexer does (its
``Cypher.g4``): strings in either quote with Kuzu's escapes, backquoted names (a doubled
backquote continues the name), ``//`` comments up to CR or LF, ``/* */`` comments where a
``*`` followed by anything but ``/`` is swallowed with that character (so ``/* **/`` does
*not* close a comment in Kuzu). Anything it cannot read the same way Kuzu does is refused:
an unterminated string, comment or name, an escape Kuzu rejects, a character outside Kuzu's
whitespace and punctuation, a block comment that some reader would close earlier.

``check_read_only`` then holds the tokens to an allow-list: the statement starts with a read
clause, and every word that is one of Kuzu's keywords must be a read clause or an expression
keyword (``READ_KEYWORDS``). A word is a *name*, not a keyword, where its position says so:
backquoted, after ``.`` (a property), after ``:`` (a label or map key value), after ``$``
(a parameter). Words that are not Kuzu keywords are names too, and a name may not follow a
complete value (``… RETURN e FOO x`` is a clause this guard does not know, so it is refused).
``;`` may only end the statement. CALL, LOAD, COPY, EXPORT, IMPORT, INSTALL, ATTACH, every
write and every transaction statement are refused because they are not on the list.

Before any of that, a query longer, with more tokens or operators, or nested deeper than
Kuzu's parser survives (``MAX_QUERY_CHARS``, ``MAX_TOKENS``, ``MAX_OPERATORS``,
``MAX_DEPTH``) is refused.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Literal

from lcg.errors import ReadOnlyError

__all__ = [
    "KUZU_KEYWORDS",
    "MAX_DEPTH",
    "MAX_OPERATORS",
    "MAX_QUERY_CHARS",
    "MAX_TOKENS",
    "READ_CLAUSES",
    "READ_KEYWORDS",
    "Token",
    "check_read_only",
    "tokenize",
]

# Kuzu 0.11.3's parser and binder recurse without a bound and are superlinear in nesting and
# operator chains: measured, 5,000 nested parentheses or `RETURN 1+1+…` with 10,000 terms
# crash the process (SIGSEGV), 400 nested lists take a minute to parse, 7,000 terms 16 s,
# 5,000 ORs 20 s; flat lists stay linear (9,000 quoted uuids: 1 s). Kuzu's query timeout does
# not cover parsing. So the guard bounds what reaches the parser (ADR 0070).
#: Longest query accepted (characters).
MAX_QUERY_CHARS = 1_000_000
#: Most tokens (comments and whitespace not counted): an ``IN`` list of ~9,000 literals.
MAX_TOKENS = 20_000
#: Most operators (arithmetic, comparison, AND/OR/XOR/NOT/IN/IS/STARTS/ENDS/CONTAINS, and
#: the dashes and arrowheads of patterns): each can deepen the expression tree by one.
MAX_OPERATORS = 1_000
#: Deepest nesting of ``()``, ``[]`` and ``{}`` together.
MAX_DEPTH = 32

#: Clauses a query may start with.
READ_CLAUSES = frozenset({"MATCH", "OPTIONAL", "UNWIND", "WITH", "RETURN"})

#: Every keyword allowed outside strings, comments and name positions: read clauses and the
#: words of expressions and path patterns.
READ_KEYWORDS = READ_CLAUSES | frozenset(
    {
        "WHERE", "ORDER", "BY", "SKIP", "LIMIT", "UNION", "ALL",
        "AND", "OR", "XOR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "AS", "DISTINCT",
        "CASE", "WHEN", "THEN", "ELSE", "END", "STARTS", "ENDS", "CONTAINS",
        "ASC", "ASCENDING", "DESC", "DESCENDING", "COUNT", "EXISTS", "CAST",
        "ANY", "NONE", "SINGLE", "SHORTEST", "WSHORTEST", "TRAIL", "ACYCLIC",
    }
)  # fmt: skip

#: Every word Kuzu 0.11's grammar lexes as a keyword (plus openCypher's write and admin
#: words), so a word outside this set can only be a name. A keyword here and not in
#: ``READ_KEYWORDS`` is refused wherever it stands as a keyword.
KUZU_KEYWORDS = READ_KEYWORDS | frozenset(
    {
        "ADD", "ALTER", "ATTACH", "BEGIN", "CALL", "CHECKPOINT", "COLUMN", "COMMENT", "COMMIT",
        "COPY", "CREATE", "CYCLE", "DATABASE", "DBTYPE", "DECIMAL", "DEFAULT", "DELETE",
        "DETACH", "DROP", "EXPLAIN", "EXPORT", "EXTENSION", "FORCE", "FROM", "GLOB", "GRAPH",
        "GROUP", "HEADERS", "HINT", "IF", "IMPORT", "INCREMENT", "INSTALL", "JOIN", "KEY",
        "LOAD", "LOGICAL", "MACRO", "MAP", "MAXVALUE", "MERGE", "MINVALUE", "MULTI_JOIN", "NO",
        "NODE", "ON", "ONLY", "PASSWORD", "PRIMARY", "PROFILE", "PROJECT", "READ", "REL",
        "REMOVE", "RENAME", "ROLE", "ROLLBACK", "SEQUENCE", "SET", "START", "STRUCT", "TABLE",
        "TO", "TRANSACTION", "TYPE", "UNINSTALL", "UPDATE", "USE", "USER", "WRITE", "YIELD",
        # openCypher / other engines: never a read clause here either.
        "CONSTRAINT", "FOREACH", "INDEX", "USING", "PERIODIC", "SHOW", "TRUNCATE", "GRANT",
        "REVOKE", "DENY", "TERMINATE", "UNIQUE", "MANDATORY", "SCALAR", "REQUIRE", "FOR", "DO",
    }
)  # fmt: skip

TokenKind = Literal["word", "name", "string", "number", "punct"]


@dataclass(frozen=True, slots=True)
class Token:
    """One lexed token: ``word`` (bare identifier or keyword), ``name`` (backquoted),
    ``string``, ``number`` or ``punct``; ``pos`` is its offset in the query."""

    kind: TokenKind
    text: str
    pos: int


# Kuzu's WHITESPACE rule, character for character (comments are handled separately).
_WHITESPACE = frozenset(
    " \t\n\v\f\r\x1c\x1d\x1e\x1f\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u00a0"
)
# Punctuation lcg reads; the two-character ones first so ``..`` is never two ``.``.
_PUNCT2 = ("..", "<>", "<=", ">=", "=~", "->", "<-", "!=", ">>", "<<", ":=")
_PUNCT1 = frozenset("()[]{},:;.+-*/%^=<>|&!$")
# Kuzu's EscapedChar: the characters that may follow a backslash, and how many hex digits.
_SIMPLE_ESCAPES = frozenset("\\'\"bBfFnNrRtT")
_HEX_ESCAPES = {"x": 2, "X": 2, "u": 4, "U": 4}
_HEX = frozenset("0123456789abcdefABCDEF")
#: A value just ended: a name right after one starts a clause.
_VALUE_END_PUNCT = frozenset({")", "]", "}"})
_VALUE_END_WORDS = frozenset({"NULL", "TRUE", "FALSE", "END"})
#: After these, a word is a name whatever it spells.
_NAME_POSITION = frozenset({".", ":", "$"})

_REMEDY = (
    "the graph is rebuilt from the event stream, so write through the knowledge_* methods; "
    "knowledge_query_cypher runs one read-only statement (MATCH, OPTIONAL MATCH, WHERE, WITH, "
    "UNWIND, RETURN, ORDER BY, SKIP, LIMIT, UNION)"
)


def _refuse(why: str) -> ReadOnlyError:
    return ReadOnlyError(f"knowledge_query_cypher is read-only and refused the query: {why}")


def _is_name_start(ch: str) -> bool:
    return ch.isidentifier() or unicodedata.category(ch) == "Pc"


def _is_name_part(ch: str) -> bool:
    return ("a" + ch).isidentifier() or unicodedata.category(ch) in ("Pc", "Sc")


def _string_end(query: str, start: int) -> int:
    """Offset just past the string literal opened at ``start``."""
    quote, i, n = query[start], start + 1, len(query)
    while i < n:
        ch = query[i]
        if ch == quote:
            return i + 1
        if ch == "\\":
            nxt = query[i + 1 : i + 2]
            if nxt and nxt in _SIMPLE_ESCAPES:
                i += 2
                continue
            digits = _HEX_ESCAPES.get(nxt, 0)
            hex_part = query[i + 2 : i + 2 + digits]
            if not digits or len(hex_part) < digits or not set(hex_part) <= _HEX:
                raise _refuse(f"a string at offset {start} has an escape Kuzu does not read")
            i += 2 + digits
            continue
        i += 1
    raise _refuse(f"the string opened at offset {start} is not closed")


def _block_comment_end(query: str, start: int) -> int:
    """Offset just past the ``/* */`` comment opened at ``start``, read as Kuzu reads it."""
    i, n = start + 2, len(query)
    while i < n:
        if query.startswith("*/", i):
            end = i + 2
            break
        # Kuzu's rule: '*' followed by any character but '/' is consumed as a pair.
        i += 2 if query[i] == "*" else 1
    else:
        raise _refuse(f"the comment opened at offset {start} is not closed")
    first = query.find("*/", start + 2)
    if first != end - 2:
        # Another reader would close the comment at the earlier "*/" (Kuzu does not):
        # refuse rather than bet on which text is code.
        raise _refuse(
            f"the comment opened at offset {start} contains '*/' before its end "
            f"(at offset {first}); Kuzu does not close a comment at '**/'"
        )
    return end


def _name_end(query: str, start: int) -> int:
    """Offset just past the backquoted name at ``start`` (``` `` ``` continues it)."""
    i = start
    while i < len(query) and query[i] == "`":
        close = query.find("`", i + 1)
        if close < 0:
            raise _refuse(f"the backquoted name opened at offset {i} is not closed")
        i = close + 1
    return i


def _number_end(query: str, start: int) -> int:
    i, n = start, len(query)
    while i < n and query[i].isascii() and query[i].isdigit():
        i += 1
    if i + 1 < n and query[i] == "." and query[i + 1].isascii() and query[i + 1].isdigit():
        i += 1
        while i < n and query[i].isascii() and query[i].isdigit():
            i += 1
    if i < n and query[i] in "eE":
        j = i + 1
        if j < n and query[j] == "-":
            j += 1
        if j < n and query[j].isascii() and query[j].isdigit():
            i = j
            while i < n and query[i].isascii() and query[i].isdigit():
                i += 1
    return i


def tokenize(query: str) -> list[Token]:
    """The tokens of ``query`` (comments and whitespace dropped); refuses what Kuzu would
    read differently (``ReadOnlyError``)."""
    tokens: list[Token] = []
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch in _WHITESPACE:
            i += 1
        elif query.startswith("//", i):
            while i < n and query[i] not in "\r\n":
                i += 1
        elif query.startswith("/*", i):
            i = _block_comment_end(query, i)
        elif ch in "'\"":
            end = _string_end(query, i)
            tokens.append(Token("string", query[i:end], i))
            i = end
        elif ch == "`":
            end = _name_end(query, i)
            tokens.append(Token("name", query[i:end], i))
            i = end
        elif (
            ch.isascii()
            and ch.isdigit()
            or (ch == "." and i + 1 < n and query[i + 1].isascii() and query[i + 1].isdigit())
        ):
            end = _number_end(query, i)
            tokens.append(Token("number", query[i:end], i))
            i = end
        elif _is_name_start(ch):
            end = i + 1
            while end < n and _is_name_part(query[end]):
                end += 1
            tokens.append(Token("word", query[i:end], i))
            i = end
        else:
            two = query[i : i + 2]
            if two in _PUNCT2:
                tokens.append(Token("punct", two, i))
                i += 2
            elif ch in _PUNCT1:
                tokens.append(Token("punct", ch, i))
                i += 1
            else:
                raise _refuse(f"unexpected character {ch!r} at offset {i}")
    return tokens


def _ends_value(tok: Token, as_name: bool) -> bool:
    if tok.kind in ("name", "string", "number"):
        return True
    if tok.kind == "word":
        return as_name or tok.text.upper() in _VALUE_END_WORDS
    return tok.text in _VALUE_END_PUNCT


_SIMPLIFY = "split it into smaller queries or simplify it"


_OPERATOR_PUNCT = frozenset(
    {"+", "-", "*", "/", "%", "^", "=", "<>", "!=", "<", "<=", ">", ">=", "=~", "|", "&",
     "<<", ">>", "->", "<-"}
)  # fmt: skip
_OPERATOR_WORDS = frozenset({"AND", "OR", "XOR", "NOT", "IN", "IS", "STARTS", "ENDS", "CONTAINS"})


def _check_shape(tokens: list[Token]) -> None:
    """Refuse more tokens, operators or deeper brackets than Kuzu's parser survives."""
    if len(tokens) > MAX_TOKENS:
        raise _refuse(f"it has {len(tokens):,} tokens, over {MAX_TOKENS:,}; {_SIMPLIFY}")
    operators = sum(
        1
        for t in tokens
        if (t.kind == "punct" and t.text in _OPERATOR_PUNCT)
        or (t.kind == "word" and t.text.upper() in _OPERATOR_WORDS)
    )
    if operators > MAX_OPERATORS:
        raise _refuse(f"it has {operators:,} operators, over {MAX_OPERATORS:,}; {_SIMPLIFY}")
    depth = 0
    for tok in tokens:
        if tok.kind != "punct":
            continue
        if tok.text in ("(", "[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                raise _refuse(
                    f"brackets nest deeper than {MAX_DEPTH} (offset {tok.pos}); {_SIMPLIFY}"
                )
        elif tok.text in (")", "]", "}"):
            depth -= 1


def check_read_only(query: str) -> None:
    """Raise ``ReadOnlyError`` unless ``query`` is a single read-only statement small
    enough for Kuzu's parser (``MAX_QUERY_CHARS``, ``MAX_TOKENS``, ``MAX_OPERATORS``,
    ``MAX_DEPTH``)."""
    if len(query) > MAX_QUERY_CHARS:
        raise _refuse(
            f"it is {len(query):,} characters long, over {MAX_QUERY_CHARS:,}; {_SIMPLIFY}"
        )
    tokens = tokenize(query)
    _check_shape(tokens)
    if not tokens:
        raise _refuse(f"it holds no statement; {_REMEDY}")
    for k, tok in enumerate(tokens):
        if tok.kind == "punct" and tok.text == ";" and k != len(tokens) - 1:
            raise _refuse(
                f"';' at offset {tok.pos} separates statements; send them one at a time "
                "(a single trailing ';' is fine)"
            )
    first = tokens[0]
    if first.kind != "word" or first.text.upper() not in READ_CLAUSES:
        raise _refuse(f"it starts with {first.text!r}, not a read clause; {_REMEDY}")
    prev: Token | None = None
    prev_is_name = False
    for tok in tokens:
        is_name = tok.kind == "name"
        if tok.kind == "word":
            upper = tok.text.upper()
            if prev is not None and prev.kind == "punct" and prev.text in _NAME_POSITION:
                is_name = True
            elif upper in READ_KEYWORDS:
                is_name = False
            elif upper in KUZU_KEYWORDS:
                raise _refuse(
                    f"{upper} (offset {tok.pos}) is not a read clause; {_REMEDY}. A property "
                    f"or label called {tok.text!r} is read as e.{tok.text} or `{tok.text}`"
                )
            else:
                is_name = True
        if is_name and prev is not None and _ends_value(prev, prev_is_name):
            raise _refuse(
                f"{tok.text!r} (offset {tok.pos}) follows a complete value, which only a "
                f"clause can; it is not one of the read clauses. {_REMEDY}"
            )
        prev, prev_is_name = tok, is_name
