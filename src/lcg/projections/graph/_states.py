"""The overlay's rows: the state of each touched entity, episode and edge, and their
conversions from database rows and to statement parameters. Timestamps are normalised
RFC 3339 strings (``…T….ffffffZ``); the statements cast them to ``TIMESTAMP``."""

from __future__ import annotations

import functools
import uuid as uuidlib
from datetime import datetime
from typing import Any, Final

import msgspec

from lcg import timestamps
from lcg.errors import ProjectionError
from lcg.events import EdgeRecord

__all__ = [
    "EdgeState",
    "EntityState",
    "EpisodeState",
    "edge_from_row",
    "edge_params",
    "entity_from_row",
    "episode_from_row",
    "mention_uuid",
    "norm_edge",
    "norm_ts",
    "ts_text",
]

#: Namespace of the deterministic MENTIONS uuids (uuid5 of ``"<episode>|<entity>"``).
_MENTION_NS: Final = uuidlib.UUID("5b0c7a52-52f8-4f55-9a1e-6f0e3a7c2d11")


class EntityState(msgspec.Struct, kw_only=True):
    """One entity row (mutable while a segment is applied)."""

    uuid: str
    name: str
    group_id: str
    labels: list[str]
    created_at: str | None
    summary: str
    attributes: str


class EpisodeState(msgspec.Struct, kw_only=True):
    """One episode row (mutable while a segment is applied)."""

    uuid: str
    name: str
    group_id: str
    created_at: str | None
    source: str
    source_description: str
    content: str
    valid_at: str | None
    entity_edges: list[str]
    content_hash: str
    extracted: bool


class EdgeState(msgspec.Struct, kw_only=True):
    group_id: str
    record: EdgeRecord


# ---- timestamps -----------------------------------------------------------------------


# Streams repeat timestamps (an extraction stamps all its rows alike); parsing dominates.
@functools.lru_cache(maxsize=65_536)
def norm_ts(value: str | None) -> str | None:
    """An event timestamp normalised to RFC 3339 UTC with microseconds (``""`` → ``None``)."""
    if value is None or value == "":
        return None
    try:
        return timestamps.normalize(value)
    except ValueError as exc:
        raise ProjectionError(f"invalid timestamp {value!r} in an event: {exc}") from exc


def ts_text(value: datetime | None) -> str | None:
    """A timestamp (naive = UTC) as RFC 3339 UTC with microseconds."""
    return None if value is None else timestamps.to_text(value)


def mention_uuid(episode_uuid: str, entity_uuid: str) -> str:
    """The deterministic uuid of the MENTIONS relationship from an episode to an entity."""
    return str(uuidlib.uuid5(_MENTION_NS, f"{episode_uuid}|{entity_uuid}"))


def norm_edge(record: EdgeRecord, *, episodes: list[str] | None = None) -> EdgeRecord:
    return msgspec.structs.replace(
        record,
        valid_at=norm_ts(record.valid_at),
        invalid_at=norm_ts(record.invalid_at),
        expired_at=norm_ts(record.expired_at),
        created_at=norm_ts(record.created_at) or "",
        episodes=list(record.episodes if episodes is None else episodes),
    )


def edge_from_row(row: list[Any]) -> tuple[str, EdgeRecord]:
    """``(group_id, record)`` of a row selected with ``EDGE_COLUMNS``."""
    return row[12], EdgeRecord(
        uuid=row[0],
        name=row[1] or "",
        source_uuid=row[2],
        target_uuid=row[3],
        fact=row[4] or "",
        relation_type=row[5],
        valid_at=ts_text(row[6]),
        invalid_at=ts_text(row[7]),
        expired_at=ts_text(row[8]),
        episodes=list(row[9] or []),
        attributes=row[10] if row[10] is not None else "{}",
        created_at=ts_text(row[11]) or "",
    )


def entity_from_row(row: list[Any]) -> EntityState:
    return EntityState(
        uuid=row[0],
        name=row[1] or "",
        group_id=row[2] or "",
        labels=list(row[3] or []),
        created_at=ts_text(row[4]),
        summary=row[5] or "",
        attributes=row[6] if row[6] is not None else "{}",
    )


def episode_from_row(row: list[Any]) -> EpisodeState:
    return EpisodeState(
        uuid=row[0],
        name=row[1] or "",
        group_id=row[2] or "",
        created_at=ts_text(row[3]),
        source=row[4] or "",
        source_description=row[5] or "",
        content=row[6] or "",
        valid_at=ts_text(row[7]),
        entity_edges=list(row[8] or []),
        content_hash=row[9] or "",
        extracted=bool(row[10]),
    )


def edge_params(edge: EdgeState) -> dict[str, Any]:
    """The parameters of one ``RelatesToNode_`` (``EDGE_PROPS``, ``CREATE_REL_ONE``)."""
    r = edge.record
    return {
        "uuid": r.uuid,
        "name": r.name,
        "group_id": edge.group_id,
        "created_at": r.created_at or None,
        "fact": r.fact,
        "episodes": list(r.episodes),
        "expired_at": r.expired_at,
        "valid_at": r.valid_at,
        "invalid_at": r.invalid_at,
        "attributes": r.attributes,
        "relation_type": r.relation_type,
        "source_uuid": r.source_uuid,
        "target_uuid": r.target_uuid,
    }
