"""Links and tags in Markdown prose (issue 29, ADR 0204).

Read from a mask (``prose.mask``: code, comments and front matter blanked), so nothing in
code counts. Three link syntaxes: wiki links (``[[Note]]``, ``[[Note|label]]``,
``[[Note#Heading]]``, ``![[embed]]``), inline links (``[text](target)``,
``[text](<target with spaces>)``, with or without a title; images too) and reference
definitions (``[x]: target``; not footnotes ``[^1]:``). A Markdown target with a scheme
(``https:``, ``mailto:``) or only a ``#fragment`` is no link to a file; the rest is
URL-decoded, stripped of its fragment and query, and made tree-relative from the linking
file's folder (``/target`` from the tree's root); one that leaves the tree is dropped.

Every scan moves forward only: inline links are found with a bracket counter and a stack of
at most ``_MAX_PARENS`` open parentheses, so a line of 10 MB of ``[[[[`` or ``](](`` is
read in one pass.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

from lcg.events import fold

__all__ = ["markdown_targets", "normal_tag", "tags_in", "tree_path", "wiki_targets"]

_WIKI = re.compile(r"\[\[([^\[\]\n]+)\]\]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_DEFINITION = re.compile(
    r"^ {0,3}\[((?:[^\[\]\\\n]|\\.){1,999})\]:[ \t]*(?:\n[ \t]*)?(<[^<>\n]*>|\S+)", re.MULTILINE
)
_TAG = re.compile(r"#([\w/-]+)")
_TAG_BODY = re.compile(r"[\w/-]+")
#: ``](`` then a destination (``<any>``, or bare with one level of balanced parentheses),
#: an optional title, ``)``. Each part starts with a character the one before cannot hold,
#: so a failed attempt gives back nothing it must try again: no catastrophic backtracking.
_BARE = r"(?:[^\s()\\]|\\.)"
_INLINE_LINK = re.compile(
    r"\]\(\s*(?:<([^<>\n]*)>|(" + _BARE + r"+(?:\(" + _BARE + r"*\)" + _BARE + r"*)*))"
    r"""(?:\s+(?:"[^"]*"|'[^']*'|\([^()]*\)))?\s*\)"""
)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def wiki_targets(prose: str) -> list[str]:
    """The note each wiki link names: the part before ``|`` and ``#``, trimmed; a link to a
    heading of its own note (``[[#Heading]]``) names none."""
    out: list[str] = []
    for m in _WIKI.finditer(prose):
        target = m.group(1).split("|", 1)[0].split("#", 1)[0].rstrip("\\").strip()
        if target:
            out.append(target)
    return out


def markdown_targets(prose: str, source: str) -> list[str]:
    """Tree-relative paths of the inline links and reference definitions in ``prose``, in
    order, for a file at ``source``: links out of the tree, to URLs and to fragments dropped."""
    # Each scan only where its marks are: a search from ``^`` under MULTILINE is tried at
    # every position of the text, a ``find`` of its mark is not.
    unwiki = _WIKI.sub(lambda m: " " * len(m.group()), prose) if "[[" in prose else prose
    raw = _inline_destinations(unwiki) if "](" in prose else []
    if "]:" in prose:
        raw.extend(m.group(2) for m in _DEFINITION.finditer(prose) if m.group(1)[:1] != "^")
    out: list[str] = []
    for dest in raw:
        path = tree_path(dest, source)
        if path is not None:
            out.append(path)
    return out


def tree_path(dest: str, source: str) -> str | None:
    """A Markdown destination as a tree-relative path from the file ``source``, or ``None``
    for a URL, a fragment alone, or a path that leaves the tree."""
    if dest.startswith("<") and dest.endswith(">"):
        dest = dest[1:-1]
    dest = dest.strip()
    if not dest or _SCHEME.match(dest):
        return None
    dest = dest.split("#", 1)[0].split("?", 1)[0]
    dest = unquote(dest).replace("\\", "/").strip()
    if not dest:
        return None
    if dest.startswith("/"):
        joined = dest.lstrip("/")
    else:
        joined = posixpath.join(posixpath.dirname(source), dest)
    path = posixpath.normpath(joined)
    if path in (".", "") or path == ".." or path.startswith(("../", "/")):
        return None
    return path


def _inline_destinations(text: str) -> list[str]:
    """Destinations of inline links ``[text](dest "title")``: each ``](`` that closes a
    ``[`` of its paragraph opened after the previous link, in one forward pass."""
    out: list[str] = []
    scanned = 0  # text before this was looked at for ``[`` and blank lines
    opened = -1  # the last ``[`` seen since the last link
    for m in _INLINE_LINK.finditer(text):
        at = m.start()
        if at < scanned:
            continue
        bracket = text.rfind("[", scanned, at)
        if bracket >= 0:
            opened = bracket
        brk = _PARAGRAPH_BREAK.search(text, max(scanned, opened if opened >= 0 else scanned), at)
        if brk is not None:
            opened = text.rfind("[", brk.end(), at)
        scanned = m.end()
        if opened >= 0:
            dest = m.group(1) if m.group(1) is not None else m.group(2)
            out.append(dest)
        opened = -1
    return out


def normal_tag(word: str) -> str | None:
    """A tag as its ``Tag`` entity is named: ``#`` and the case-folded body, or ``None`` when
    it is no tag (empty, a character a tag cannot hold, digits only: ``#123``)."""
    if word in _TAGS:
        return _TAGS[word]
    body = word.strip().lstrip("#").strip("/")
    tag: str | None = None
    if body and _TAG_BODY.fullmatch(body) and not all(c.isdigit() or c in "/-" for c in body):
        tag = "#" + fold(body)
    if len(word) <= 100 and len(_TAGS) < 4096:
        _TAGS[word] = tag  # a tree uses the same few tags again and again
    return tag


_TAGS: dict[str, str | None] = {}


def tags_in(prose: str) -> list[str]:
    """Inline ``#tags`` of ``prose``, normalised: after white space or at a line's start only
    (never ``C#``, a URL's ``#fragment`` or ``&#39;``), never a heading's ``#``."""
    out: list[str] = []
    for m in _TAG.finditer(prose):
        at = m.start()
        if at and not prose[at - 1].isspace():
            continue
        tag = normal_tag(m.group(1))
        if tag is not None:
            out.append(tag)
    return out
