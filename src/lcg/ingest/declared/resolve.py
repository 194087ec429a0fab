"""A whole tree's declarations resolved into documents, tags and typed edges (issue 29,
ADR 0204).

Every file is a ``DeclaredDocument`` named by its title. A reference resolves to a file the
tree holds, in this order (the first step that finds one wins):

1. its path: exact, then with a Markdown suffix added (``Note`` → ``Note.md``), then the
   same ignoring case; a wiki link or front-matter value is tried from the tree's root, then
   from the linking file's folder, then as the end of a longer path (``[[b/Note]]`` finds
   ``a/b/Note.md``);
2. by name, ignoring case (``lcg.events.fold``): a document's ``id``, then its title, then an
   alias, then its file name without suffix. A Markdown link is looked up by name only when
   written as a bare file name (``[x](Note.md)``, as Obsidian writes links to notes in
   other folders).

When one step finds several files, the one nearest the linking file wins: the longest common
folder, then the first by path. A reference to no file of the tree is an ``UnresolvedLink``
(never a document); one to its own file is nothing. An import keeps its first candidate path
the tree holds; an absolute one with none (the standard library, a third-party package) is
nothing, a relative one with none is unresolved (it can only name a file of the tree).
Edges are unique by (relation, source, target), each with a short ``fact`` naming both ends;
mentions come from ``mentions``. The output is sorted: the same files and chunks give the
same structure.
"""

from __future__ import annotations

import posixpath

from lcg.events import fold
from lcg.ingest.declared.declare import MARKDOWN_SUFFIXES, is_markdown
from lcg.ingest.declared.mentions import find_mentions
from lcg.ingest.declared.model import (
    DeclaredDocument,
    DeclaredEdge,
    DeclaredRelation,
    DeclaredStructure,
    FileDeclarations,
    LinkRef,
    UnresolvedLink,
)

__all__ = ["resolve_tree"]

_VERBS: dict[DeclaredRelation, str] = {
    "LINKS_TO": "links to",
    "PART_OF": "is part of",
    "SUPERSEDES": "supersedes",
    "TAGGED": "is tagged",
    "IMPORTS": "imports",
}


def _without_suffix(path: str) -> str | None:
    return path[: path.rfind(".")] if is_markdown(path) else None


def _nearest(paths: list[str], source: str) -> str:
    """The path sharing the most folders with ``source``; the first by path on a tie."""
    if len(paths) == 1:
        return paths[0]
    folders = source.split("/")[:-1]

    def shared(path: str) -> int:
        n = 0
        for a, b in zip(folders, path.split("/")[:-1], strict=False):
            if a != b:
                break
            n += 1
        return n

    return min(sorted(paths), key=lambda p: -shared(p))


class _Index:
    """The tree's files, by every key a reference may use."""

    def __init__(self, files: list[FileDeclarations]) -> None:
        self.paths = {f.path for f in files}
        self.folded: dict[str, list[str]] = {}
        self.endings: dict[str, list[str]] = {}
        self.names: list[dict[str, list[str]]] = [{}, {}, {}, {}]  # id, title, alias, stem
        # A path as written, or with a Markdown suffix added (the first suffix that fits).
        self.exact = {p: p for p in self.paths}
        for suffix in MARKDOWN_SUFFIXES:
            for path in self.paths:
                if path.endswith(suffix):
                    self.exact.setdefault(path[: -len(suffix)], path)
        #: What each (kind, target, folder) resolved to: a reference's answer depends on the
        #: folder it is written in, not on the file (a hub note is linked from many).
        self.memo: dict[tuple[str, str, str], str | None] = {}
        for f in files:
            bare = _without_suffix(f.path)
            for key in (f.path, bare):
                if key is not None:
                    self.folded.setdefault(fold(key), []).append(f.path)
                    parts = fold(key).split("/")
                    for i in range(1, len(parts)):
                        self.endings.setdefault("/".join(parts[i:]), []).append(f.path)
            stem = posixpath.basename(bare or posixpath.splitext(f.path)[0] or f.path)
            keyed = (
                [f.doc_id] if f.doc_id else [],
                [f.title],
                f.aliases,
                [stem, posixpath.basename(f.path)],
            )
            for table, keys in zip(self.names, keyed, strict=True):
                for key in {fold(k.strip()) for k in keys if k.strip()}:
                    table.setdefault(key, []).append(f.path)

    def by_path(self, path: str) -> str | None:
        return self.exact.get(path)

    def by_folded_path(self, path: str, source: str) -> str | None:
        found = self.folded.get(fold(path))
        return _nearest(found, source) if found else None

    def by_name(self, name: str, source: str) -> str | None:
        keys = [fold(name.strip())]
        bare = _without_suffix(name)
        if bare:
            keys.append(fold(bare.strip()))
        for table in self.names:
            for key in keys:
                found = table.get(key)
                if found:
                    return _nearest(found, source)
        return None

    def resolve(self, ref: LinkRef, source: str) -> str | None:
        """The path of the file ``ref`` (written in ``source``) names, or ``None``."""
        key = (ref.kind, ref.target, source[: source.rfind("/") + 1])
        if key in self.memo:
            return self.memo[key]
        found = self._resolve(ref, source)
        self.memo[key] = found
        return found

    def _resolve(self, ref: LinkRef, source: str) -> str | None:
        target = ref.target.strip()
        if not target:
            return None
        if ref.kind == "markdown":
            found = self.by_path(target) or self.by_folded_path(target, source)
            if found is None and posixpath.dirname(target) == posixpath.dirname(source):
                found = self.by_name(posixpath.basename(target), source)
            return found
        tries = [target.lstrip("/")]
        relative = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        if not relative.startswith(("../", "/")) and relative != "..":
            tries.append(relative)
        for path in tries:
            found = self.by_path(path)
            if found:
                return found
        for path in tries:
            found = self.by_folded_path(path, source)
            if found:
                return found
        if "/" in target.strip("/"):
            ending = self.endings.get(fold(target.strip("/")))
            if ending:
                return _nearest(ending, source)
        return self.by_name(target, source)


