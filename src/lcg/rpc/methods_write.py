"""Write methods: assertion, ingestion, deletion, merge, cross-group edges (scope ``write``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from lcg.errors import InvalidParamsError
from lcg.ingest import assertion, cross_group, deletion, merge
from lcg.ingest._common import parse_timestamp
from lcg.rpc.methods_extract import extraction_service
from lcg.rpc.params import (
    bool_param,
    group_id,
    required_group_ids,
    str_param,
    uuid_list,
)
from lcg.rpc.registry import CallContext, MethodSpec, ParamSpec

if TYPE_CHECKING:
    from lcg.rpc.app import ServiceApp

__all__ = ["write_methods"]


class DeletedStatus(msgspec.Struct, kw_only=True):
    """``{status: "deleted"}``."""

    status: str = "deleted"


_GROUP = ParamSpec("group_id", "string", description="group (default liminis)")
_GROUP_IDS_REQ = ParamSpec(
    "group_ids", "array", required=True, items="string", description="groups (non-empty)"
)


def write_methods(app: ServiceApp) -> list[MethodSpec]:
    """The write methods of ``app``."""

    async def assert_entity(ctx: CallContext, p: dict[str, Any]) -> msgspec.Struct:
        name = p.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InvalidParamsError("name is required and must be a non-empty string")
        uuid = p.get("entity_uuid")
        return await app.run_write(
            assertion.assert_entity,
            app.ws,
            name=name,
            group_id=group_id(p),
            entity_uuid=uuid if isinstance(uuid, str) and uuid else None,
            labels=p.get("labels"),
            summary=str_param(p, "summary"),
            attributes=p.get("attributes"),
        )

    async def assert_relationship(ctx: CallContext, p: dict[str, Any]) -> msgspec.Struct:
        valid_raw = p.get("valid_at")
        valid_at = (
            parse_timestamp(valid_raw, field="valid_at")
            if isinstance(valid_raw, str) and valid_raw
            else None
        )
        rtype = p.get("relation_type")
        return await app.run_write(
            assertion.assert_relationship,
            app.ws,
            source_name=str_param(p, "source_name"),
            target_name=str_param(p, "target_name"),
            predicate=str_param(p, "predicate"),
            group_id=group_id(p),
            fact=str_param(p, "fact"),
            attributes=p.get("attributes"),
            relation_type=rtype if isinstance(rtype, str) else None,
            valid_at=valid_at,
        )

    async def process_chunk(ctx: CallContext, p: dict[str, Any]) -> msgspec.Struct:
        chunk_text = p.get("chunk_text")
        if not isinstance(chunk_text, str) or not chunk_text:
            raise InvalidParamsError("chunk_text is required and must be non-empty")
        chunk_id = p.get("chunk_id")
        if not isinstance(chunk_id, str) or not chunk_id:
            raise InvalidParamsError("chunk_id is required")
        source_file = p.get("source_file")
        if not isinstance(source_file, str) or not source_file:
            raise InvalidParamsError("source_file is required")
        ref = p.get("reference_time")
        return await app.run_write(
            extraction_service(app).process_chunk,
            app.ws,
            chunk_text=chunk_text,
            chunk_id=chunk_id,
            source_file=source_file,
            group_id=group_id(p),
            reference_time=ref if isinstance(ref, str) else None,
            advisory_max_chars=app.config.chunk_text_advisory_max_chars,
        )

    async def add_episode(ctx: CallContext, p: dict[str, Any]) -> msgspec.Struct:
        return await app.run_write(
            extraction_service(app).add_episode,
            app.ws,
            name=str_param(p, "name"),
            episode_body=str_param(p, "episode_body"),
            source=str_param(p, "source", "text"),
            source_description=str_param(p, "source_description"),
            reference_time=str_param(p, "reference_time"),
            group_id=group_id(p),
        )

    async def delete_episode(ctx: CallContext, p: dict[str, Any]) -> DeletedStatus:
        await app.run_write(deletion.delete_episode, app.ws, str_param(p, "episode_uuid"))
        return DeletedStatus()

    async def delete_by_source(ctx: CallContext, p: dict[str, Any]) -> msgspec.Struct:
        source = p.get("source_file")
        if not isinstance(source, str) or not source:
            raise InvalidParamsError("source_file is required")
        groups = required_group_ids(p)
        return await app.run_write(deletion.delete_by_source, app.ws, source, groups)

    async def delete_chunk(ctx: CallContext, p: dict[str, Any]) -> msgspec.Struct:
        chunk_id = p.get("chunk_id")
        if not isinstance(chunk_id, str) or not chunk_id:
            raise InvalidParamsError("chunk_id is required")
        groups = required_group_ids(p)
        return await app.run_write(deletion.delete_chunk_episode, app.ws, chunk_id, groups)

    async def clear_all(ctx: CallContext, p: dict[str, Any]) -> msgspec.Struct:
        return await app.run_write(
            deletion.clear_all,
            app.ws,
            confirm=p.get("confirm") is True,
            preserve_wal=bool_param(p, "preserve_wal", False),
        )

    async def merge_entities(ctx: CallContext, p: dict[str, Any]) -> msgspec.Struct:
        cu = p.get("canonical_uuid")
        cn = p.get("canonical_name")
        return await app.run_write(
            merge.merge_entities,
            app.ws,
            group_id=group_id(p),
            canonical_uuid=cu if isinstance(cu, str) and cu else None,
            canonical_name=cn if isinstance(cn, str) and cn else None,
            alias_uuids=uuid_list(p, "alias_uuids"),
            alias_names=uuid_list(p, "alias_names"),
            merge_all_by_name=bool_param(p, "merge_all_by_name", False),
            dry_run=bool_param(p, "dry_run", False),
        )

    async def add_cross_group_edge(ctx: CallContext, p: dict[str, Any]) -> msgspec.Struct:
        rtype = p.get("relation_type")
        valid = p.get("valid_at")
        return await app.run_write(
            cross_group.add_cross_group_edge,
            app.ws,
            group_id=group_id(p),
            source=p.get("source"),
            target=p.get("target"),
            name=str_param(p, "name"),
            fact=str_param(p, "fact"),
            valid_at=valid if isinstance(valid, str) and valid else None,
            relation_type=rtype if isinstance(rtype, str) and rtype else None,
        )

    return [
        MethodSpec(
            "knowledge_process_chunk",
            "write",
            process_chunk,
            "Ingest one chunk of a source file as an episode (text durable before extraction).",
            (
                ParamSpec("chunk_text", "string", required=True, description="the text"),
                ParamSpec("chunk_id", "string", required=True, description="stable chunk id"),
                ParamSpec("source_file", "string", required=True, description="source file"),
                _GROUP,
                ParamSpec("reference_time", "string", description="RFC 3339 (default now)"),
            ),
            writes=True,
        ),
        MethodSpec(
            "knowledge_add_episode",
            "write",
            add_episode,
            "Ingest an episode (text durable before extraction).",
            (
                ParamSpec("name", "string", required=True, description="episode name"),
                ParamSpec("episode_body", "string", required=True, description="the text"),
                ParamSpec("source", "string", description="text, json or message"),
                ParamSpec("source_description", "string", description="where it came from"),
                ParamSpec("reference_time", "string", description="RFC 3339 (default now)"),
                _GROUP,
            ),
            writes=True,
        ),
        MethodSpec(
            "knowledge_assert_entity",
            "write",
            assert_entity,
            "Create or update an entity by uuid or exact name.",
            (
                ParamSpec("name", "string", required=True, description="entity name"),
                ParamSpec("entity_uuid", "string", description="update this entity"),
                _GROUP,
                ParamSpec("labels", "array", items="string", description="type labels"),
                ParamSpec("summary", "string", description="summary text"),
                ParamSpec("attributes", "object", description="attributes object"),
            ),
            writes=True,
        ),
        MethodSpec(
            "knowledge_assert_relationship",
            "write",
            assert_relationship,
            "Create or update the relationship (source, predicate, target) in a group.",
            (
                ParamSpec("source_name", "string", required=True, description="source entity"),
                ParamSpec("target_name", "string", required=True, description="target entity"),
                ParamSpec("predicate", "string", required=True, description="relationship name"),
                _GROUP,
                ParamSpec("fact", "string", description="the fact sentence"),
                ParamSpec("attributes", "object", description="attributes object"),
                ParamSpec("relation_type", "string", description="SCREAMING_SNAKE type"),
                ParamSpec("valid_at", "string", description="RFC 3339 time it became true"),
            ),
            writes=True,
        ),
        MethodSpec(
            "knowledge_delete_episode",
            "write",
            delete_episode,
            "Delete one episode (its entities stay).",
            (ParamSpec("episode_uuid", "string", required=True, description="episode uuid"),),
            writes=True,
        ),
        MethodSpec(
            "knowledge_delete_by_source",
            "write",
            delete_by_source,
            "Delete every episode of a source file.",
            (
                ParamSpec("source_file", "string", required=True, description="source file"),
                _GROUP_IDS_REQ,
            ),
            writes=True,
        ),
        MethodSpec(
            "knowledge_delete_chunk_episode",
            "write",
            delete_chunk,
            "Delete the episode(s) of one chunk id.",
            (
                ParamSpec("chunk_id", "string", required=True, description="chunk id"),
                _GROUP_IDS_REQ,
            ),
            writes=True,
        ),
        MethodSpec(
            "knowledge_clear_all",
            "write",
            clear_all,
            "Empty the whole workspace (confirm required).",
            (
                ParamSpec("confirm", "boolean", required=True, description="must be true"),
                ParamSpec("preserve_wal", "boolean", description="keep the streams"),
            ),
            writes=True,
        ),
        MethodSpec(
            "knowledge_merge_entities",
            "write",
            merge_entities,
            "Merge alias entities into a canonical one, rewriting their relationships.",
            (
                ParamSpec("canonical_uuid", "string", description="canonical entity"),
                ParamSpec("canonical_name", "string", description="canonical by exact name"),
                ParamSpec("alias_uuids", "array", items="string", description="aliases"),
                ParamSpec("alias_names", "array", items="string", description="aliases by name"),
                ParamSpec("merge_all_by_name", "boolean", description="all same-name entities"),
                _GROUP,
                ParamSpec("dry_run", "boolean", description="plan only"),
            ),
            writes=True,
        ),
        MethodSpec(
            "knowledge_add_cross_group_edge",
            "write",
            add_cross_group_edge,
            "Add a relationship whose endpoints may live in other groups.",
            (
                ParamSpec("name", "string", description="relationship name"),
                ParamSpec("source", "object", required=True, description="endpoint"),
                ParamSpec("target", "object", required=True, description="endpoint"),
                _GROUP,
                ParamSpec("fact", "string", description="the fact sentence"),
                ParamSpec("valid_at", "string", description="RFC 3339"),
                ParamSpec("relation_type", "string", description="SCREAMING_SNAKE type"),
            ),
            writes=True,
        ),
    ]
