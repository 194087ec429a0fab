"""The tests' one registry of event types (issue 31, ADR 0221): per member of the ``Event``
union, its entry owns everything the tests need of the type —

* ``sample``: one event of the type with every nested record used (codec, checksum, stream);
* ``strategy``: its hypothesis strategy, built from the value strategies a property test
  chooses (``Values``: plain text for the stream's round trip, extreme values for admission);
* ``step``: its step of the workspace history — the real command that records it where there
  is one (``assert_entity``, ``merge_entities``, ``declare_structure`` …), else the event
  committed to the stream — each step continuing the story the earlier ones left.

The types are ``typing.get_args(Event)``, never a list of ours: ``unregistered()`` names a
member of the union with no entry, and ``tests/unit/test_event_registry.py`` fails naming it.
Adding an event type to the tests is one entry here (the graph story of ``event_samples.history``
is checked against the union too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from hypothesis import strategies as st

from event_samples import TS, ent
from event_samples import edge as story_edge
from lcg.events.model import (
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    DroppedEdge,
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
    GroupPurged,
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
from lcg.workspace import Workspace

Strategy = st.SearchStrategy[Any]

# ---- values and nested records ---------------------------------------------------------


@dataclass(frozen=True)
class Values:
    """The value strategies a property test draws every field from."""

    group: Strategy
    texts: Strategy
    ids: Strategy
    #: An edge's target or a rebind's (``""`` is an unbound pointer).
    endpoints: Strategy
    content: Strategy
    times: Strategy
    maybe_times: Strategy
    ints: Strategy
    attributes: Strategy

    def few(self, s: Strategy) -> Strategy:
        """Up to three of ``s``."""
        return st.lists(s, max_size=3)

    def maybe_texts(self) -> Strategy:
        """``None`` or a text."""
        return st.none() | self.texts

    def entity(self) -> Strategy:
        """An ``EntityRecord``."""
        v = self
        return st.builds(
            EntityRecord, uuid=v.ids, name=v.texts, labels=v.few(v.texts), summary=v.texts,
            attributes=v.attributes, created_at=v.times,
        )  # fmt: skip

    def edge(self) -> Strategy:
        """An ``EdgeRecord``."""
        v = self
        return st.builds(
            EdgeRecord, uuid=v.ids, name=v.texts, source_uuid=v.ids, target_uuid=v.endpoints,
            fact=v.texts, relation_type=v.maybe_texts(), valid_at=v.maybe_times,
            invalid_at=v.maybe_times, expired_at=v.maybe_times, episodes=v.few(v.ids),
            attributes=v.attributes, created_at=v.times,
        )  # fmt: skip

    def invalidation(self) -> Strategy:
        """An ``EdgeInvalidation``."""
        return st.builds(EdgeInvalidation, uuid=self.ids, invalid_at=self.times, reason=self.texts)

    def merge(self) -> Strategy:
        """A ``MergeOutcome``."""
        v = self
        return st.builds(
            MergeOutcome, canonical_uuid=v.ids, canonical_created_at=v.times,
            canonical_summary=v.maybe_texts(),
            aliases=v.few(st.builds(MergedAlias, uuid=v.ids, labels=v.few(v.texts),
                                    attributes=v.attributes)),
            edges_created=v.few(v.edge()), edges_invalidated=v.few(v.invalidation()),
        )  # fmt: skip

    def mention(self) -> Strategy:
        """A ``MentionRecord``."""
        return st.builds(MentionRecord, episode_uuid=self.ids, entity_uuid=self.ids)


# ---- samples (codec level) -------------------------------------------------------------


def _entity(uuid: str = "e1") -> EntityRecord:
    return EntityRecord(uuid=uuid, name="Ada", labels=["Entity", "Person"], created_at=TS)


def _edge(uuid: str = "r1") -> EdgeRecord:
    return EdgeRecord(
        uuid=uuid,
        name="KNOWS",
        source_uuid="e1",
        target_uuid="e2",
        fact="Ada knows Bob",
        episodes=["ep1"],
        created_at=TS,
    )


def _merge() -> MergeOutcome:
    return MergeOutcome(
        canonical_uuid="e1",
        canonical_created_at=TS,
        canonical_summary="s",
        aliases=[MergedAlias(uuid="e3", labels=["Entity", "Merged"], attributes="{}")],
        edges_created=[_edge("r9")],
        edges_invalidated=[EdgeInvalidation(uuid="r2", invalid_at=TS, reason="merged")],
    )


# ---- the workspace history: one step per type, a story in the union's order -------------


def _commit(ws: Workspace, group: str, *events: Event) -> None:
    with ws.group_lock(group):
        ws.commit(group, list(events))


def _step_episode_added(ws: Workspace, g: str) -> None:
    from lcg.ingest import episodes

    for i in range(5):
        episodes.process_chunk(
            ws, chunk_text=f"note {i} about the engine", chunk_id=f"n{i}", source_file="a.md",
            group_id=g,
        )  # fmt: skip
    _commit(ws, g, EpisodeAdded(group_id=g, uuid=f"{g}/ep", name="ep", content="Ada met Bob.",
                                created_at=TS, valid_at=TS, content_hash="h"))  # fmt: skip


def _step_episode_extracted(ws: Workspace, g: str) -> None:
    # An extraction as the decide step records it (the LLM is the outside world).
    _commit(ws, g, EpisodeExtracted(
        group_id=g, episode_uuid=f"{g}/ep",
        entities_created=[ent(f"{g}/e1", "Alice"), ent(f"{g}/e2", "Bob", summary="a builder")],
        edges_created=[
            story_edge(f"{g}/r1", f"{g}/e1", f"{g}/e2", episodes=[f"{g}/ep"]),
            story_edge(f"{g}/r2", f"{g}/e2", f"{g}/e1", name="HELPS", episodes=[f"{g}/ep"]),
        ],
        mentions=[f"{g}/e1", f"{g}/e2"], model="scripted",
    ))  # fmt: skip


def _step_entity_asserted(ws: Workspace, g: str) -> None:
    from lcg.ingest import assertion

    for name, summary in [("Ada", "mathematician"), ("Charles", "engineer"), ("ada ", "dup")]:
        assertion.assert_entity(ws, name=name, group_id=g, summary=summary)
    assertion.assert_entity(ws, name="Analytical Engine", group_id=g, labels=["Machine"])
    assertion.assert_entity(ws, name="Babbage", group_id=g)


def _step_relationship_asserted(ws: Workspace, g: str) -> None:
    from lcg.ingest import assertion

    assertion.assert_relationship(
        ws, source_name="Ada", target_name="Analytical Engine", predicate="PROGRAMMED", group_id=g
    )
    assertion.assert_relationship(
        ws, source_name="Babbage", target_name="Analytical Engine", predicate="DESIGNED",
        group_id=g, valid_at="1837-01-01T00:00:00Z",
    )  # fmt: skip


def _step_entities_merged(ws: Workspace, g: str) -> None:
    from lcg.ingest import merge

    merge.merge_entities(ws, group_id=g, canonical_name="Charles", alias_names=["Babbage"])


def _step_episodes_deleted(ws: Workspace, g: str) -> None:
    from lcg.ingest import deletion

    deletion.delete_chunk_episode(ws, "n3", [g])


def _step_group_purged(ws: Workspace, g: str) -> None:
    # A purge ends the story of a group: it is told in a group of its own, which the dump
    # must carry as an empty stream.
    from lcg.ingest import assertion, deletion

    purged = f"{g}-purged"
    assertion.assert_entity(ws, name="Ephemera", group_id=purged)
    deletion.delete_by_group(ws, [purged], confirm=True, dry_run=False)


def _step_relation_types_changed(ws: Workspace, g: str) -> None:
    change = RelationRetyped(uuid=f"{g}/r2", relation_type="ASSISTS")
    _commit(ws, g, RelationTypesChanged(group_id=g, cause="backfill", changes=[change]))


def _step_entity_types_changed(ws: Workspace, g: str) -> None:
    change = EntityRetyped(uuid=f"{g}/e2", labels=["Entity", "Person"])
    _commit(ws, g, EntityTypesChanged(group_id=g, cause="restamp", changes=[change]))


def _step_corrections_applied(ws: Workspace, g: str) -> None:
    _commit(ws, g, CorrectionsApplied(
        group_id=g, correction_ids=["c1"],
        retractions=[EdgeInvalidation(uuid=f"{g}/r1", invalid_at=TS, reason="corrected")],
    ))  # fmt: skip


def _step_cross_group_edge_added(ws: Workspace, g: str) -> None:
    from lcg.ingest import assertion, cross_group

    other = f"{g}-people"
    assertion.assert_entity(ws, name="Lovelace", group_id=other)
    cross_group.add_cross_group_edge(
        ws, group_id=g, source={"source_group_id": other, "endpoint_name": "Lovelace"},
        target={"source_group_id": other, "endpoint_name": "Nobody"}, name="SAME_AS",
    )  # fmt: skip


def _step_pointers_rebound(ws: Workspace, g: str) -> None:
    from lcg.ingest import assertion, cross_group

    other = f"{g}-people"
    assertion.assert_entity(ws, name="Nobody", group_id=other)
    cross_group.rebind_pointers(ws, other)


def _roots(ws: Workspace, g: str) -> tuple[str, str, str]:
    base = ws.config.workspace / "trees" / g
    return str(base / "notes"), str(base / "work" / "notes"), str(base / "old")


def _step_source_registered(ws: Workspace, g: str) -> None:
    from lcg.ingest import resolve_source

    # Two folders of one name, and one to be removed.
    for root in _roots(ws, g):
        Path(root).mkdir(parents=True, exist_ok=True)
        resolve_source(ws, g, root, "folder")


def _step_source_removed(ws: Workspace, g: str) -> None:
    from lcg.ingest import forget_source

    forget_source(ws, g, _roots(ws, g)[2])


def _step_structure_declared(ws: Workspace, g: str) -> None:
    from lcg.ingest import ChunkIn, declare_structure, sync_chunks
    from lcg.ingest.declared import (
        DeclaredDocument,
        DeclaredEdge,
        DeclaredMention,
        DeclaredStructure,
    )

    chunk = "notes/a.md#0123456789ab"
    sync_chunks(ws, g, [ChunkIn(chunk_id=chunk, source_file="notes/a.md",
                                chunk_text="See STORY-1 and the gamma plan.",
                                reference_time=TS)], [])  # fmt: skip

    def link(rel: Any, src: str, dst: str) -> DeclaredEdge:
        return DeclaredEdge(relation_type=rel, source=src, target=dst, fact=f"{src} {rel} {dst}")

    docs = [
        DeclaredDocument(path="a.md", name="Alpha", doc_id="STORY-1", aliases=["A"],
                         fields={"status": "open"}),
        DeclaredDocument(path="b.md", name="Beta"),
        DeclaredDocument(path="c.md", name="Gamma"),
    ]  # fmt: skip
    edges = [
        link("LINKS_TO", "a.md", "b.md"),
        link("PART_OF", "b.md", "c.md"),
        link("SUPERSEDES", "c.md", "a.md"),
        link("TAGGED", "a.md", "#moon"),
    ]
    root = _roots(ws, g)[0]
    declare_structure(ws, g, root, DeclaredStructure(
        documents=docs, tags=["#moon"], edges=edges,
        mentions=[DeclaredMention(chunk_id=chunk, target="c.md")],
    ))  # fmt: skip
    # A second sync: a document, an edge and a mention go; one mention names the id.
    declare_structure(ws, g, root, DeclaredStructure(
        documents=[docs[0], docs[2]], tags=["#moon"], edges=[edges[2], edges[3]],
        mentions=[DeclaredMention(chunk_id=chunk, target="STORY-1")],
    ))  # fmt: skip


# ---- the registry ----------------------------------------------------------------------


@dataclass(frozen=True)
class EventKind:
    """Everything the tests know of one event type."""

    sample: Callable[[str], Event]
    strategy: Callable[[Values], Strategy]
    step: Callable[[Workspace, str], None]


KINDS: dict[type[Event], EventKind] = {
    EpisodeAdded: EventKind(
        sample=lambda g: EpisodeAdded(
            group_id=g, uuid="ep1", name="n", content="Ada met Bob.", created_at=TS,
            content_hash="h",
        ),
        strategy=lambda v: st.builds(
            EpisodeAdded, group_id=v.group, uuid=v.ids, name=v.texts,
            source=st.sampled_from(["text", "json", "message"]), source_description=v.texts,
            content=v.content, created_at=v.times, valid_at=v.maybe_times, content_hash=v.texts,
        ),
        step=_step_episode_added,
    ),
    EpisodeExtracted: EventKind(
        sample=lambda g: EpisodeExtracted(
            group_id=g, episode_uuid="ep1", entities_created=[_entity()],
            entities_updated=[EntitySummaryUpdate(uuid="e2", summary="Bob")],
            edges_created=[_edge()], edges_restated=[EdgeRestated(uuid="r0", episode_uuid="ep1")],
            edges_invalidated=[EdgeInvalidation(uuid="r5", invalid_at=TS)],
            edges_dropped=[DroppedEdge(source_name="A", target_name="Z", fact="f",
                                       unresolved_endpoint="target")],
            mentions=["e1", "e2"], model="scripted", keys=["Ada", "Ada knows Bob"],
        ),
        strategy=lambda v: st.builds(
            EpisodeExtracted, group_id=v.group, episode_uuid=v.ids,
            entities_created=v.few(v.entity()),
            entities_updated=v.few(st.builds(EntitySummaryUpdate, uuid=v.ids, summary=v.texts)),
            edges_created=v.few(v.edge()),
            edges_restated=v.few(st.builds(EdgeRestated, uuid=v.ids, episode_uuid=v.ids)),
            edges_invalidated=v.few(v.invalidation()),
            edges_dropped=v.few(st.builds(
                DroppedEdge, source_name=v.texts, target_name=v.texts,
                relation_type=v.maybe_texts(), fact=v.texts,
                unresolved_endpoint=st.sampled_from([None, "source", "target", "both"]),
                reason=v.texts,
            )),
            mentions=v.few(v.ids), model=v.texts, entities_dropped_malformed=v.ints,
            edges_dropped_malformed=v.ints, entities_reclassified_unclassified=v.ints,
            edges_reclassified_unclassified=v.ints, keys=st.none() | v.few(v.texts),
        ),
        step=_step_episode_extracted,
    ),
    EntityAsserted: EventKind(
        sample=lambda g: EntityAsserted(group_id=g, entity=_entity(), created=True),
        strategy=lambda v: st.builds(
            EntityAsserted, group_id=v.group, entity=v.entity(), created=st.booleans()
        ),
        step=_step_entity_asserted,
    ),
    RelationshipAsserted: EventKind(
        sample=lambda g: RelationshipAsserted(group_id=g, edge=_edge(), created=False),
        strategy=lambda v: st.builds(
            RelationshipAsserted, group_id=v.group, edge=v.edge(), created=st.booleans()
        ),
        step=_step_relationship_asserted,
    ),
    EntitiesMerged: EventKind(
        sample=lambda g: EntitiesMerged(group_id=g, merge=_merge()),
        strategy=lambda v: st.builds(EntitiesMerged, group_id=v.group, merge=v.merge()),
        step=_step_entities_merged,
    ),
    EpisodesDeleted: EventKind(
        sample=lambda g: EpisodesDeleted(
            group_id=g, by="source", key="a.md", episode_uuids=["ep1"]
        ),
        strategy=lambda v: st.builds(
            EpisodesDeleted, group_id=v.group, by=st.sampled_from(["uuid", "source", "chunk"]),
            key=v.texts, episode_uuids=v.few(v.ids),
        ),
        step=_step_episodes_deleted,
    ),
    GroupPurged: EventKind(
        sample=lambda g: GroupPurged(
            group_id=g, reason="clear_all", entities=2, episodes=1, edges=1
        ),
        strategy=lambda v: st.builds(
            GroupPurged, group_id=v.group,
            reason=st.sampled_from(["delete_by_group", "clear_all", "rebuild"]),
            entities=v.ints, episodes=v.ints, edges=v.ints,
        ),
        step=_step_group_purged,
    ),
    RelationTypesChanged: EventKind(
        sample=lambda g: RelationTypesChanged(
            group_id=g, cause="canonicalize",
            changes=[RelationRetyped(uuid="r1", relation_type="KNOWS")],
        ),
        strategy=lambda v: st.builds(
            RelationTypesChanged, group_id=v.group,
            cause=st.sampled_from(["canonicalize", "backfill", "reprocess"]),
            changes=v.few(st.builds(RelationRetyped, uuid=v.ids, relation_type=v.texts)),
        ),
        step=_step_relation_types_changed,
    ),
    EntityTypesChanged: EventKind(
        sample=lambda g: EntityTypesChanged(
            group_id=g, cause="restamp",
            changes=[EntityRetyped(uuid="e1", labels=["Entity", "Person"])],
        ),
        strategy=lambda v: st.builds(
            EntityTypesChanged, group_id=v.group, cause=st.sampled_from(["reprocess", "restamp"]),
            changes=v.few(st.builds(EntityRetyped, uuid=v.ids, labels=v.few(v.texts))),
        ),
        step=_step_entity_types_changed,
    ),
    CorrectionsApplied: EventKind(
        sample=lambda g: CorrectionsApplied(
            group_id=g, correction_ids=["c1"], merges=[_merge()],
            retractions=[EdgeInvalidation(uuid="r1", invalid_at=TS)],
        ),
        strategy=lambda v: st.builds(
            CorrectionsApplied, group_id=v.group, correction_ids=v.few(v.ids),
            merges=v.few(v.merge()), retractions=v.few(v.invalidation()),
        ),
        step=_step_corrections_applied,
    ),
    CrossGroupEdgeAdded: EventKind(
        sample=lambda g: CrossGroupEdgeAdded(group_id=g, edge=_edge("x1")),
        strategy=lambda v: st.builds(CrossGroupEdgeAdded, group_id=v.group, edge=v.edge()),
        step=_step_cross_group_edge_added,
    ),
    PointersRebound: EventKind(
        sample=lambda g: PointersRebound(
            group_id=g, source_group_id="other",
            rebinds=[PointerRebind(uuid="x1", source_uuid="e1", target_uuid="", attributes="{}")],
        ),
        strategy=lambda v: st.builds(
            PointersRebound, group_id=v.group, source_group_id=v.texts,
            rebinds=v.few(st.builds(
                PointerRebind, uuid=v.ids, source_uuid=v.ids, target_uuid=v.endpoints,
                attributes=v.attributes, invalid_at=v.maybe_times,
            )),
        ),
        step=_step_pointers_rebound,
    ),
    SourceRegistered: EventKind(
        sample=lambda g: SourceRegistered(
            group_id=g, root="/home/ada/notes", label="notes", kind="folder", synced_at=TS
        ),
        strategy=lambda v: st.builds(
            SourceRegistered, group_id=v.group, root=v.texts, label=v.texts,
            kind=st.sampled_from(["folder", "file"]), synced_at=v.times,
        ),
        step=_step_source_registered,
    ),
    SourceRemoved: EventKind(
        sample=lambda g: SourceRemoved(group_id=g, root="/home/ada/notes"),
        strategy=lambda v: st.builds(SourceRemoved, group_id=v.group, root=v.texts),
        step=_step_source_removed,
    ),
    StructureDeclared: EventKind(
        sample=lambda g: StructureDeclared(
            group_id=g, root="/home/ada/notes", label="notes",
            entities_upserted=[_entity("d1")], entities_removed=["d0"],
            edges_upserted=[_edge("l1")], edges_removed=["l0"],
            mentions_added=[MentionRecord(episode_uuid="ep1", entity_uuid="d1")],
            mentions_removed=[MentionRecord(episode_uuid="ep1", entity_uuid="d0")],
        ),
        strategy=lambda v: st.builds(
            StructureDeclared, group_id=v.group, root=v.texts, label=v.texts,
            entities_upserted=v.few(v.entity()), entities_removed=v.few(v.ids),
            edges_upserted=v.few(v.edge()), edges_removed=v.few(v.ids),
            mentions_added=v.few(v.mention()), mentions_removed=v.few(v.mention()),
        ),
        step=_step_structure_declared,
    ),
}  # fmt: skip

#: The event types, from the union itself: what every check here counts against.
UNION: tuple[type[Event], ...] = get_args(Event)


def tag_of(cls: type[Event]) -> str:
    """The type's tag (its ``type`` on the stream)."""
    tag = cls.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def unregistered() -> list[str]:
    """The names of the union's members with no entry (a new type not added here)."""
    return [cls.__name__ for cls in UNION if cls not in KINDS]


def unknown() -> list[str]:
    """The names of entries that are no member of the union (a type removed from it)."""
    return [cls.__name__ for cls in KINDS if cls not in UNION]


def _kinds() -> list[tuple[type[Event], EventKind]]:
    missing = unregistered()
    assert not missing, f"event types with no entry in tests/event_registry.py: {missing}"
    return [(cls, KINDS[cls]) for cls in UNION]


def sample_events(group_id: str = "g") -> list[Event]:
    """One event of each type, in the union's order, every nested record used at least once."""
    return [kind.sample(group_id) for _, kind in _kinds()]


def strategies(values: Values) -> dict[str, st.SearchStrategy[Event]]:
    """Each type's strategy over ``values``, by tag."""
    return {tag_of(cls): kind.strategy(values) for cls, kind in _kinds()}


def record_history(ws: Workspace, group: str) -> list[str]:
    """Run every type's step in ``ws``, in the union's order, on ``group`` (a step may use
    groups named after it, ``<group>-…``); the groups written, sorted."""
    for _, kind in _kinds():
        kind.step(ws, group)
    return sorted(g for g in ws.store.groups() if g == group or g.startswith(f"{group}-"))
