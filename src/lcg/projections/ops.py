"""What each event means for the text and vector projections, as a list of ``Op``s.

The graph projection applies events directly. The text (BM25) and vector (hnswlib)
projections only need to know which searchable texts appear, change or disappear, so both
consume the same derived ops, and the projector embeds each batch's new texts in one call.

Kinds and parts:

* ``entity`` – parts ``name`` and ``summary`` (vector fields ``entity.name``, ``entity.summary``);
* ``edge`` – parts ``name`` and ``fact`` (vector field ``edge.fact``);
* ``episode`` – part ``content`` (vector field ``episode.content``), and for a chunk of a
  source file the ``source`` part (not text: the file, which search ranks as a unit too);
  every episode also carries ``time``, its reference time (search filters and weighs by it);
  its extraction adds ``keys``, the entity names and facts found in it (BM25 indexes them with
  the content; they are not embedded).

An ``Upsert`` replaces only the parts it carries. Merged (tombstoned) entities and deleted
episodes are removed. Invalidated edges stay searchable; reads filter them on request.
"""

from __future__ import annotations

import posixpath
from typing import Final, Literal, assert_never

import msgspec

from lcg.events import (
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    EdgeRecord,
    EntitiesMerged,
    EntityAsserted,
    EntityRecord,
    EntityTypesChanged,
    EpisodeAdded,
    EpisodeExtracted,
    EpisodesDeleted,
    Event,
    GroupPurged,
    MergeOutcome,
    PointersRebound,
    RelationshipAsserted,
    RelationTypesChanged,
    SourceRegistered,
    SourceRemoved,
    StructureDeclared,
    attributes_of,
    chunk_file,
)

__all__ = [
    "KEYS_PART",
    "MERGED_LABEL",
    "SOURCE_PART",
    "TIME_PART",
    "TEXT_PARTS",
    "VECTOR_FIELDS",
    "VECTOR_RULES",
    "ClearGroup",
    "Delete",
    "Kind",
    "Op",
    "Upsert",
    "derive_ops",
    "embeds_edge",
    "embeds_entity",
    "source_of",
    "texts_to_embed",
]

Kind = Literal["entity", "edge", "episode"]

#: The label a merge appends to an alias entity (a tombstone).
MERGED_LABEL: Final = "Merged"

#: The parts of each kind that the text projection indexes, in the order they are joined.
TEXT_PARTS: Final[dict[str, tuple[str, ...]]] = {
    "entity": ("name", "summary"),
    "edge": ("name", "fact"),
    "episode": ("content",),
}
#: An episode ``Upsert`` part that is not text: the source file its chunk came from, which
#: the text projection groups passages by (search ranks sources as well as passages).
SOURCE_PART: Final = "source"
#: An episode ``Upsert`` part that is not text: its reference time (RFC 3339), which passage
#: search filters and weighs by.
TIME_PART: Final = "time"
#: An episode ``Upsert`` part from its extraction: the names of the entities it created and
#: the facts of its relationships, which the text projection indexes with the episode.
KEYS_PART: Final = "keys"
#: The (kind, part) pairs that the vector projection embeds.
VECTOR_FIELDS: Final[frozenset[tuple[str, str]]] = frozenset(
    {("entity", "name"), ("entity", "summary"), ("edge", "fact"), ("episode", "content")}
)


#: Names which rows' texts this module embeds (``Upsert.embed``); a vector snapshot made
#: under other rules is rebuilt from the stream (as one of another embedder is).
VECTOR_RULES: Final = "adr-0223"


class Upsert(msgspec.Struct, frozen=True, kw_only=True, tag="upsert"):
    """The searchable texts of ``uuid`` are now ``parts`` (parts not named are unchanged)."""

    kind: Kind
    group_id: str
    uuid: str
    parts: dict[str, str]
    #: Whether the vector projection embeds the vector fields among ``parts``. ``False``: the
    #: parts are searched by their words only, and any vector they had is removed (a declared
    #: edge's fact, a declared document named by its bare file stem; ADR 0223).
    embed: bool = True


class Delete(msgspec.Struct, frozen=True, kw_only=True, tag="delete"):
    """``uuid`` is no longer searchable."""

    kind: Kind
    group_id: str
    uuid: str


class ClearGroup(msgspec.Struct, frozen=True, kw_only=True, tag="clear"):
    """Nothing of ``group_id`` is searchable any more."""

    group_id: str


Op = Upsert | Delete | ClearGroup


def _edge(group_id: str, edge: EdgeRecord) -> Upsert:
    return Upsert(
        kind="edge",
        group_id=group_id,
        uuid=edge.uuid,
        parts={"name": edge.name, "fact": edge.fact},
        embed=embeds_edge(edge),
    )


def _entity(group_id: str, entity: EntityRecord) -> Upsert:
    return Upsert(
        kind="entity",
        group_id=group_id,
        uuid=entity.uuid,
        parts={"name": entity.name, "summary": entity.summary},
        embed=embeds_entity(entity),
    )


#: The ``origin`` attribute of the rows the declared pass writes (``lcg.ingest.declared.
#: DECLARED_ORIGIN``; a test checks the two agree).
_DECLARED_ORIGIN: Final = "declared"


def _declared_attributes(attributes: str) -> dict[str, object] | None:
    """A row's attributes when they say the declared pass wrote it, else ``None``."""
    if _DECLARED_ORIGIN not in attributes:
        return None  # most rows: no JSON to read
    attrs = attributes_of(attributes)
    return attrs if attrs.get("origin") == _DECLARED_ORIGIN else None


