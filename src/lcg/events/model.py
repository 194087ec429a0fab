"""The event catalogue: one frozen msgspec ``Struct`` per kind of write decision.

Every event shares the envelope ``seq, ts, gen, type, v``:

* ``seq`` – position in its group's stream (0-based, +1 per line, no gaps); stamped on append.
* ``ts`` – when the line was appended, RFC 3339 UTC with microseconds; stamped on append.
* ``gen`` – the stream's generation (opaque); stamped on append.
* ``type`` – the tag naming the event class (msgspec ``tag_field``).
* ``v`` – the schema version of that type; older versions are upcast on read (``codec``).

Payloads hold decided outcomes: uuids, timestamps, resolved endpoints, chosen types and the
text they describe. They never hold vectors: the projector derives embeddings from the text.
Timestamps in payloads are RFC 3339 UTC strings (``2024-05-01T12:00:00.000000Z``), typed
``Timestamp``: a line whose payload holds any other text is not decoded (ADR 0150), so every
event the codec accepts is one each projection can store; older spellings are upcast first.
See ``docs/events.md`` for the full catalogue.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, get_args

import msgspec

from lcg.timestamps import RECORDED_PATTERN

__all__ = [
    "CURRENT_VERSIONS",
    "EVENT_TYPES",
    "CorrectionsApplied",
    "CrossGroupEdgeAdded",
    "DroppedEdge",
    "EdgeInvalidation",
    "EdgeRecord",
    "EdgeRestated",
    "EntitiesMerged",
    "EntityAsserted",
    "EntityRecord",
    "EntityRetyped",
    "EntitySummaryUpdate",
    "EntityTypesChanged",
    "EpisodeAdded",
    "EpisodeExtracted",
    "EpisodesDeleted",
    "Event",
    "EventBase",
    "GroupPurged",
    "MentionRecord",
    "MergeOutcome",
    "MergedAlias",
    "PointerRebind",
    "PointersRebound",
    "RelationRetyped",
    "RelationTypesChanged",
    "RelationshipAsserted",
    "RowId",
    "SourceRegistered",
    "SourceRemoved",
    "StructureDeclared",
    "Timestamp",
    "attributes_of",
]

#: A payload time in the one recorded form, years 0001-9999 (``lcg.timestamps.to_text``).
Timestamp = Annotated[str, msgspec.Meta(pattern=RECORDED_PATTERN, extra={"lcg_timestamp": True})]
#: The uuid of a row an event creates: never ``""``, which the graph reads as "no endpoint"
#: (an entity keyed ``""`` would be every unbound edge's endpoint, in every group).
RowId = Annotated[str, msgspec.Meta(min_length=1)]


class EventBase(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """The envelope every event carries; ``seq``/``ts``/``gen`` are stamped by the writer."""

    seq: int = -1
    ts: str = ""
    gen: str = ""
    v: int = 1
    group_id: str


# ---- shared payload records -------------------------------------------------------------


def attributes_of(text: object) -> dict[str, Any]:
    """A row's ``attributes`` (the JSON object text entities and edges carry) as a mapping;
    empty for no text, text that is not JSON, or JSON that is not an object."""
    try:
        parsed = msgspec.json.decode(str(text or "{}"))
    except msgspec.DecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


class EntityRecord(msgspec.Struct, frozen=True, kw_only=True):
    """An entity's full state: what a projection stores for it."""

    uuid: RowId
    name: str
    labels: list[str]
    summary: str = ""
    #: The entity's attributes as a JSON object text (the reference's row shape).
    attributes: str = "{}"
    created_at: Timestamp


class EdgeRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A relationship's full state. Endpoints are entity uuids (``""`` = unbound pointer)."""

    uuid: RowId
    name: str
    source_uuid: str
    target_uuid: str
    fact: str
    relation_type: str | None = None
    valid_at: Timestamp | None = None
    invalid_at: Timestamp | None = None
    expired_at: Timestamp | None = None
    episodes: list[str] = []
    attributes: str = "{}"
    created_at: Timestamp


class MentionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """An episode mentions an entity (the graph's ``MENTIONS`` relationship)."""

    episode_uuid: str
    entity_uuid: str


class EntitySummaryUpdate(msgspec.Struct, frozen=True, kw_only=True):
    """An existing entity matched during extraction; its summary is replaced by ``summary``."""

    uuid: str
    summary: str


