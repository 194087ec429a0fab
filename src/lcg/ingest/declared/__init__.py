"""Declared structure: the graph a tree's files state themselves (issue 29, ADR 0203).

Links, wiki links, front matter (``title``, ``id``, ``aliases``, ``tags``, ``parent``,
``supersedes``), inline ``#tags``, id mentions and imports are read with no model, then
resolved against the tree into documents, tags and typed edges (``model``).
"""

from __future__ import annotations

from lcg.ingest.declared.declare import declare_file
from lcg.ingest.declared.model import (
    DECLARED_RELATIONS,
    DeclaredDocument,
    DeclaredEdge,
    DeclaredMention,
    DeclaredRelation,
    DeclaredStructure,
    FileDeclarations,
    ImportRef,
    LinkRef,
    UnresolvedLink,
)
from lcg.ingest.declared.resolve import resolve_tree
from lcg.ingest.declared.store import (
    DECLARED_ORIGIN,
    DeclareResult,
    declare_structure,
    declared_mentions,
    is_declared,
)

__all__ = [
    "DECLARED_ORIGIN",
    "DECLARED_RELATIONS",
    "DeclareResult",
    "DeclaredDocument",
    "DeclaredEdge",
    "DeclaredMention",
    "DeclaredRelation",
    "DeclaredStructure",
    "FileDeclarations",
    "ImportRef",
    "LinkRef",
    "UnresolvedLink",
    "declare_file",
    "declare_structure",
    "declared_mentions",
    "is_declared",
    "resolve_tree",
]
