"""Splitting a document along its structure into chunks that fit both readers.

Markdown (and HTML, read as Markdown), reStructuredText and Org are cut at their headings and
then at paragraphs; code at its top-level blocks (a line at column 0 after a blank line);
plain text at paragraphs; JSON at its top-level elements and JSONL at its lines. Consecutive
pieces of one section are packed into a chunk up to ``max_chars``; a piece longer than that is
cut at lines, then sentences, then spaces. A chunk of a section under a heading starts with
the heading path as one Markdown line (``# Guide › Install``), counted in its length, so the
text alone says where it stood. ``max_chars`` is chosen in ADR 0161 so a chunk fits the
embedder's 256-token window and stays far under the 8,000-character advisory for extraction.
"""

from __future__ import annotations

import re

import msgspec

from lcg.ingest.sources.readers import Document

__all__ = ["DEFAULT_MAX_CHARS", "HEADING_SEPARATOR", "Chunk", "chunk_document", "heading_of"]

#: A chunk's longest text, heading line included (ADR 0161).
DEFAULT_MAX_CHARS = 500
#: Between the titles of a heading path.
HEADING_SEPARATOR = " › "
#: The shortest budget a body is given, however long its heading path.
_MIN_BODY = 200
#: The longest title a heading path holds; a longer one is cut there (``…``) and its whole
#: text is the first paragraph of its section, so nothing of it is lost (ADR 0192).
_MAX_TITLE = 120
#: The longest heading line a chunk starts with is what ``max_chars`` leaves to it beyond
#: ``_MIN_BODY``, and never less than this.
_MIN_HEADING = 60


class Chunk(msgspec.Struct, frozen=True, kw_only=True):
    """One chunk: its heading path (``""`` when none) and its text (heading line included)."""

    heading: str
    text: str


# A section: its heading path (titles, outermost first) and its pieces (paragraphs, blocks).
_Section = tuple[list[str], list[str]]


def chunk_document(doc: Document, max_chars: int = DEFAULT_MAX_CHARS) -> list[Chunk]:
    """``doc`` as chunks, in document order; an empty document has none."""
    if doc.kind == "markdown":
        sections = _markdown_sections(doc.text)
    elif doc.kind == "rst":
        sections = _rst_sections(doc.text)
    elif doc.kind == "org":
        sections = _org_sections(doc.text)
    elif doc.kind == "code":
        sections = [([], _code_blocks(doc.text))]
    elif doc.kind == "json":
        sections = [([], _json_elements(doc.text))]
    elif doc.kind == "jsonl":
        sections = [([], [line for line in doc.text.split("\n") if line.strip()])]
    else:
        sections = [([], _paragraphs(doc.text.split("\n")))]
    joiner = "\n" if doc.kind in ("jsonl", "json") else "\n\n"
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
        for body in _pack(_paragraphs(doc.text.split("\n")), max_chars, "\n\n"):
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


def _paragraphs(lines: list[str]) -> list[str]:
    """Blank-line separated paragraphs of ``lines``."""
    out: list[str] = []
    current: list[str] = []
    for line in lines:
        if line.strip():
            current.append(line.rstrip())
        elif current:
            out.append("\n".join(current))
            current = []
    if current:
        out.append("\n".join(current))
    return out


# ---- Markdown -----------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


class _Sectioner:
    """Collects sections from headings and lines in document order."""

    def __init__(self) -> None:
        self.sections: list[_Section] = []
        self.stack: list[tuple[int, str]] = []
        self.lines: list[str] = []

    def flush(self) -> None:
        pieces = _paragraphs(self.lines)
        if pieces:
            self.sections.append(([t for _, t in self.stack], pieces))
        self.lines = []

    def heading(self, level: int, title: str) -> None:
        self.flush()
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        title = " ".join(title.split()) or "(untitled)"
        if len(title) > _MAX_TITLE:
            self.lines.extend([title, ""])
            title = title[: _MAX_TITLE - 1] + "…"
        self.stack.append((level, title))

    def block(self, text: str) -> None:
        """A piece that must stay whole (a fenced code block): its own paragraph."""
        pieces = _paragraphs(self.lines)
        self.lines = []
        path = [t for _, t in self.stack]
        if self.sections and self.sections[-1][0] == path:
            self.sections[-1][1].extend([*pieces, text])
        else:
            self.sections.append((path, [*pieces, text]))