class EdgeInvalidation(msgspec.Struct, frozen=True, kw_only=True):
    """An edge stops being current at ``invalid_at`` (never deleted)."""

    uuid: str
    invalid_at: Timestamp
    reason: str = ""


class EdgeRestated(msgspec.Struct, frozen=True, kw_only=True):
    """An extracted edge restated an active edge; the episode is added to its ``episodes``."""

    uuid: str
    episode_uuid: str


class DroppedEdge(msgspec.Struct, frozen=True, kw_only=True):
    """An extracted edge that was not written, and why."""

    source_name: str
    target_name: str
    relation_type: str | None = None
    fact: str
    unresolved_endpoint: Literal["source", "target", "both"] | None = None
    reason: str = "unresolvable"


class MergedAlias(msgspec.Struct, frozen=True, kw_only=True):
    """An alias entity's tombstone state after a merge (``Merged`` label, ``merged_into``)."""

    uuid: str
    labels: list[str]
    attributes: str


class MergeOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Everything one merge decided: tombstones, rewritten and invalidated edges."""

    canonical_uuid: str
    canonical_created_at: Timestamp
    canonical_summary: str | None = None
    aliases: list[MergedAlias] = []
    edges_created: list[EdgeRecord] = []
    edges_invalidated: list[EdgeInvalidation] = []


class RelationRetyped(msgspec.Struct, frozen=True, kw_only=True):
    """One edge's new ``relation_type``."""

    uuid: str
    relation_type: str


class EntityRetyped(msgspec.Struct, frozen=True, kw_only=True):
    """One entity's new label list (``Entity`` first)."""

    uuid: str
    labels: list[str]


class PointerRebind(msgspec.Struct, frozen=True, kw_only=True):
    """One cross-group edge's new endpoints and pointer attributes after re-resolution."""

    uuid: str
    source_uuid: str
    target_uuid: str
    attributes: str
    invalid_at: Timestamp | None = None


# ---- the events -------------------------------------------------------------------------


class EpisodeAdded(EventBase, frozen=True, kw_only=True, tag="EpisodeAdded"):
    """An episode's text was accepted; durable before any LLM call (v2: ``body`` → ``content``)."""

    v: int = 2
    uuid: RowId
    name: str
    source: Literal["text", "json", "message"] = "text"
    source_description: str = ""
    content: str
    created_at: Timestamp
    valid_at: Timestamp | None = None
    #: SHA-256 of ``content``: lets a resend of the same chunk be recognised.
    content_hash: str = ""


class EpisodeExtracted(EventBase, frozen=True, kw_only=True, tag="EpisodeExtracted"):
    """The outcome of extracting one episode: what was created, updated, invalidated, dropped."""

    episode_uuid: str
    entities_created: list[EntityRecord] = []
    entities_updated: list[EntitySummaryUpdate] = []
    edges_created: list[EdgeRecord] = []
    edges_restated: list[EdgeRestated] = []
    edges_invalidated: list[EdgeInvalidation] = []
    edges_dropped: list[DroppedEdge] = []
    #: Uuids of every entity the episode mentions (created or matched), in extraction order.
    mentions: list[str] = []
    model: str = ""
    entities_dropped_malformed: int = 0
    edges_dropped_malformed: int = 0
    entities_reclassified_unclassified: int = 0
    edges_reclassified_unclassified: int = 0
    #: The episode's search keys as recorded, when they are not the names and facts of
    #: ``entities_created``/``edges_created`` (``None``: derived from them). A dump carries the
    #: keys an extraction left, since its entities and edges are asserted apart (ADR 0221).
    keys: list[str] | None = None


class EntityAsserted(EventBase, frozen=True, kw_only=True, tag="EntityAsserted"):
    """A client asserted an entity; ``entity`` is its full state after the assertion."""

    entity: EntityRecord
    created: bool


class RelationshipAsserted(EventBase, frozen=True, kw_only=True, tag="RelationshipAsserted"):
    """A client asserted a relationship; ``edge`` is its full state after the assertion."""

    edge: EdgeRecord
    created: bool


class EntitiesMerged(EventBase, frozen=True, kw_only=True, tag="EntitiesMerged"):
    """Aliases were merged into a canonical entity."""

    merge: MergeOutcome


class EpisodesDeleted(EventBase, frozen=True, kw_only=True, tag="EpisodesDeleted"):
    """Episodes were deleted, by uuid, by source file or by chunk id (entities are kept)."""

    by: Literal["uuid", "source", "chunk"]
    key: str
    episode_uuids: list[str]


