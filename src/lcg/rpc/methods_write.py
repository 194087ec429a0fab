"""Write methods: assertion, ingestion, deletion, merge, cross-group edges (scope ``write``)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from lcg.ingest import assertion, cross_group, deletion, merge, parse_timestamp
from lcg.rpc.host import ServiceHost
from lcg.rpc.methods_extract import extraction_service
from lcg.rpc.params import GroupId, RequiredGroupIds, unique, write_group
from lcg.rpc.registry import CallContext, MethodDef, Params

__all__ = ["WRITE_METHODS"]


class DeletedStatus(msgspec.Struct, kw_only=True):
    """``{status: "deleted"}``."""

    status: str = "deleted"


#: A string that must hold a non-blank character.
_NonBlank = Annotated[str, Meta(pattern=r"\S")]
_RFC3339 = "RFC 3339 time"


def _text(description: str, required: str | None = None) -> Any:
    """A non-empty string parameter (``required`` = the reference's wording when missing)."""
    extra = {"required": required} if required else None
    return Meta(min_length=1, description=description, extra=extra)


class ProcessChunkParams(Params):
    """``knowledge_process_chunk``."""

    chunk_text: Annotated[str, _text("the text", "chunk_text is required and must be non-empty")]
    chunk_id: Annotated[str, _text("stable chunk id (the episode's name)")]
    source_file: Annotated[str, _text("source file")]
    group_id: GroupId = None
    reference_time: Annotated[str | None, Meta(description=_RFC3339 + " (default now)")] = None
    examples: ClassVar[dict[str, Any]] = {
        "chunk_text": "Apollo 11 landed on the Moon in July 1969.",
        "chunk_id": "mission-1",
        "source_file": "mission.txt",
    }


class AddEpisodeParams(Params):
    """``knowledge_add_episode``."""

    name: Annotated[str, Meta(description="episode name")]
    episode_body: Annotated[str, Meta(description="the text")]
    source: Annotated[str, Meta(description="text, json or message")] = "text"
    source_description: Annotated[str, Meta(description="where it came from")] = ""
    reference_time: Annotated[str, Meta(description=_RFC3339 + " (default: none)")] = ""
    group_id: GroupId = None
    examples: ClassVar[dict[str, Any]] = {
        "name": "notes-1",
        "episode_body": "Neil Armstrong commanded Apollo 11.",
    }


class AssertEntityParams(Params):
    """``knowledge_assert_entity``."""

    name: Annotated[
        _NonBlank,
        Meta(
            description="entity name",
            extra={"required": "name is required and must be a non-empty string"},
        ),
    ]
    entity_uuid: Annotated[str | None, Meta(description="update this entity")] = None
    group_id: GroupId = None
    labels: Annotated[list[str] | None, Meta(description="type labels")] = None
    summary: Annotated[str, Meta(description="summary text")] = ""
    attributes: Annotated[dict[str, Any] | None, Meta(description="attributes object")] = None
    examples: ClassVar[dict[str, Any]] = {"name": "Neil Armstrong"}


class AssertRelationshipParams(Params):
    """``knowledge_assert_relationship``."""

    source_name: Annotated[_NonBlank, Meta(description="source entity (by name, in group)")]
    target_name: Annotated[_NonBlank, Meta(description="target entity (by name, in group)")]
    predicate: Annotated[_NonBlank, Meta(description="relationship name")]
    group_id: GroupId = None
    fact: Annotated[str, Meta(description="the fact sentence")] = ""
    attributes: Annotated[dict[str, Any] | None, Meta(description="attributes object")] = None
    relation_type: Annotated[str | None, Meta(description="SCREAMING_SNAKE type")] = None
    valid_at: Annotated[str | None, Meta(description=_RFC3339 + " it became true")] = None
    examples: ClassVar[dict[str, Any]] = {
        "source_name": "Neil Armstrong",
        "target_name": "Apollo 11",
        "predicate": "COMMANDED",
    }


class DeleteEpisodeParams(Params):
    """``knowledge_delete_episode``."""

    episode_uuid: Annotated[str, Meta(description="episode uuid")]


class DeleteBySourceParams(Params):
    """``knowledge_delete_by_source``."""

    source_file: Annotated[str, _text("source file")]
    group_ids: RequiredGroupIds
    examples: ClassVar[dict[str, Any]] = {"source_file": "mission.txt"}


class DeleteChunkParams(Params):
    """``knowledge_delete_chunk_episode``."""

    chunk_id: Annotated[str, _text("chunk id")]
    group_ids: RequiredGroupIds


class ClearAllParams(Params):
    """``knowledge_clear_all``."""

    confirm: Annotated[
        bool,
        Meta(
            description="must be true",
            extra={"required": "Must set 'confirm' to true to clear graph"},
        ),
    ]
    preserve_wal: Annotated[bool, Meta(description="keep the streams")] = False


class MergeEntitiesParams(Params):
    """``knowledge_merge_entities``."""

    canonical_uuid: Annotated[str | None, Meta(description="canonical entity")] = None
    canonical_name: Annotated[str | None, Meta(description="canonical by exact name")] = None
    alias_uuids: Annotated[list[str] | None, Meta(description="aliases")] = None
    alias_names: Annotated[list[str] | None, Meta(description="aliases by name")] = None
    merge_all_by_name: Annotated[bool, Meta(description="all same-name entities")] = False
    group_id: GroupId = None
    dry_run: Annotated[bool, Meta(description="plan only")] = False
    examples: ClassVar[dict[str, Any]] = {
        "canonical_name": "Neil Armstrong",
        "merge_all_by_name": True,
        "dry_run": True,
    }


class CrossGroupEdgeParams(Params):
    """``knowledge_add_cross_group_edge``."""

    source: Annotated[
        dict[str, Any], Meta(description="{uuid} or {source_group_id, endpoint_name}")
    ]
    target: Annotated[
        dict[str, Any], Meta(description="{uuid} or {source_group_id, endpoint_name}")
    ]
    name: Annotated[str, Meta(description="relationship name")] = ""
    group_id: GroupId = None
    fact: Annotated[str, Meta(description="the fact sentence")] = ""
    valid_at: Annotated[str | None, Meta(description=_RFC3339)] = None
    relation_type: Annotated[str | None, Meta(description="SCREAMING_SNAKE type")] = None
    examples: ClassVar[dict[str, Any]] = {
        "name": "MEMBER_OF",
        "source": {"uuid": "8c1f0d2e-…"},
        "target": {"source_group_id": "people", "endpoint_name": "NASA"},
    }


async def assert_entity(
    app: ServiceHost, ctx: CallContext, p: AssertEntityParams
) -> msgspec.Struct:
    """``knowledge_assert_entity``."""
    return await app.run_write(
        assertion.assert_entity,
        app.ws,
        name=p.name,
        group_id=write_group(p.group_id),
        entity_uuid=p.entity_uuid or None,
        labels=p.labels,
        summary=p.summary,
        attributes=p.attributes,
    )


async def assert_relationship(
    app: ServiceHost, ctx: CallContext, p: AssertRelationshipParams
) -> msgspec.Struct:
    """``knowledge_assert_relationship``."""
    valid_at = parse_timestamp(p.valid_at, field="valid_at") if p.valid_at else None
    return await app.run_write(
        assertion.assert_relationship,
        app.ws,
        source_name=p.source_name,
        target_name=p.target_name,
        predicate=p.predicate,
        group_id=write_group(p.group_id),
        fact=p.fact,
        attributes=p.attributes,
        relation_type=p.relation_type,
        valid_at=valid_at,
    )


async def process_chunk(
    app: ServiceHost, ctx: CallContext, p: ProcessChunkParams
) -> msgspec.Struct:
    """``knowledge_process_chunk``."""
    return await app.run_write(
        extraction_service(app).process_chunk,
        app.ws,
        chunk_text=p.chunk_text,
        chunk_id=p.chunk_id,
        source_file=p.source_file,
        group_id=write_group(p.group_id),
        reference_time=p.reference_time,
        advisory_max_chars=app.config.chunk_text_advisory_max_chars,
    )


async def add_episode(app: ServiceHost, ctx: CallContext, p: AddEpisodeParams) -> msgspec.Struct:
    """``knowledge_add_episode``."""
    return await app.run_write(
        extraction_service(app).add_episode,
        app.ws,
        name=p.name,
        episode_body=p.episode_body,
        source=p.source,
        source_description=p.source_description,
        reference_time=p.reference_time,
        group_id=write_group(p.group_id),
    )


async def delete_episode(
    app: ServiceHost, ctx: CallContext, p: DeleteEpisodeParams
) -> DeletedStatus:
    """``knowledge_delete_episode``."""
    await app.run_write(deletion.delete_episode, app.ws, p.episode_uuid)
    return DeletedStatus()


async def delete_by_source(
    app: ServiceHost, ctx: CallContext, p: DeleteBySourceParams
) -> msgspec.Struct:
    """``knowledge_delete_by_source``."""
    return await app.run_write(
        deletion.delete_by_source, app.ws, p.source_file, unique(p.group_ids)
    )


async def delete_chunk(app: ServiceHost, ctx: CallContext, p: DeleteChunkParams) -> msgspec.Struct:
    """``knowledge_delete_chunk_episode``."""
    return await app.run_write(
        deletion.delete_chunk_episode, app.ws, p.chunk_id, unique(p.group_ids)
    )


async def clear_all(app: ServiceHost, ctx: CallContext, p: ClearAllParams) -> msgspec.Struct:
    """``knowledge_clear_all``."""
    return await app.run_write(
        deletion.clear_all, app.ws, confirm=p.confirm, preserve_wal=p.preserve_wal
    )


async def merge_entities(
    app: ServiceHost, ctx: CallContext, p: MergeEntitiesParams
) -> msgspec.Struct:
    """``knowledge_merge_entities``."""
    return await app.run_write(
        merge.merge_entities,
        app.ws,
        group_id=write_group(p.group_id),
        canonical_uuid=p.canonical_uuid or None,
        canonical_name=p.canonical_name or None,
        alias_uuids=p.alias_uuids or [],
        alias_names=p.alias_names or [],
        merge_all_by_name=p.merge_all_by_name,
        dry_run=p.dry_run,
    )


async def add_cross_group_edge(
    app: ServiceHost, ctx: CallContext, p: CrossGroupEdgeParams
) -> msgspec.Struct:
    """``knowledge_add_cross_group_edge``."""
    # Checked here as for knowledge_assert_relationship: a time the projections cannot store
    # is -32602, never a line in the stream (ADR 0150).
    valid_at = parse_timestamp(p.valid_at, field="valid_at") if p.valid_at else None
    return await app.run_write(
        cross_group.add_cross_group_edge,
        app.ws,
        group_id=write_group(p.group_id),
        source=p.source,
        target=p.target,
        name=p.name,
        fact=p.fact,
        valid_at=valid_at,
        relation_type=p.relation_type or None,
    )


#: The write methods of ``app``.
WRITE_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_process_chunk",
        "write",
        process_chunk,
        "Ingest one chunk of a source file as an episode (text durable before extraction).",
        ProcessChunkParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_add_episode",
        "write",
        add_episode,
        "Ingest an episode (text durable before extraction).",
        AddEpisodeParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_assert_entity",
        "write",
        assert_entity,
        "Create or update an entity by uuid or exact name.",
        AssertEntityParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_assert_relationship",
        "write",
        assert_relationship,
        "Create or update the relationship (source, predicate, target) in a group.",
        AssertRelationshipParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_delete_episode",
        "write",
        delete_episode,
        "Delete one episode (its entities stay).",
        DeleteEpisodeParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_delete_by_source",
        "write",
        delete_by_source,
        "Delete every episode of a source file.",
        DeleteBySourceParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_delete_chunk_episode",
        "write",
        delete_chunk,
        "Delete the episode(s) of one chunk id.",
        DeleteChunkParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_clear_all",
        "write",
        clear_all,
        "Empty the whole workspace (confirm required).",
        ClearAllParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_merge_entities",
        "write",
        merge_entities,
        "Merge alias entities into a canonical one, rewriting their relationships.",
        MergeEntitiesParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_add_cross_group_edge",
        "write",
        add_cross_group_edge,
        "Add a relationship whose endpoints may live in other groups.",
        CrossGroupEdgeParams,
        writes=True,
    ),
)
