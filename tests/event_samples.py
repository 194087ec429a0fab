"""Events for tests: record builders, and a story through every type a graph can apply.

``history`` is a consistent story a projection can apply (the graph tests);
``tests/unit/test_event_registry.py`` checks it passes through every type of the ``Event``
union but ``GroupPurged``. What each type owns in the tests (its sample, strategy and workspace
step) is its entry in ``event_registry``.
"""

from __future__ import annotations

import msgspec

from lcg.events.model import (
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    EdgeInvalidation,
    EdgeRecord,
    EdgeRestated,
    EntitiesMerged,
    EntityAsserted,
    EntityRecord,
    EntityRetyped,
    EntitySummaryUpdate,
    EntityTypesChanged,
    EpisodeAdded,
    EpisodeExtracted,
    EpisodesDeleted,
    Event,
    MentionRecord,
    MergedAlias,
    MergeOutcome,
    PointerRebind,
    PointersRebound,
    RelationRetyped,
    RelationshipAsserted,
    RelationTypesChanged,
    SourceRegistered,
    SourceRemoved,
    StructureDeclared,
)

TS = "2024-05-01T12:00:00.000000Z"


def episode(i: int, group_id: str = "g", size: int = 10) -> EpisodeAdded:
    """A small ``EpisodeAdded`` numbered ``i`` with ``size`` characters of content."""
    return EpisodeAdded(
        group_id=group_id, uuid=f"ep{i}", name=f"n{i}", content="x" * size, created_at=TS
    )


# ---- a story through every type (graph level) ------------------------------------------

G = "g1"
H = "g2"
T0 = TS
T1 = "2024-05-02T08:30:00.000000Z"
T2 = "2024-05-03T09:00:00+02:00"


def stamp(events: list[Event], start: int = 0) -> list[Event]:
    """The events with consecutive seqs from ``start``."""
    return [msgspec.structs.replace(e, seq=start + i) for i, e in enumerate(events)]


def ent(uuid: str, name: str, *, summary: str = "", created_at: str = T0) -> EntityRecord:
    """An ``Entity``-labelled record."""
    return EntityRecord(
        uuid=uuid, name=name, labels=["Entity"], summary=summary, created_at=created_at
    )


def entities(n: int, start: int = 0, group_id: str = "g") -> list[EntityAsserted]:
    """``n`` created entities ``e<i>`` named ``name <i>``, from ``i = start``."""
    return [
        EntityAsserted(group_id=group_id, entity=ent(f"e{i}", f"name {i}"), created=True)
        for i in range(start, start + n)
    ]


def edge(uuid: str, src: str, dst: str, *, name: str = "KNOWS", **kw: object) -> EdgeRecord:
    """An edge ``src -> dst``; ``kw`` overrides any other field."""
    fields: dict[str, object] = {"fact": f"{src} {name} {dst}", "created_at": T0, "valid_at": T0}
    fields.update(kw)
    return EdgeRecord(uuid=uuid, name=name, source_uuid=src, target_uuid=dst, **fields)  # type: ignore[arg-type]


def added(
    uuid: str,
    *,
    group: str = G,
    name: str = "",
    source_description: str = "doc.md",
    content: str = "text",
    created_at: str = T0,
    content_hash: str = "",
) -> EpisodeAdded:
    """An episode of ``group``, valid from its creation."""
    return EpisodeAdded(
        group_id=group,
        uuid=uuid,
        name=name or uuid,
        source_description=source_description,
        content=content,
        created_at=created_at,
        valid_at=created_at,
        content_hash=content_hash,
    )


def scene() -> list[Event]:
    """An episode extracted into two entities and an edge, plus an asserted entity."""
    return [
        added("ep1"),
        EpisodeExtracted(
            group_id=G,
            episode_uuid="ep1",
            entities_created=[ent("e1", "Alice"), ent("e2", "Bob")],
            edges_created=[edge("r1", "e1", "e2", name="Alice → Bob")],
            mentions=["e1", "e2"],
        ),
        EntityAsserted(group_id=G, entity=ent("e3", "Carol", created_at=T1), created=True),
    ]


