"""Splitting a document along its structure into chunks that fit both readers.

A document is divided by its format's sectioner (``formats``: the entry its ``kind`` names;
``sections``: Markdown at its headings, code at its top-level blocks…). Consecutive
pieces of one section are packed into a chunk up to ``max_chars``; a piece longer than that is
cut at lines, then sentences, then spaces. A chunk of a section under a heading starts with
the heading path as one Markdown line (``# Guide › Install``), counted in its length, so the
text alone says where it stood. ``max_chars`` is chosen in ADR 0161 so a chunk fits the
embedder's 256-token window and stays far under the 8,000-character advisory for extraction.
"""

from __future__ import annotations

import re

import msgspec

from lcg.ingest.sources.formats import format_named
from lcg.ingest.sources.readers import Document
from lcg.ingest.sources.sections import paragraphs

__all__ = ["DEFAULT_MAX_CHARS", "HEADING_SEPARATOR", "Chunk", "chunk_document", "heading_of"]

#: A chunk's longest text, heading line included (ADR 0161).
DEFAULT_MAX_CHARS = 500
#: Between the titles of a heading path.
HEADING_SEPARATOR = " › "
#: The shortest budget a body is given, however long its heading path.
_MIN_BODY = 200
#: The longest heading line a chunk starts with is what ``max_chars`` leaves to it beyond
#: ``_MIN_BODY``, and never less than this.
_MIN_HEADING = 60


class Chunk(msgspec.Struct, frozen=True, kw_only=True):
    """One chunk: its heading path (``""`` when none) and its text (heading line included)."""

    heading: str
    text: str


def chunk_document(doc: Document, max_chars: int = DEFAULT_MAX_CHARS) -> list[Chunk]:
    """``doc`` as chunks, in document order; an empty document has none.

    ``doc.kind`` names its format (``formats.format_named``: a ``ValueError`` for a kind no
    format is), whose sectioner divides it and whose joiner packs its pieces.
    """
    fmt = format_named(doc.kind)
    sections = fmt.sections(doc.text)
    joiner = fmt.joiner
    out: list[Chunk] = []
    longest = max(_MIN_HEADING, max_chars - _MIN_BODY - len("# \n\n"))
    for path, pieces in sections:
        heading = HEADING_SEPARATOR.join(path)
        if len(heading) > longest:
            # A deep path of long titles: one bounded line, never repeated whole per chunk.
            heading = heading[: longest - 1] + "…"
        prefix = f"# {heading}\n\n" if heading else ""
        budget = max(_MIN_BODY, max_chars - len(prefix))
        for body in _pack(pieces, budget, joiner):
            out.append(Chunk(heading=heading, text=prefix + body))
    if not out and doc.text.strip():
        # Text with no body under any heading (an outline of headings only) is still what
        # the file says: kept as plain paragraphs, never a file that silently holds nothing.
        for body in _pack(paragraphs(doc.text.split("\n")), max_chars, "\n\n"):
            out.append(Chunk(heading="", text=body))
    return out


def heading_of(text: str) -> str:
    """The heading path a chunk's text starts with (``""`` when it has none)."""
    first, _, rest = text.partition("\n\n")
    if first.startswith("# ") and "\n" not in first and rest:
        return first[2:]
    return ""


# ---- packing and cutting ------------------------------------------------------------------


def _pack(pieces: list[str], budget: int, joiner: str) -> list[str]:
    """Pieces joined into bodies of at most ``budget`` characters (long pieces cut first)."""
    bodies: list[str] = []
    current = ""
    for piece in (p for raw in pieces for p in _cut(raw.strip("\n"), budget)):
        if not piece.strip():
            continue
        if current and len(current) + len(joiner) + len(piece) > budget:
            bodies.append(current)
            current = ""
        current = f"{current}{joiner}{piece}" if current else piece
    if current:
        bodies.append(current)
    return bodies


_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+")


def _cut(piece: str, budget: int) -> list[str]:
    """``piece`` as parts of at most ``budget`` characters: at lines, sentences, then spaces."""
    if len(piece) <= budget:
        return [piece]
    lines = [line for line in piece.split("\n") if line.strip()]
    if len(lines) > 1:
        return _pack([q for line in lines for q in _cut(line, budget)], budget, "\n")
    sentences = [t for t in _SENTENCE_END.split(piece) if t.strip()]
    if len(sentences) > 1:
        return _pack([q for t in sentences for q in _cut(t, budget)], budget, " ")
    return _hard_cut(piece, budget)


def _hard_cut(text: str, budget: int) -> list[str]:
    # Positions, not ever shorter copies of the rest: linear in the text.
    out: list[str] = []
    start, n = 0, len(text)
    while n - start > budget:
        at = text.rfind(" ", start + budget // 2, start + budget)
        at = start + budget if at <= start else at
        out.append(text[start:at])
        start = at
        while start < n and text[start].isspace():
            start += 1
    if start < n:
        out.append(text[start:])
    return out
