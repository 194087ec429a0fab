"""What a source tree's files declare, as records (issue 29, ADR 0203).

Two layers. ``FileDeclarations`` is what one file states about itself and the files it points
at, read from its own text alone (``declare_file``): nothing is resolved yet, so it can be
kept beside the file's chunks in a scan cache. ``DeclaredStructure`` is the whole tree's
graph as its files declare it now (``resolve_tree``): documents keyed by their tree-relative
path, tags by name, and typed edges between them. The sync sends the latter; the service
compares it with what the group holds of the source and records the difference as one
``StructureDeclared`` event (nothing when they agree), and answers with a ``DeclareResult``.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
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
]

#: The edge vocabulary of declared structure (ADR 0203); ``name`` equals ``relation_type``.
DeclaredRelation = Literal["LINKS_TO", "PART_OF", "SUPERSEDES", "TAGGED", "IMPORTS"]
DECLARED_RELATIONS: tuple[DeclaredRelation, ...] = (
    "LINKS_TO",
    "PART_OF",
    "SUPERSEDES",
    "TAGGED",
    "IMPORTS",
)

#: A front-matter value kept as an attribute: scalars only (lists of text for aliases).
Scalar = str | int | float | bool


class LinkRef(msgspec.Struct, frozen=True, kw_only=True):
    """One reference a file makes to another, as written.

    ``kind`` says how it was written: ``markdown`` (``[text](target)``, ``target`` already
    made tree-relative from the linking file's folder, without ``#fragment``), ``wiki``
    (``[[Target]]``, ``target`` the part before ``|`` and ``#``), ``key`` (a front-matter
    value of ``parent``/``part_of``/``supersedes``: a title, alias, id, path or ``[[link]]``).
    """

    kind: Literal["markdown", "wiki", "key"]
    target: str


class ImportRef(msgspec.Struct, frozen=True, kw_only=True):
    """One module a source file imports, as the tree paths it may be, most likely first."""

    #: Tree-relative paths (Python: ``a/b.py`` and ``a/b/__init__.py`` for ``import a.b``).
    candidates: list[str]
    #: The module as written (``.helpers``, ``a.b``), named when it resolves to nothing.
    written: str
    #: A relative import (``from .x import y``): it can only name a file of the tree, so one
    #: the tree does not hold is unresolved. An absolute import the tree does not hold is the
    #: standard library's or a third party's: nothing.
    relative: bool = False


class FileDeclarations(msgspec.Struct, frozen=True, kw_only=True):
    """What one file declares, from its text alone (nothing resolved)."""

    #: The file's path relative to the tree root, with ``/`` separators.
    path: str
    #: Front-matter ``title``, else the first top-level heading, else the file name's stem.
    title: str
    #: Front-matter ``id`` (as text), if any.
    doc_id: str | None = None
    aliases: list[str] = []
    #: The other scalar front-matter fields (not ``title``/``id``/``aliases``/``tags``/
    #: ``parent``/``part_of``/``supersedes``), by key.
    fields: dict[str, Scalar] = {}
    links: list[LinkRef] = []
    parents: list[LinkRef] = []
    supersedes: list[LinkRef] = []
    #: Tags as ``#topic`` (front-matter ``tags:`` and inline ``#tags``), without repeats.
    tags: list[str] = []
    #: What this file imports, each as the tree paths it may be; resolved against the tree.
    imports: list[ImportRef] = []


class DeclaredDocument(msgspec.Struct, frozen=True, kw_only=True):
    """A file of the tree as an entity labelled ``Document``."""

    #: Tree-relative path: the document's key within its source.
    path: str
    name: str
    doc_id: str | None = None
    aliases: list[str] = []
    fields: dict[str, Scalar] = {}
    #: The path this file had before, when the sync saw it moved (same content, new path):
    #: the entity keeps its uuid.
    moved_from: str | None = None


class DeclaredEdge(msgspec.Struct, frozen=True, kw_only=True):
    """A typed edge the files declare: between two documents (by path), or from a document
    to a tag (``TAGGED``: ``target`` is the tag's name, ``#topic``)."""

    relation_type: DeclaredRelation
    source: str
    target: str
    #: A short sentence naming both ends.
    fact: str


class DeclaredMention(msgspec.Struct, frozen=True, kw_only=True):
    """A chunk (by chunk id) names a document's front-matter id in its text."""

    chunk_id: str
    target: str


class UnresolvedLink(msgspec.Struct, frozen=True, kw_only=True):
    """A reference to nothing the tree holds: reported, never written as a node."""

    source: str
    target: str
    kind: Literal["markdown", "wiki", "key", "import"]


class DeclaredStructure(msgspec.Struct, kw_only=True):
    """The whole tree's declared graph, as its files state it now."""

    documents: list[DeclaredDocument] = []
    tags: list[str] = []
    edges: list[DeclaredEdge] = []
    mentions: list[DeclaredMention] = []
    unresolved: list[UnresolvedLink] = []


class DeclareResult(msgspec.Struct, kw_only=True):
    """What one declare call changed (all zero, ``appended`` false: the group agreed)."""

    success: bool = True
    appended: bool = False
    entities_upserted: int = 0
    entities_removed: int = 0
    edges_upserted: int = 0
    edges_removed: int = 0
    mentions_added: int = 0
    mentions_removed: int = 0
    #: Mentions whose chunk the group does not hold (not written).
    mentions_unheld: int = 0
