"""Markdown prose: a text with everything that is not prose blanked out (issue 29, ADR 0204).

Links, tags and id mentions are read from prose only. ``mask`` returns a text of the same
length in which YAML front matter, fenced code (``````` and ``~~~`` of any length, at any
indentation), indented code blocks, inline code (backtick runs of any length, CommonMark's
rule: a run closes at the next run of the same length in its paragraph) and HTML comments
are replaced by spaces, newlines kept, so positions in the mask are positions in the text.

Every construct is found in one forward pass: each search starts where the last one stopped,
and a backtick run looks for its closer only when a run of its length is known to follow in
its paragraph (the last position of each run length is noted once per paragraph), so the
work is linear in the text whatever it holds (100,000 backticks, a 10 MB line).

A file is masked whole; a chunk is masked with the ``Carry`` the previous chunk of its file
ended in (a fence, comment or front matter the chunker cut across two chunks), given in
document order.
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["PROSE", "START", "Carry", "front_matter_end", "mask"]

_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})([^\n]*)")
_BLANK = re.compile(r"[ \t]*")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*(?:\n|\Z)")
_BACKTICKS = re.compile(r"`+")
# Patterns that look for a line start with ``\n`` first, never ``^`` under MULTILINE: the
# engine skips to a literal first character in C, but tries a ``^`` at every position.
#: A line that may open a block: a fence (at any indentation), or an indented line; the
#: same after a newline.
_BLOCK_LINE = re.compile(r"[ \t]*(?:`{3,}|~{3,})[^\n]*|(?:    |\t)[^\n]*")
_NEXT_BLOCK_LINE = re.compile(r"\n((?:[ \t]*(?:`{3,}|~{3,})|    |\t)[^\n]*)")
#: The line closing a front matter (``---`` or ``...``), at a line start or after a newline.
_FRONT_MATTER_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*(?:\n|\Z)")
_NEXT_FRONT_MATTER_CLOSE = re.compile(r"\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)")
#: Indented or blank lines, one after another.
_INDENTED_RUN = re.compile(r"(?:(?:    |\t)[^\n]*(?:\n|\Z)|[ \t]*\n)*")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
#: How far a chunk's heading line (``# A › B`` then a blank line) may reach.
_HEADING_PREFIX = re.compile(r"# [^\n]*\n\n")


class Carry(msgspec.Struct, frozen=True, kw_only=True):
    """What a text starts inside of: the start of a file, or what the chunk before it left
    open (a fence, an HTML comment, a front matter the chunker cut across two chunks)."""

    #: ``start`` (of a file: front matter may open), ``prose``, ``fence`` (``fence`` is its
    #: opening run), ``comment`` or ``front_matter``.
    inside: str = "start"
    fence: str = ""


#: The start of a file.
START = Carry()
#: Plain prose (a chunk that is not its file's first, with nothing left open).
PROSE = Carry(inside="prose")


def front_matter_end(text: str) -> int:
    """The offset just past a YAML front matter's closing line, or 0 when the text has none.

    Front matter opens with ``---`` as the first line and closes with a line ``---`` or
    ``...``; without a closing line there is none (the ``---`` is a thematic break).
    """
    if not _opens_front_matter(text):
        return 0
    return _close_front_matter(text, text.find("\n") + 1 if "\n" in text else len(text))


def _opens_front_matter(text: str) -> bool:
    return text.split("\n", 1)[0].rstrip(" \t") == "---" and "\n" in text


def _close_front_matter(text: str, start: int) -> int:
    """The offset past the first line at or after the line start ``start`` that closes a
    front matter, or 0."""
    found = _FRONT_MATTER_CLOSE.match(text, start) or _NEXT_FRONT_MATTER_CLOSE.search(text, start)
    return found.end() if found else 0


def _blank(text: str) -> str:
    """``text`` with every character but newlines made a space."""
    if "\n" not in text:
        return " " * len(text)
    return "\n".join(" " * len(line) for line in text.split("\n"))


def _block_start(text: str, pos: int) -> tuple[int, int] | None:
    """The first line at or after ``pos`` that may open a block, as (start, end)."""
    if pos == 0 or text[pos - 1] == "\n":
        here = _BLOCK_LINE.match(text, pos)
        if here is not None:
            return here.start(), here.end()
    found = _NEXT_BLOCK_LINE.search(text, pos)
    return (found.start(1), found.end(1)) if found else None


def _indented_line(text: str) -> bool:
    """Whether a line of ``text`` starts with four spaces or a tab."""
    return text.startswith(("    ", "\t")) or "\n    " in text or "\n\t" in text


def mask(text: str, carry: Carry = START, *, whole_file: bool = True) -> tuple[str, Carry]:
    """``text`` with everything but prose blanked, and what its end is still inside of.

    ``whole_file``: the text is a whole file, so a front matter never closed is none.
    Otherwise it is a chunk of one, ``carry`` what the chunk before it left open (``START``
    for the first), and the heading line the chunker put first is prose even inside code.
    """
    if carry.inside in ("start", "prose") and _plain(text, carry):
        return text, PROSE  # nothing in it can be code, a comment or front matter
    out: list[str] = []
    pos = 0
    if not whole_file and carry.inside not in ("start", "prose"):
        head = _HEADING_PREFIX.match(text)
        if head:
            out.append(head.group())
            pos = head.end()
    if carry.inside == "start" and _opens_front_matter(text):
        end = front_matter_end(text)
        if end:
            out.append(_blank(text[:end]))
            pos = end
        elif not whole_file:
            # The chunker cut the front matter: it goes on in the next chunk.
            return _blank(text), Carry(inside="front_matter")
    elif carry.inside == "front_matter":
        end = _close_front_matter(text, pos)
        if end == 0:
            return "".join(out) + _blank(text[pos:]), carry
        out.append(_blank(text[pos:end]))
        pos = end
    elif carry.inside == "comment":
        close = text.find("-->", pos)
        if close < 0:
            return "".join(out) + _blank(text[pos:]), carry
        out.append(_blank(text[pos : close + 3]))
        pos = close + 3
    elif carry.inside == "fence":
        close = _fence_close(text, pos, carry.fence)
        if close < 0:
            return "".join(out) + _blank(text[pos:]), carry
        out.append(_blank(text[pos:close]))
        pos = close
    body, end_carry = _blocks(text, pos)
    out.append(body)
    return "".join(out), end_carry


def _plain(text: str, carry: Carry) -> bool:
    """Whether ``text`` holds none of the marks any non-prose construct starts with."""
    return (
        "`" not in text
        and "~~~" not in text
        and "<!--" not in text
        and not (carry.inside == "start" and text.startswith("---"))
        and not _indented_line(text)
    )


def _blocks(text: str, pos: int) -> tuple[str, Carry]:
    """Mask code blocks from ``pos``; the prose between them goes through ``_inline``.

    Only the lines that may start a block are looked at (found by one regular expression):
    a fence, or an indented line.
    """
    out: list[str] = []
    prose_start = pos
    n = len(text)
    while pos < n:
        found = _block_start(text, pos)
        if found is None:
            break
        line_start, line_end = found
        opener = _FENCE_OPEN.fullmatch(text, line_start, line_end)
        if opener:
            if opener.group(1)[0] == "`" and "`" in opener.group(2):
                pos = line_end + 1  # backticks in the info string: no fence (CommonMark)
                continue
            out.append(_inline(text[prose_start:line_start]))
            close = _fence_close(text, min(line_end + 1, n), opener.group(1))
            if close < 0:
                out.append(_blank(text[line_start:]))
                return "".join(out), Carry(inside="fence", fence=opener.group(1))
            out.append(_blank(text[line_start:close]))
            prose_start = pos = close
            continue
        if _starts_indented_code(text, line_start, prose_start):
            # An indented code block: after a blank line, not under a list item or an
            # indented line (there an indent continues the list), up to the next line that
            # is neither blank nor indented.
            out.append(_inline(text[prose_start:line_start]))
            stop = _indented_end(text, line_start)
            out.append(_blank(text[line_start:stop]))
            prose_start = pos = stop
            continue
        pos = line_end + 1
    body, carry = _inline_carry(text[prose_start:])
    out.append(body)
    return "".join(out), carry


def _starts_indented_code(text: str, at: int, stretch: int) -> bool:
    """Whether the indented line at ``at`` opens a code block: it follows a blank line (or
    opens the stretch of prose) and the last non-blank line before is no list item and not
    indented itself."""
    if at <= stretch:
        return True
    prev_end = at - 1  # the newline ending the line before
    prev_start = text.rfind("\n", stretch, prev_end) + 1 if prev_end > stretch else stretch
    if text[prev_start:prev_end].strip(" \t"):
        return False  # no blank line before: a paragraph's lazy continuation
    while prev_start > stretch:
        prev_end = prev_start - 1
        prev_start = max(text.rfind("\n", stretch, prev_end) + 1, stretch)
        line = text[prev_start:prev_end]
        if line.strip(" \t"):
            return not (line[:1] in (" ", "\t") or _LIST_ITEM.match(line))
    return True


def _fence_close(text: str, pos: int, fence: str) -> int:
    """The offset past the line closing ``fence`` at or after the line start ``pos``, or -1."""
    here, after_newline = _closer(fence[0], len(fence))
    closer = here.match(text, pos) or after_newline.search(text, pos)
    if closer is None:
        return -1
    return min(closer.end() + 1, len(text))


def _closer(char: str, length: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A line of at least ``length`` ``char`` and nothing else (around white space): at a
    line start, and after a newline."""
    key = (char, length)
    found = _CLOSERS.get(key)
    if found is None:
        line = rf"[ \t]*{re.escape(char)}{{{length},}}[ \t]*(?=\n|\Z)"
        found = (re.compile(line), re.compile("\n" + line))
        if len(_CLOSERS) < 256:
            _CLOSERS[key] = found
    return found


