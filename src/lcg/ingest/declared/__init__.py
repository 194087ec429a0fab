"""Declared structure: the graph a tree's files state themselves (issue 29, ADR 0203).

Links, wiki links, front matter (``title``, ``id``, ``aliases``, ``tags``, ``parent``,
``supersedes``), inline ``#tags``, id mentions and imports are read with no model, then
resolved against the tree into documents, tags and typed edges (``model``).

Two sides. The pure pass (``declare_file``, ``resolve_tree``, the records of ``model``) is what
a sync's client runs, and is bound when the face is imported: it loads nothing of the engine.
The service side (``store``: ``declare_structure`` and the reads of what a group holds) needs
the workspace, so its names are imported on first use (module ``__getattr__``, ADR 0218).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcg.ingest.declared.declare import declare_file
from lcg.ingest.declared.model import (
    DECLARED_RELATIONS,
    DeclaredDocument,
    DeclaredEdge,
    DeclaredMention,
    DeclaredRelation,
    DeclaredStructure,
    DeclareResult,
    FileDeclarations,
    ImportRef,
    LinkRef,
    UnresolvedLink,
)
from lcg.ingest.declared.resolve import resolve_tree
from lcg.lazy import lazy_face

if TYPE_CHECKING:
    from lcg.ingest.declared.store import (
        DECLARED_ORIGIN,
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

#: The service side's names by the module that holds them (imported on first use).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "lcg.ingest.declared.store": (
        "DECLARED_ORIGIN",
        "declare_structure",
        "declared_mentions",
        "is_declared",
    ),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}


__getattr__, __dir__ = lazy_face(__name__, _HOMES, __all__)
