"""The row shapes graph reads return, with the reference's field names (lcg-api §2.2).

Timestamps are rendered ``YYYY-MM-DD HH:MM:SS`` (UTC, seconds), as the reference renders
database timestamps. Embeddings are never part of a row.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from lcg.timestamps import render_seconds

__all__ = [
    "EdgeRow",
    "EntityRow",
    "EpisodeRow",
    "GraphCounts",
    "GroupCounts",
    "render_ts",
]


def render_ts(value: datetime | None) -> str | None:
    """A database timestamp as ``YYYY-MM-DD HH:MM:SS`` (``None`` stays ``None``)."""
    return None if value is None else render_seconds(value)


class EntityRow(msgspec.Struct, kw_only=True):
    """An entity as reads return it; the last two lists are filled only by enrichment."""

    uuid: str
    name: str
    group_id: str
    labels: list[str]
    created_at: str
    summary: str
    attributes: str
    episode_uuids: list[str] = []
    source_descriptions: list[str] = []


class EdgeRow(msgspec.Struct, kw_only=True):
    """A relationship as reads return it; an empty ``relation_type`` is ``None``."""

    uuid: str
    name: str
    source_node_uuid: str
    target_node_uuid: str
    group_id: str
    fact: str
    created_at: str
    valid_at: str | None
    invalid_at: str | None
    attributes: str
    relation_type: str | None
    episode_uuids: list[str] = []
    source_descriptions: list[str] = []


class EpisodeRow(msgspec.Struct, kw_only=True):
    """An episode as reads return it; ``entity_edges`` holds the uuids of its entities."""

    uuid: str
    name: str
    group_id: str
    created_at: str
    source: str
    source_description: str
    content: str
    valid_at: str | None
    entity_edges: list[str]


class GraphCounts(msgspec.Struct, frozen=True, kw_only=True):
    """What the graph holds (of one group, or of all): ``edges`` includes unbound ones."""

    entities: int = 0
    edges: int = 0
    episodes: int = 0
    pending_episodes: int = 0
    unbound_edges: int = 0


class GroupCounts(msgspec.Struct, frozen=True, kw_only=True):
    """What a purge of ``group_id`` would remove (the delete_by_group dry-run shape)."""

    group_id: str
    entities: int = 0
    episodes: int = 0
    edges: int = 0