def resolve_tree(
    files: list[FileDeclarations], chunks: list[tuple[str, str, str]]
) -> DeclaredStructure:
    """The tree's declared structure: a document per file, the tags used, the typed edges
    the files declare between them, the chunks' mentions of declared ids, and what resolved
    to nothing. ``chunks`` are (chunk id, tree-relative path, text), each file's chunks in
    document order (a code block cut across two chunks is known from the first)."""
    unique: dict[str, FileDeclarations] = {}
    for f in sorted(files, key=lambda f: f.path):
        unique.setdefault(f.path, f)
    files = list(unique.values())
    index = _Index(files)
    names = {f.path: f.title for f in files}
    edges: dict[tuple[str, str, str], DeclaredEdge] = {}
    unresolved: set[UnresolvedLink] = set()
    tags: set[str] = set()

    def edge(relation: DeclaredRelation, source: str, target: str) -> None:
        if source == target or (relation, source, target) in edges:
            return
        end = target if relation == "TAGGED" else names[target]
        fact = f"{names[source]} {_VERBS[relation]} {end}"
        edges[(relation, source, target)] = DeclaredEdge(
            relation_type=relation, source=source, target=target, fact=fact
        )

    for f in files:
        groups: list[tuple[DeclaredRelation, list[LinkRef]]] = [
            ("LINKS_TO", f.links),
            ("PART_OF", f.parents),
            ("SUPERSEDES", f.supersedes),
        ]
        for relation, refs in groups:
            for ref in refs:
                target = index.resolve(ref, f.path)
                if target is None:
                    unresolved.add(UnresolvedLink(source=f.path, target=ref.target, kind=ref.kind))
                else:
                    edge(relation, f.path, target)
        for tag in f.tags:
            tags.add(tag)
            edge("TAGGED", f.path, tag)
        for imported in f.imports:
            held = next((c for c in imported.candidates if c in index.paths), None)
            if held is not None:
                edge("IMPORTS", f.path, held)
            elif imported.relative:
                unresolved.add(
                    UnresolvedLink(source=f.path, target=imported.written, kind="import")
                )

    ids: dict[str, list[str]] = {}
    for f in files:
        if f.doc_id:
            ids.setdefault(f.doc_id, []).append(f.path)
    mentions = find_mentions(chunks, ids, _pick)
    return DeclaredStructure(
        documents=[
            DeclaredDocument(
                path=f.path, name=f.title, doc_id=f.doc_id, aliases=f.aliases, fields=f.fields
            )
            for f in files
        ],
        tags=sorted(tags),
        edges=[edges[k] for k in sorted(edges)],
        mentions=mentions,
        unresolved=sorted(unresolved, key=lambda u: (u.source, u.target, u.kind)),
    )


def _pick(paths: list[str], source: str) -> str | None:
    others = [p for p in paths if p != source]
    return _nearest(others, source) if others else None
