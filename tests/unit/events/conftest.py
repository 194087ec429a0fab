"""Fixtures for the event-stream unit tests: one sample event of every type."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

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
    MergedAlias,
    MergeOutcome,
    PointerRebind,
    PointersRebound,
    RelationRetyped,
    RelationshipAsserted,
    RelationTypesChanged,
)

TS = "2024-05-01T12:00:00.000000Z"


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


def sample_events(group_id: str = "g") -> list[Event]:
    """One event of each of the twelve types, every nested record used at least once."""
    merge = MergeOutcome(
        canonical_uuid="e1",
        canonical_created_at=TS,
        canonical_summary="s",
        aliases=[MergedAlias(uuid="e3", labels=["Entity", "Merged"], attributes="{}")],
        edges_created=[_edge("r9")],
        edges_invalidated=[EdgeInvalidation(uuid="r2", invalid_at=TS, reason="merged")],
    )
    return [
        EpisodeAdded(
            group_id=group_id,
            uuid="ep1",
            name="n",
            content="Ada met Bob.",
            created_at=TS,
            content_hash="h",
        ),
        EpisodeExtracted(
            group_id=group_id,
            episode_uuid="ep1",
            entities_created=[_entity()],
            entities_updated=[EntitySummaryUpdate(uuid="e2", summary="Bob")],
            edges_created=[_edge()],
            edges_restated=[EdgeRestated(uuid="r0", episode_uuid="ep1")],
            edges_invalidated=[EdgeInvalidation(uuid="r5", invalid_at=TS)],
            edges_dropped=[
                DroppedEdge(
                    source_name="A", target_name="Z", fact="f", unresolved_endpoint="target"
                )
            ],
            mentions=["e1", "e2"],
            model="scripted",
        ),
        EntityAsserted(group_id=group_id, entity=_entity(), created=True),
        RelationshipAsserted(group_id=group_id, edge=_edge(), created=False),
        EntitiesMerged(group_id=group_id, merge=merge),
        EpisodesDeleted(group_id=group_id, by="source", key="a.md", episode_uuids=["ep1"]),
        GroupPurged(group_id=group_id, reason="clear_all", entities=2, episodes=1, edges=1),
        RelationTypesChanged(
            group_id=group_id,
            cause="canonicalize",
            changes=[RelationRetyped(uuid="r1", relation_type="KNOWS")],
        ),
        EntityTypesChanged(
            group_id=group_id,
            cause="restamp",
            changes=[EntityRetyped(uuid="e1", labels=["Entity", "Person"])],
        ),
        CorrectionsApplied(
            group_id=group_id,
            correction_ids=["c1"],
            merges=[merge],
            retractions=[EdgeInvalidation(uuid="r1", invalid_at=TS)],
        ),
        CrossGroupEdgeAdded(group_id=group_id, edge=_edge("x1")),
        PointersRebound(
            group_id=group_id,
            source_group_id="other",
            rebinds=[PointerRebind(uuid="x1", source_uuid="e1", target_uuid="", attributes="{}")],
        ),
    ]


def episode(i: int, group_id: str = "g", size: int = 10) -> EpisodeAdded:
    """A small ``EpisodeAdded`` numbered ``i`` with ``size`` characters of content."""
    return EpisodeAdded(
        group_id=group_id, uuid=f"ep{i}", name=f"n{i}", content="x" * size, created_at=TS
    )


@pytest.fixture
def events() -> list[Event]:
    """One sample event of every type, for group ``g``."""
    return sample_events()


@pytest.fixture
def make_episode() -> Callable[..., EpisodeAdded]:
    """A factory of small numbered ``EpisodeAdded`` events."""
    return episode


@pytest.fixture
def gdir(wal_root: Path) -> Path:
    """The (not yet created) stream directory of group ``g``."""
    return wal_root / "g"
