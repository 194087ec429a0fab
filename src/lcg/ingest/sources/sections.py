"""How each format's text divides into sections before it is packed into chunks.

A *sectioner* takes a document's text and returns its sections in document order: each a
heading path (titles, outermost first; empty when none) and its pieces (paragraphs, blocks,
elements, lines), which ``chunking`` packs into chunks of a bounded size. Headed text is cut
at its headings and then at paragraphs, code at its top-level blocks (a line at column 0
after a blank line), plain text at paragraphs, JSON at its top-level elements, JSON Lines at
its lines. The table of formats (``formats.FORMATS``) names each format's sectioner; a new
format may use one of these or bring its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

__all__ = [
    "MAX_TITLE",
    "Section",
    "Sectioner",
    "code_sections",
    "json_sections",
    "jsonl_sections",
    "markdown_sections",
    "org_sections",
    "paragraphs",
    "rst_sections",
    "text_sections",
]

#: The longest title a heading path holds; a longer one is cut there (``…``) and its whole
#: text is the first paragraph of its section, so nothing of it is lost (ADR 0192).
MAX_TITLE = 120

#: A section: its heading path (titles, outermost first) and its pieces (paragraphs, blocks).
Section = tuple[list[str], list[str]]
#: A format's sectioning: its text → its sections, in document order.
Sectioner = Callable[[str], list[Section]]


def paragraphs(lines: list[str]) -> list[str]:
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


def text_sections(text: str) -> list[Section]:
    """Plain text: one section of its paragraphs."""
    return [([], paragraphs(text.split("\n")))]


class _Sectioner:
    """Collects sections from headings and lines in document order."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.stack: list[tuple[int, str]] = []
        self.lines: list[str] = []

    def flush(self) -> None:
        pieces = paragraphs(self.lines)
        if pieces:
            self.sections.append(([t for _, t in self.stack], pieces))
        self.lines = []

    def heading(self, level: int, title: str) -> None:
        self.flush()
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        title = " ".join(title.split()) or "(untitled)"
        if len(title) > MAX_TITLE:
            self.lines.extend([title, ""])
            title = title[: MAX_TITLE - 1] + "…"
        self.stack.append((level, title))

    def block(self, text: str) -> None:
        """A piece that must stay whole (a fenced code block): its own paragraph."""
        pieces = paragraphs(self.lines)
        self.lines = []
        path = [t for _, t in self.stack]
        if self.sections and self.sections[-1][0] == path:
            self.sections[-1][1].extend([*pieces, text])
        else:
            self.sections.append((path, [*pieces, text]))


# ---- Markdown -----------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


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


def markdown_sections(text: str) -> list[Section]:
    """Markdown: front matter, then sections at ATX and setext headings; fences kept whole."""
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


def rst_sections(text: str) -> list[Section]:
    """reStructuredText: sections at underlined (or over- and underlined) titles."""
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


def org_sections(text: str) -> list[Section]:
    """Org: sections at ``*`` headlines."""
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


def code_sections(text: str) -> list[Section]:
    """Code: one section of its top-level blocks (a new one starts at a column-0 line that
    follows a blank line)."""
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
    return [([], blocks)]


_compact = msgspec.json.Encoder()


def json_sections(text: str) -> list[Section]:
    """A JSON document: one section of its top-level elements (array items, object members),
    one line each."""
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        # Not JSON, or nested deeper than the decoder goes: its lines are still its text.
        return text_sections(text)
    if isinstance(value, list):
        return [([], [_compact.encode(v).decode() for v in value])]
    if isinstance(value, dict):
        return [([], [_compact.encode({k: v}).decode() for k, v in value.items()])]
    return [([], [_compact.encode(value).decode()])]


def jsonl_sections(text: str) -> list[Section]:
    """JSON Lines: one section of its non-blank lines."""
    return [([], [line for line in text.split("\n") if line.strip()])]