def _atx(line: str) -> tuple[int, str] | None:
    """An ATX heading's level and title (``## Title ##``), or ``None``.

    Read with string methods: the regular expression it replaces backtracked quadratically
    over a long run of spaces in a heading line.
    """
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or not stripped.startswith("#"):
        return None
    level = len(stripped) - len(stripped.lstrip("#"))
    rest = stripped[level:]
    if level > 6 or rest[:1] not in (" ", "\t"):
        return None
    title = rest.strip(" \t")
    body = title.rstrip("#")
    if body != title and body[-1:] in (" ", "\t"):  # a closing sequence: " ##"
        title = body.rstrip(" \t")
    return level, title


def _markdown_sections(text: str) -> list[_Section]:
    lines = text.split("\n")
    s = _Sectioner()
    i = 0
    if lines and lines[0].strip() == "---":
        # YAML front matter: one piece, before the first heading.
        for j in range(1, len(lines)):
            if lines[j].strip() in ("---", "..."):
                s.block("\n".join(lines[: j + 1]))
                i = j + 1
                break
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            end = i + 1
            while end < len(lines) and not lines[end].lstrip().startswith(fence.group(1)):
                end += 1
            s.block("\n".join(lines[i : end + 1]))
            i = end + 1
            continue
        atx = _atx(line)
        if atx:
            s.heading(*atx)
        elif (
            _SETEXT.match(line)
            and s.lines
            and s.lines[-1].strip()
            and (len(s.lines) == 1 or not s.lines[-2].strip())
        ):
            title = s.lines.pop()
            s.heading(1 if line.strip()[0] == "=" else 2, title)
        else:
            s.lines.append(line)
        i += 1
    s.flush()
    return s.sections


# ---- reStructuredText and Org -------------------------------------------------------------

_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`*+#:._])\1{2,}\s*$")


def _rst_sections(text: str) -> list[_Section]:
    lines = text.split("\n")
    s = _Sectioner()
    styles: list[tuple[str, bool]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        over = bool(_RST_ADORNMENT.match(line))
        title_at = i + 1 if over else i
        if title_at + 1 < len(lines):
            title, under = lines[title_at], lines[title_at + 1]
            m = _RST_ADORNMENT.match(under)
            if title.strip() and m and len(under.rstrip()) >= len(title.strip()):
                if not over or line.strip()[0] == under.strip()[0]:
                    style = (m.group(1), over)
                    if style not in styles:
                        styles.append(style)
                    s.heading(styles.index(style) + 1, title.strip())
                    i = title_at + 2
                    continue
        s.lines.append(line)
        i += 1
    s.flush()
    return s.sections


_ORG_HEADING = re.compile(r"^(\*+)\s+(.*)$")


def _org_sections(text: str) -> list[_Section]:
    s = _Sectioner()
    for line in text.split("\n"):
        m = _ORG_HEADING.match(line)
        if m:
            s.heading(len(m.group(1)), m.group(2))
        else:
            s.lines.append(line)
    s.flush()
    return s.sections


# ---- code and JSON ------------------------------------------------------------------------

_CLOSER = re.compile(r"^(\}|\)|\]|end\b|fi\b|done\b|esac\b)")


def _code_blocks(text: str) -> list[str]:
    """Top-level blocks: a new one starts at a column-0 line that follows a blank line."""
    blocks: list[str] = []
    current: list[str] = []
    blank_before = True
    for line in text.split("\n"):
        starts = bool(line) and not line[0].isspace() and not _CLOSER.match(line)
        if starts and blank_before and any(c.strip() for c in current):
            blocks.append("\n".join(current).strip("\n"))
            current = []
        current.append(line.rstrip())
        blank_before = not line.strip()
    if any(c.strip() for c in current):
        blocks.append("\n".join(current).strip("\n"))
    return blocks


_compact = msgspec.json.Encoder()


def _json_elements(text: str) -> list[str]:
    """A JSON document's top-level elements (array items, object members), one line each."""
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        # Not JSON, or nested deeper than the decoder goes: its lines are still its text.
        return _paragraphs(text.split("\n"))
    if isinstance(value, list):
        return [_compact.encode(v).decode() for v in value]
    if isinstance(value, dict):
        return [_compact.encode({k: v}).decode() for k, v in value.items()]
    return [_compact.encode(value).decode()]