class GroupPurged(EventBase, frozen=True, kw_only=True, tag="GroupPurged"):
    """Every entity, episode and edge of the group was removed."""

    reason: Literal["delete_by_group", "clear_all", "rebuild"] = "delete_by_group"
    entities: int = 0
    episodes: int = 0
    edges: int = 0


class RelationTypesChanged(EventBase, frozen=True, kw_only=True, tag="RelationTypesChanged"):
    """Edges were given new relation types by a curation pass."""

    cause: Literal["canonicalize", "backfill", "reprocess"]
    changes: list[RelationRetyped]


class EntityTypesChanged(EventBase, frozen=True, kw_only=True, tag="EntityTypesChanged"):
    """Entities were given new labels by a typing pass."""

    cause: Literal["reprocess", "restamp"]
    changes: list[EntityRetyped]


class CorrectionsApplied(EventBase, frozen=True, kw_only=True, tag="CorrectionsApplied"):
    """Entries of the workspace corrections file were applied."""

    correction_ids: list[str]
    merges: list[MergeOutcome] = []
    retractions: list[EdgeInvalidation] = []


class CrossGroupEdgeAdded(EventBase, frozen=True, kw_only=True, tag="CrossGroupEdgeAdded"):
    """An edge in this group with an endpoint in another group (pointers in ``attributes``)."""

    edge: EdgeRecord


class PointersRebound(EventBase, frozen=True, kw_only=True, tag="PointersRebound"):
    """Cross-group edges owned by this group were re-resolved against ``source_group_id``."""

    source_group_id: str
    rebinds: list[PointerRebind]


class SourceRegistered(EventBase, frozen=True, kw_only=True, tag="SourceRegistered"):
    """A file or folder is a source of the group: its files are served as ``<label>/<path>``
    (a folder) or ``<label>`` (a file). Recorded when the source is first synced and again
    after a sync that changed what it holds (``synced_at``); the latest one for a root holds
    (ADR 0200)."""

    #: The resolved absolute path of the folder or file: what the source is (with the group).
    root: str
    #: One path component, unique among the group's sources (``notes``, ``notes~2``).
    label: str
    kind: Literal["folder", "file"]
    synced_at: Timestamp


class SourceRemoved(EventBase, frozen=True, kw_only=True, tag="SourceRemoved"):
    """The source at ``root`` is no longer one of the group's (its episodes were deleted
    before, by ``EpisodesDeleted``)."""

    root: str


class StructureDeclared(EventBase, frozen=True, kw_only=True, tag="StructureDeclared"):
    """What a source tree's files declare changed (issue 29, ADR 0203): the difference
    between the declared graph the group held for the source and the one its files state now.

    Entities (``Document``s and ``Tag``s) and edges are upserted in full; removed ones are
    deleted from the graph (a file is the truth for what it declares now; its history is
    git's). Mentions are ``MENTIONS`` from a chunk's episode to a document its text names.
    """

    #: The source's resolved root and its label (``notes``): whose declarations these are.
    root: str
    label: str
    entities_upserted: list[EntityRecord] = []
    entities_removed: list[str] = []
    edges_upserted: list[EdgeRecord] = []
    edges_removed: list[str] = []
    mentions_added: list[MentionRecord] = []
    mentions_removed: list[MentionRecord] = []


Event = (
    EpisodeAdded
    | EpisodeExtracted
    | EntityAsserted
    | RelationshipAsserted
    | EntitiesMerged
    | EpisodesDeleted
    | GroupPurged
    | RelationTypesChanged
    | EntityTypesChanged
    | CorrectionsApplied
    | CrossGroupEdgeAdded
    | PointersRebound
    | SourceRegistered
    | SourceRemoved
    | StructureDeclared
)

#: Every event type, in the order of ``Event``.
EVENT_TYPES: Final[tuple[type[Event], ...]] = get_args(Event)


def _written_version(cls: type[Event]) -> int:
    (default,) = (f.default for f in msgspec.structs.fields(cls) if f.name == "v")
    if not isinstance(default, int):
        raise TypeError(f"{cls.__name__}.v needs an integer default: the version it is written at")
    return default


#: The version each event type is written at today, by tag. Derived from the class default of
#: ``v`` (the one place a version is written), so bumping it there is the whole change.
CURRENT_VERSIONS: Final[dict[str, int]] = {
    str(cls.__struct_config__.tag): _written_version(cls) for cls in EVENT_TYPES
}