_CLOSERS: dict[tuple[str, int], tuple[re.Pattern[str], re.Pattern[str]]] = {}


def _indented_end(text: str, pos: int) -> int:
    """Where the indented code block starting at ``pos`` ends (its trailing blanks kept out)."""
    run = _INDENTED_RUN.match(text, pos)
    end = run.end() if run else pos
    body = text[pos:end].rstrip(" \t\n")
    last = pos + len(body)
    newline = text.find("\n", last)
    return len(text) if newline < 0 else newline + 1


def _inline(text: str) -> str:
    return _inline_carry(text)[0]


def _inline_carry(text: str) -> tuple[str, Carry]:
    """Blank inline code and HTML comments in a stretch of prose."""
    out: list[str] = []
    pos = 0
    n = len(text)
    para_end = -1
    last_run: dict[int, int] | None = None
    # The next backtick and the next comment, each found by a plain ``find`` (a regular
    # expression of the two scans every character in Python's engine: 20x slower here).
    tick, comment = text.find("`"), text.find("<!--")
    while pos < n:
        if 0 <= tick < pos:
            tick = text.find("`", pos)
        if 0 <= comment < pos:
            comment = text.find("<!--", pos)
        if tick < 0 and comment < 0:
            break
        if comment >= 0 and (tick < 0 or comment < tick):
            start = comment
            close = text.find("-->", start + 4)
            out.append(text[pos:start])
            if close < 0:
                out.append(_blank(text[start:]))
                return "".join(out), Carry(inside="comment")
            out.append(_blank(text[start : close + 3]))
            pos = close + 3
            continue
        start = tick
        run = _BACKTICKS.match(text, start)
        run_end = run.end() if run is not None else start + 1
        if start >= para_end:
            brk = _PARAGRAPH_BREAK.search(text, start)
            para_end = n if brk is None else brk.start()
            last_run = None
        length = run_end - start
        closer = -1
        following = _BACKTICKS.search(text, run_end, para_end)
        if following is not None and len(following.group()) == length:
            closer = following.end()  # the usual case: the next run closes it
        elif following is not None:
            if last_run is None:
                # Note once per paragraph where each length of run last occurs, so a run
                # with no closer never looks for one.
                last_run = {}
                for other in _BACKTICKS.finditer(text, start, para_end):
                    last_run[len(other.group())] = other.start()
            if last_run.get(length, -1) > start:
                for other in _BACKTICKS.finditer(text, following.end(), para_end):
                    if len(other.group()) == length:
                        closer = other.end()
                        break
        if closer < 0:
            out.append(text[pos:run_end])  # literal backticks
            pos = run_end
            continue
        out.append(text[pos:start])
        out.append(_blank(text[start:closer]))
        pos = closer
    out.append(text[pos:])
    return "".join(out), PROSE
