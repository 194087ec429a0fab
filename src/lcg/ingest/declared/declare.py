"""One file's declarations, from its text alone (issue 29, ADR 0204).

A Markdown file (``MARKDOWN_SUFFIXES``) is read for its front matter (``frontmatter``),
title, links and tags in its prose (``prose``, ``links``); a Python file for its imports
(``imports``); any other file is a document named by its file name and declares nothing.
Nothing here raises on what a file holds: a malformed front matter is none, a Python file
that does not parse imports nothing.
"""

from __future__ import annotations

import posixpath
import re
from typing import TypeVar

from lcg.ingest.declared.frontmatter import read_front_matter
from lcg.ingest.declared.imports import PYTHON_SUFFIXES, python_imports
from lcg.ingest.declared.links import (
    markdown_targets,
    normal_tag,
    tags_in,
    tree_path,
    wiki_targets,
)
from lcg.ingest.declared.model import FileDeclarations, LinkRef
from lcg.ingest.declared.prose import front_matter_end, mask

__all__ = ["MARKDOWN_SUFFIXES", "declare_file", "is_markdown", "key_target", "title_of"]

#: The suffixes read as Markdown (the ``markdown`` kind of the source readers).
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")

_ATX_1 = re.compile(r"^ {0,3}#[ \t]+([^\n]*)$", re.MULTILINE)
_SETEXT_1 = re.compile(r"^ {0,3}=+[ \t]*$", re.MULTILINE)
_KEY_WIKI = re.compile(r"!?\[\[([^\[\]\n]+)\]\]")
_T = TypeVar("_T")
_KEY_MARKDOWN = re.compile(r"\[[^\[\]\n]*\]\(\s*<?([^<>()\s]+)>?\s*\)")


def is_markdown(path: str) -> bool:
    """Whether the file ``path`` is read as Markdown."""
    return path.lower().endswith(MARKDOWN_SUFFIXES)


def _stem(path: str) -> str:
    name = posixpath.basename(path)
    stem, _ = posixpath.splitext(name)
    return stem or name


def declare_file(path: str, text: str) -> FileDeclarations:
    """What the file at tree-relative ``path`` declares, read from ``text`` alone."""
    lower = path.lower()
    if lower.endswith(PYTHON_SUFFIXES):
        return FileDeclarations(path=path, title=_stem(path), imports=python_imports(path, text))
    if not is_markdown(path):
        return FileDeclarations(path=path, title=_stem(path))
    end = front_matter_end(text)
    fm = None
    if end:
        closing = text.rfind("\n", 0, end - 1 if text[end - 1] == "\n" else end) + 1
        fm = read_front_matter(text[text.index("\n") + 1 : closing])
    prose, _ = mask(text)
    links = [LinkRef(kind="markdown", target=t) for t in markdown_targets(prose, path)]
    links.extend(LinkRef(kind="wiki", target=t) for t in wiki_targets(prose))
    tags = [t for t in (normal_tag(w) for w in (fm.tags if fm else [])) if t is not None]
    tags.extend(tags_in(prose))
    title = (fm.title if fm else None) or title_of(prose, text) or _stem(path)
    return FileDeclarations(
        path=path,
        title=title,
        doc_id=fm.doc_id if fm else None,
        aliases=fm.aliases if fm else [],
        fields=fm.fields if fm else {},
        links=_unique(links),
        parents=_unique(_keys(fm.parents if fm else [], path)),
        supersedes=_unique(_keys(fm.supersedes if fm else [], path)),
        tags=_unique(tags),
    )


def title_of(prose: str, text: str) -> str | None:
    """The first top-level heading of a Markdown file (``# Title``, or a line underlined
    ``===``), found in its ``prose`` mask and read from its ``text``; ``None`` when none."""
    atx = _ATX_1.search(prose)
    found: tuple[int, str] | None = None
    if atx:
        title = text[atx.start(1) : atx.end(1)].strip(" \t")
        body = title.rstrip("#")
        if body != title and (not body or body[-1] in " \t"):
            title = body.rstrip(" \t")
        if title:
            found = (atx.start(), title)
    for setext in _SETEXT_1.finditer(prose, 0, found[0] if found else len(prose)):
        line_end = setext.start() - 1
        if line_end <= 0:
            continue
        line_start = prose.rfind("\n", 0, line_end) + 1
        if prose[line_start:line_end].strip():
            found = (line_start, text[line_start:line_end].strip())
            break
    if found is None:
        return None
    return " ".join(found[1].split()) or None


def key_target(value: str, source: str) -> str | None:
    """A ``parent``/``part_of``/``supersedes`` value as a link target: ``[[Note|x]]`` gives
    ``Note``, ``[x](path)`` the path made tree-relative, anything else itself (a path, an id
    or a title, told apart when the tree is resolved)."""
    value = value.strip()
    wiki = _KEY_WIKI.fullmatch(value)
    if wiki:
        target = wiki.group(1).split("|", 1)[0].split("#", 1)[0].strip()
        return target or None
    md = _KEY_MARKDOWN.fullmatch(value)
    if md:
        return tree_path(md.group(1), source)
    return value or None


def _keys(values: list[str], source: str) -> list[LinkRef]:
    out: list[LinkRef] = []
    for value in values:
        target = key_target(value, source)
        if target is not None:
            out.append(LinkRef(kind="key", target=target))
    return out


def _unique(items: list[_T]) -> list[_T]:
    seen: dict[_T, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)
