"""Text a terminal can trust: stored and external text shown, never obeyed (ADR 0195).

A name, a passage, a file name or an error message that came from a stream, a folder, a
server or a model may hold bytes a terminal acts on: ``ESC [2J`` clears the screen, an OSC
``ESC ] 52 ; c ; … BEL`` writes the clipboard, ``\\r`` overwrites what was printed, and the
bidirectional overrides (U+202E …) show text in another order than it is. ``safe`` turns each
such character into a visible escape (``\\x1b``, ``\\u202e``) before the CLI prints it.

What is escaped is decided by Unicode category, not by a list of sequences: every control
(``Cc``: C0, DEL, C1), format character (``Cf``: the bidi controls, zero-width spaces, the
byte-order mark, tags), lone surrogate (``Cs``) and line or paragraph separator (``Zl``,
``Zp``). Two format characters stay: ZWNJ and ZWJ (U+200C, U+200D), which scripts such as
Persian and Devanagari and emoji sequences are written with and which move nothing. A tab
becomes a space. ``\\n`` is kept only where the caller prints lines (``lines=True``), with
``\\r\\n`` read as ``\\n``; elsewhere a newline is escaped too, so a value cannot forge a line
of the CLI's own output.

``--json`` output stays exact JSON: its encoder already writes every C0 character as
``\\u00XX``, and ``json_safe`` writes the other characters of those categories (C1, bidi,
separators, …) as ``\\uXXXX`` escapes too. A JSON reader decodes the very same strings; a
terminal shown the JSON sees only ASCII escapes where the controls were.
"""

from __future__ import annotations

import re
import sys
import time
import unicodedata
from typing import Final

__all__ = ["json_safe", "safe", "stamped"]

#: The categories a terminal may act on or that change how text around them reads.
_UNSAFE: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Format characters that are part of writing (joiners), kept as they are.
_JOINERS: Final = frozenset({"\u200c", "\u200d"})


def _unsafe(ch: str) -> bool:
    return not ch.isprintable() and ch not in _JOINERS and unicodedata.category(ch) in _UNSAFE


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def safe(text: object, *, lines: bool = False) -> str:
    """``text`` (``str()`` of it) with every control and format character shown as an escape;
    tabs as spaces; newlines kept only with ``lines``."""
    s = text if isinstance(text, str) else str(text)
    # Fast path (C speed): most names and lines hold nothing to escape.
    if s.isprintable():
        return s
    if lines:
        s = s.replace("\r\n", "\n")
    out: list[str] = []
    for ch in s:
        if ch.isprintable() or ch in _JOINERS:
            out.append(ch)
        elif ch == "\n" and lines:
            out.append(ch)
        elif ch == "\t":
            out.append(" ")
        elif _unsafe(ch):
            out.append(_escape(ch))
        else:
            # Non-printable to Python but inert to a terminal: other spaces (Zs), private
            # use (Co), unassigned (Cn).
            out.append(ch)
    return "".join(out)


#: Runs of DEL and non-ASCII characters: JSON's structure is printable ASCII, so these lie
#: inside strings (JSON encoders escape C0 but leave DEL as it is).
_NON_ASCII: Final = re.compile(r"[^\x00-\x7e]+")


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON spells characters past the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _json_run(match: re.Match[str]) -> str:
    run = match.group(0)
    if run.isprintable():
        return run
    return "".join(_json_escape(ch) if _unsafe(ch) else ch for ch in run)


def json_safe(encoded: str) -> str:
    """Encoded JSON text with the non-ASCII controls and format characters of its strings
    written as ``\\uXXXX`` escapes: the same JSON value, safe to show on a terminal."""
    if encoded.isascii() and "\x7f" not in encoded:
        return encoded
    return _NON_ASCII.sub(_json_run, encoded)


def stamped(line: str, *, err: bool = False) -> None:
    """Print ``line`` made safe (``safe``, lines kept) after the time of day, at once."""
    out = sys.stderr if err else sys.stdout
    print(f"{time.strftime('%H:%M:%S')} {safe(line, lines=True)}", file=out, flush=True)