def embeds_edge(edge: EdgeRecord) -> bool:
    """Whether ``edge``'s fact gets a vector: every edge's does but a declared one's (ADR
    0223), whose fact is a sentence made from its two names (``a links to b``) and found by
    them, as words."""
    return _declared_attributes(edge.attributes) is None


def embeds_entity(entity: EntityRecord) -> bool:
    """Whether ``entity``'s name and summary get vectors: every entity's do but a declared
    ``Document``'s named by its bare file stem (ADR 0223) — one with no title, no heading and
    no space in its file name (``n00042``, ``parser``), an identifier its words find; its
    content's chunks carry vectors of their own."""
    attrs = _declared_attributes(entity.attributes)
    if attrs is None or "Document" not in entity.labels:
        return True
    path = attrs.get("path")
    if not isinstance(path, str):
        return True
    name = posixpath.basename(path)
    stem = posixpath.splitext(name)[0] or name
    return entity.name != stem or any(c.isspace() for c in entity.name)


def _merge(group_id: str, merge: MergeOutcome) -> list[Op]:
    ops: list[Op] = [Delete(kind="entity", group_id=group_id, uuid=a.uuid) for a in merge.aliases]
    if merge.canonical_summary is not None:
        ops.append(
            Upsert(
                kind="entity",
                group_id=group_id,
                uuid=merge.canonical_uuid,
                parts={"summary": merge.canonical_summary},
            )
        )
    ops.extend(_edge(group_id, e) for e in merge.edges_created)
    return ops


def source_of(name: str, source_description: str) -> str | None:
    """The source file of a chunk episode (``<source_file>:<chunk_id>``, named ``chunk_id``).

    Episodes added without a source file (``knowledge_add_episode``) have none: each is its
    own source for search.
    """
    return chunk_file(name, source_description)


def derive_ops(event: Event) -> list[Op]:
    """The text/vector ops of one event (empty for events that change no searchable text).

    Every event type has its case (strict mypy fails on a missing one, ``assert_never``): a
    new type must say what it means for search, even when that is nothing.
    """
    g = event.group_id
    match event:
        case EpisodeAdded():
            parts = {"content": event.content, TIME_PART: event.valid_at or event.created_at}
            source = source_of(event.name, event.source_description)
            if source is not None:
                parts[SOURCE_PART] = source
            return [Upsert(kind="episode", group_id=g, uuid=event.uuid, parts=parts)]
        case EpisodeExtracted():
            return _extracted(event)
        case EntityAsserted():
            e = event.entity
            if MERGED_LABEL in e.labels:
                # A merge tombstone (e.g. restored by a dump) is not searchable.
                return [Delete(kind="entity", group_id=g, uuid=e.uuid)]
            return [_entity(g, e)]
        case RelationshipAsserted() | CrossGroupEdgeAdded():
            return [_edge(g, event.edge)]
        case EntitiesMerged():
            return _merge(g, event.merge)
        case CorrectionsApplied():
            out: list[Op] = []
            for merge in event.merges:
                out.extend(_merge(g, merge))
            return out
        case EpisodesDeleted():
            return [Delete(kind="episode", group_id=g, uuid=u) for u in event.episode_uuids]
        case GroupPurged():
            return [ClearGroup(group_id=g)]
        # Relation types, labels and endpoints are not searchable text.
        case RelationTypesChanged() | EntityTypesChanged() | PointersRebound():
            return []
        # Which folder a source is: the graph's record, no searchable text.
        case SourceRegistered() | SourceRemoved():
            return []
        case StructureDeclared():
            return _declared(event)
        case _:
            assert_never(event)


def _declared(event: StructureDeclared) -> list[Op]:
    """Declared documents and tags are searchable as asserted entities are (with vectors as
    ``embeds_entity`` and ``embeds_edge`` say: the same rows restored by a dump as
    ``EntityAsserted``/``RelationshipAsserted`` get the same); removed ones (and removed
    edges) are not. Mentions are graph relationships, no text."""
    g = event.group_id
    ops: list[Op] = [_entity(g, e) for e in event.entities_upserted]
    ops.extend(_edge(g, e) for e in event.edges_upserted)
    ops.extend(Delete(kind="entity", group_id=g, uuid=u) for u in event.entities_removed)
    ops.extend(Delete(kind="edge", group_id=g, uuid=u) for u in event.edges_removed)
    return ops


def _extracted(event: EpisodeExtracted) -> list[Op]:
    g = event.group_id
    ops: list[Op] = [_entity(g, e) for e in event.entities_created]
    ops.extend(
        Upsert(kind="entity", group_id=g, uuid=u.uuid, parts={"summary": u.summary})
        for u in event.entities_updated
    )
    ops.extend(_edge(g, e) for e in event.edges_created)
    # Fact-augmented keys (issue 14): what extraction found in the episode also finds it.
    keys = event.keys
    if keys is None:
        keys = [e.name for e in event.entities_created] + [e.fact for e in event.edges_created]
    ops.append(
        Upsert(
            kind="episode", group_id=g, uuid=event.episode_uuid, parts={KEYS_PART: "\n".join(keys)}
        )
    )
    return ops


def texts_to_embed(ops: list[Op]) -> list[str]:
    """The distinct non-empty texts of vector fields in ``ops``, in first-seen order."""
    seen: dict[str, None] = {}
    for op in ops:
        if isinstance(op, Upsert):
            for part, text in op.parts.items():
                if text and op.embed and (op.kind, part) in VECTOR_FIELDS:
                    seen.setdefault(text, None)
    return list(seen)