def merge_outcome() -> MergeOutcome:
    """e3 merged into e1: a new edge r3, r2 invalidated."""
    return MergeOutcome(
        canonical_uuid="e1",
        canonical_created_at="2024-04-01T00:00:00Z",
        canonical_summary="merged summary",
        aliases=[
            MergedAlias(uuid="e3", labels=["Entity", "Merged"], attributes='{"merged_into":"e1"}')
        ],
        edges_created=[edge("r3", "e1", "e2", name="Carol → Bob", episodes=["ep1"])],
        edges_invalidated=[EdgeInvalidation(uuid="r2", invalid_at=T1)],
    )


def history() -> list[Event]:
    """A consistent story through every event type but ``GroupPurged`` (tests place it)."""
    pointer = '{"cross_group_pointers":{}}'
    return [
        *scene(),
        added("ep2", created_at=T1, content_hash="h2"),
        EpisodeExtracted(
            group_id=G,
            episode_uuid="ep2",
            entities_created=[ent("e4", "Dan", created_at=T1)],
            entities_updated=[EntitySummaryUpdate(uuid="e1", summary="s1")],
            edges_created=[edge("r2", "e4", "e1"), edge("r4", "e4", "e2")],
            edges_restated=[EdgeRestated(uuid="r1", episode_uuid="ep2")],
            edges_invalidated=[EdgeInvalidation(uuid="r1", invalid_at=T2)],
            mentions=["e4", "e1", "e2"],
        ),
        RelationshipAsserted(group_id=G, edge=edge("r5", "e3", "e2"), created=True),
        EntitiesMerged(group_id=G, merge=merge_outcome()),
        CorrectionsApplied(
            group_id=G,
            correction_ids=["c1"],
            retractions=[EdgeInvalidation(uuid="r5", invalid_at=T1, reason="corrected")],
        ),
        CrossGroupEdgeAdded(group_id=G, edge=edge("cx", "", "e2", attributes=pointer)),
        RelationTypesChanged(
            group_id=G,
            cause="backfill",
            changes=[RelationRetyped(uuid="r4", relation_type="LIKES")],
        ),
        EntityTypesChanged(
            group_id=G,
            cause="restamp",
            changes=[EntityRetyped(uuid="e4", labels=["Entity", "Person"])],
        ),
        added("ep3", source_description="doc.md:3"),
        EpisodesDeleted(group_id=G, by="source", key="doc.md", episode_uuids=["ep3"]),
        PointersRebound(
            group_id=G,
            source_group_id=H,
            rebinds=[
                PointerRebind(uuid="cx", source_uuid="e4", target_uuid="e2", attributes=pointer)
            ],
        ),
        added("ep4"),
        SourceRegistered(group_id=G, root="/a/notes", label="notes", kind="folder", synced_at=T1),
        SourceRegistered(group_id=G, root="/b/notes", label="notes~2", kind="folder", synced_at=T1),
        SourceRegistered(group_id=G, root="/a/notes", label="notes", kind="folder", synced_at=T2),
        SourceRemoved(group_id=G, root="/b/notes"),
        # Declared structure: documents, a tag, edges (one to an extracted entity) and a
        # mention; then a document removed with its edges, and a mention removed.
        StructureDeclared(
            group_id=G,
            root="/a/notes",
            label="notes",
            entities_upserted=[ent("d1", "Plan", created_at=T2), ent("d2", "Log", created_at=T2)],
            edges_upserted=[
                edge("l1", "d1", "d2", name="LINKS_TO", created_at=T2),
                edge("l2", "d2", "e1", name="LINKS_TO", created_at=T2),
            ],
            mentions_added=[
                MentionRecord(episode_uuid="ep4", entity_uuid="d1"),
                MentionRecord(episode_uuid="ep4", entity_uuid="d2"),
            ],
        ),
        RelationshipAsserted(
            group_id=G, edge=edge("r9", "e4", "d1", name="CITES", created_at=T2), created=True
        ),
        StructureDeclared(
            group_id=G,
            root="/a/notes",
            label="notes",
            entities_removed=["d2"],
            edges_removed=["l1", "l2"],
            mentions_removed=[MentionRecord(episode_uuid="ep4", entity_uuid="d1")],
        ),
    ]
