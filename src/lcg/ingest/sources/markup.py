"""An HTML page's text in one forward pass: headings as Markdown ``#`` lines, blocks as
paragraphs, scripts and styles dropped (ADR 0192).

The standard library's ``html.parser`` rescans an unfinished tag from its start each time it
looks further, so a page of ``<a<a<a…`` takes time quadratic in its size (a 1.9 MB file never
finished). This scanner moves only forward: each search starts where the last one stopped
(``str.find`` and anchored regular expressions), the ``>`` that ends a tag is looked for once
and remembered, and a quote with no closing quote is remembered as such, so every character
is looked at a bounded number of times. It follows the HTML tokenizer where it matters for
text: ``<`` before a letter opens a tag (``</`` an end tag), anything else is text;
comments, ``<!…>`` and ``<?…>`` are dropped; ``script`` and ``style`` hold raw text up to
their end tag; a quoted attribute value may hold ``>``; a tag the file never closes is
dropped with the rest of the file, as a browser drops it.
"""

from __future__ import annotations

import html
import re

__all__ = ["html_text"]

_BLOCKS = frozenset(
    "p div section article main header footer aside nav li ul ol table tr blockquote pre "
    "dl dt dd figure figcaption form fieldset details summary address br hr".split()
)
_SKIP = frozenset({"script", "style", "noscript", "template", "head", "svg"})
#: Elements whose content is raw text up to their end tag (never tags).
_RAW = frozenset({"script", "style"})

_TAG_NAME = re.compile(r"[a-zA-Z][^\t\n\r\f />\x00]*")
_QUOTE_OPEN = re.compile(r"=[\t\n\f\r ]*([\"'])")


class _Text:
    """Collects text: headings as ``#`` lines, blocks as paragraph breaks."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.skipping = 0

    def start(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")

    def end(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif (len(tag) == 2 and tag[0] == "h" and tag[1] in "123456") or tag in _BLOCKS:
            self.parts.append("\n\n")

    def data(self, raw: str) -> None:
        if self.skipping or not raw:
            return
        data = html.unescape(raw)
        # Inside a block, HTML's whitespace is one space; a heading stays on its line.
        core = " ".join(data.split())
        lead = " " if data[:1].isspace() else ""
        trail = " " if data[-1:].isspace() and core else ""
        self.parts.append(lead + core + trail)


class _Scanner:
    """Finds tag ends moving forward only (each search resumes where the last stopped)."""

    def __init__(self, markup: str) -> None:
        self.markup = markup
        self._gt = -2  # the next ">" at or after where it was last looked for (-1: none)
        self._gt_from = 0
        self._no_quote: dict[str, int] = {}  # quote character → from where none follows

    def next_gt(self, at: int) -> int:
        """The first ``>`` at or after ``at`` (-1: none)."""
        if self._gt == -1 and at >= self._gt_from:
            return -1
        if self._gt < at:
            self._gt = self.markup.find(">", at)
            self._gt_from = at
        return self._gt

    def _closing_quote(self, quote: str, at: int) -> int:
        if at >= self._no_quote.get(quote, len(self.markup) + 1):
            return -1
        found = self.markup.find(quote, at)
        if found == -1:
            self._no_quote[quote] = at
        return found

    def tag_end(self, at: int) -> int:
        """The index after the ``>`` that ends the tag whose attributes start at ``at`` (-1)."""
        while True:
            gt = self.next_gt(at)
            if gt == -1:
                return -1
            m = _QUOTE_OPEN.search(self.markup, at, gt)
            if m is None:
                return gt + 1
            close = self._closing_quote(m.group(1), m.end())
            if close == -1:
                return gt + 1  # an unclosed quote: the first ">" ends the tag
            at = close + 1


def html_text(markup: str) -> str:
    """The text of an HTML page, with headings as Markdown ``#`` lines."""
    out = _Text()
    scan = _Scanner(markup)
    n = len(markup)
    i = 0
    while i < n:
        lt = markup.find("<", i)
        if lt == -1:
            out.data(markup[i:])
            break
        out.data(markup[i:lt])
        if markup.startswith("<!--", lt):
            end = markup.find("-->", lt + 4)
            i = n if end == -1 else end + 3
            continue
        if markup.startswith(("<!", "<?"), lt):
            gt = scan.next_gt(lt + 2)
            i = n if gt == -1 else gt + 1
            continue
        closing = markup.startswith("</", lt)
        name = _TAG_NAME.match(markup, lt + 2 if closing else lt + 1)
        if name is None:
            if closing:  # "</>" or "</ x>": dropped up to its ">"
                gt = scan.next_gt(lt + 2)
                i = n if gt == -1 else gt + 1
            else:
                out.data("<")
                i = lt + 1
            continue
        tag = name.group(0).lower()
        end = scan.tag_end(name.end())
        if end == -1:
            break  # a tag never closed: dropped with the rest, as a browser does
        i = end
        if closing:
            out.end(tag)
            continue
        out.start(tag)
        if markup[end - 2] == "/":
            out.end(tag)
        elif tag in _RAW:
            close = re.compile(f"</{re.escape(tag)}", re.IGNORECASE).search(markup, i)
            i = n if close is None else close.start()
    paragraphs = [" ".join(p.split()) for p in "".join(out.parts).split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p.strip("# "))
