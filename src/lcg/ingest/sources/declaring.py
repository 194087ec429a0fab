"""The declared pass of a sync (issue 29, ADR 0203): the tree's declared structure, from the
declarations its scan read with each file, and what the sync reports of it.

``tree_structure`` resolves the scanned files' declarations against the whole tree
(``resolve_tree``) and notes each move the sync saw: a file removed and a file added with
the same chunks (the same text) in one sync is the same document under a new path, so the
service keeps its entity. It runs only for a scan of the whole tree: a part of a tree cannot
say what the rest declares.
"""

from __future__ import annotations

import msgspec

from lcg.ingest.declared import DeclaredStructure, DeclareResult, resolve_tree
from lcg.ingest.sources.tree import Scan, StoredChunk, TreeScope

__all__ = ["DeclaredCounts", "declared_counts", "tree_structure"]


class DeclaredCounts(msgspec.Struct, kw_only=True):
    """What the tree declares (documents, links, tags, imports, mentions, unresolved links)
    and what recording it changed."""

    documents: int = 0
    links: int = 0
    tags: int = 0
    imports: int = 0
    mentions: int = 0
    unresolved: int = 0
    #: Whether the group's declared structure changed (one ``StructureDeclared`` appended).
    changed: bool = False


def _relative(scope: TreeScope, source_file: str) -> str | None:
    """The tree-relative path of a served source file (a single file's is its name)."""
    if scope.prefix.endswith(":"):
        return None
    return source_file[len(scope.prefix) :] if source_file.startswith(scope.prefix) else None


def tree_structure(scan: Scan, stored: list[StoredChunk], removed: list[str]) -> DeclaredStructure:
    """The declared structure of the scanned tree; ``stored`` is what the group held before
    this sync, ``removed`` the source files the sync removes (for moves)."""
    files = [f.declarations for f in scan.files if f.declarations is not None]
    chunks = [
        (c.chunk_id, f.declarations.path, c.text)
        for f in scan.files
        if f.declarations is not None
        for c in f.chunks
    ]
    structure = resolve_tree(files, chunks)
    held: dict[str, set[str]] = {}
    for s in stored:
        held.setdefault(s.source_file, set()).add(s.content_hash)
    # A removed file's text, by its chunks' hashes → its tree-relative path.
    gone: dict[frozenset[str], str] = {}
    present = {f.source_file for f in scan.files}
    for source_file in sorted(set(removed) - present):
        rel = _relative(scan.scope, source_file)
        hashes = held.get(source_file)
        if rel is not None and hashes:
            gone.setdefault(frozenset(hashes), rel)
    if gone:
        new = {
            f.declarations.path: frozenset(c.content_hash for c in f.chunks)
            for f in scan.files
            if f.declarations is not None and f.source_file not in held
        }
        documents = []
        for d in structure.documents:
            was = gone.pop(new[d.path], None) if d.path in new else None
            documents.append(msgspec.structs.replace(d, moved_from=was) if was else d)
        structure.documents = documents
    return structure


def declared_counts(structure: DeclaredStructure, answer: DeclareResult) -> DeclaredCounts:
    """What ``structure`` declares, and whether recording it (``answer``) changed anything."""
    kinds = [e.relation_type for e in structure.edges]
    return DeclaredCounts(
        documents=len(structure.documents),
        links=sum(1 for k in kinds if k not in ("TAGGED", "IMPORTS")),
        tags=len(structure.tags),
        imports=kinds.count("IMPORTS"),
        mentions=len(structure.mentions),
        unresolved=len(structure.unresolved),
        changed=answer.appended,
    )
