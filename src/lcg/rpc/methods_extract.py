"""Extraction and curation methods: ``knowledge_extract_pending``, relation and entity typing,
summary-embedding backfill and the corrections file (lcg-api §3.7, §3.8, §3.12).

Streaming methods forward their pass's progress frames (``phase / processed / total /
total_mutations``) when the caller passes ``_progress_token``. Soft errors (``success:
false`` results) and hard errors (JSON-RPC errors) follow the reference per method: the
reprocess passes and the corrections are soft; canonicalize and backfill are hard.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import msgspec
from msgspec import Meta

from lcg.ingest import CurationFrame, ExtractionService, curation
from lcg.rpc.host import ServiceHost
from lcg.rpc.params import GROUP_PARAM, GroupId, PositiveInt, RequiredGroupId, write_group
from lcg.rpc.registry import CallContext, MethodDef, NoParams, Params, Result

__all__ = ["EXTRACTION_METHODS", "extraction_service"]

T = TypeVar("T")

_Dry = Annotated[bool, Meta(description="plan only, change nothing")]


class ExtractPendingParams(Params):
    """``knowledge_extract_pending``."""

    group_id: (
        Annotated[
            str,
            Meta(min_length=1, description="one group (default: every group)", extra=GROUP_PARAM),
        ]
        | None
    ) = None
    limit: Annotated[PositiveInt | None, Meta(description="at most this many episodes")] = None


class GroupRequiredParams(Params):
    """``knowledge_backfill_relation_types`` and ``knowledge_backfill_summary_embeddings``."""

    group_id: RequiredGroupId
    dry_run: _Dry = False


class CanonicalizeParams(GroupRequiredParams):
    """``knowledge_canonicalize_relations``."""

    embedding_threshold: Annotated[
        float, Meta(ge=0.0, le=1.0, description="fact/type cosine, 0-1 (default 0.7)")
    ] = 0.7


class ReprocessParams(Params):
    """``knowledge_reprocess_entity_types`` and ``knowledge_reprocess_relation_types``."""

    group_id: GroupId = None
    scope: Annotated[str, Meta(description="untyped (default), off_ontology or all")] = "untyped"
    dry_run: _Dry = False


class DryRunParams(Params):
    """``knowledge_apply_corrections``."""

    dry_run: _Dry = False


def extraction_service(app: ServiceHost) -> ExtractionService:
    """The app's ``ExtractionService`` (``app.extraction``); built from the config and the
    configured extractor on first use when the app does not hold one."""
    if app.extraction is not None:
        return app.extraction
    from lcg.workspace import make_extractor

    built = ExtractionService.from_config(app.config, make_extractor(app.config))
    app.extraction = built
    return built


async def _call(
    app: ServiceHost,
    ctx: CallContext,
    fn: Callable[..., T],
    *args: Any,
    write: bool = True,
    **kwargs: Any,
) -> T:
    """Run ``fn`` in a worker thread; with progress enabled it gets a ``progress`` callback
    that sends each frame before the pass continues (a gone client aborts the pass)."""
    if ctx.progress_enabled:
        loop = asyncio.get_running_loop()

        async def emit(frame: CurationFrame) -> None:
            await ctx.progress(frame)

        def send(frame: CurationFrame) -> None:
            asyncio.run_coroutine_threadsafe(emit(frame), loop).result()

        kwargs["progress"] = send
    runner = app.run_write if write else app.run
    return await runner(fn, *args, **kwargs)


async def extract_pending(app: ServiceHost, ctx: CallContext, p: ExtractPendingParams) -> Result:
    """``knowledge_extract_pending``."""
    service = extraction_service(app)
    gid, limit = p.group_id, p.limit
    ws = app.ws

    def work(progress: Callable[[CurationFrame], None] | None = None) -> msgspec.Struct:
        def tick(done: int, total: int) -> None:
            if progress is not None:
                progress(CurationFrame(phase="extracting", processed=done, total=total))

        return service.extract_pending(ws, gid, limit, tick if progress else None)

    return await _call(app, ctx, work)


async def canonicalize(app: ServiceHost, ctx: CallContext, p: CanonicalizeParams) -> Result:
    """``knowledge_canonicalize_relations``."""
    gid, dry, threshold = p.group_id, p.dry_run, p.embedding_threshold
    onto = extraction_service(app).ontologies.for_group(gid)
    return await _call(
        app,
        ctx,
        curation.canonicalize_relations,
        app.ws,
        onto,
        group_id=gid,
        dry_run=dry,
        embedding_threshold=threshold,
    )


async def backfill_relation_types(
    app: ServiceHost, ctx: CallContext, p: GroupRequiredParams
) -> Result:
    """``knowledge_backfill_relation_types``."""
    return await _call(
        app,
        ctx,
        curation.backfill_relation_types,
        app.ws,
        group_id=p.group_id,
        dry_run=p.dry_run,
    )


async def reprocess_entity_types(app: ServiceHost, ctx: CallContext, p: ReprocessParams) -> Result:
    """``knowledge_reprocess_entity_types``."""
    gid = write_group(p.group_id)
    service = extraction_service(app)
    return await _call(
        app,
        ctx,
        curation.reprocess_entity_types,
        app.ws,
        service.extractor,
        service.ontologies.for_group(gid),
        workspace_root=app.config.workspace_root,
        group_id=gid,
        scope=p.scope,
        dry_run=p.dry_run,
    )


async def reprocess_relation_types(
    app: ServiceHost, ctx: CallContext, p: ReprocessParams
) -> Result:
    """``knowledge_reprocess_relation_types``."""
    gid = write_group(p.group_id)
    service = extraction_service(app)
    return await _call(
        app,
        ctx,
        curation.reprocess_relation_types,
        app.ws,
        service.extractor,
        service.ontologies.for_group(gid),
        group_id=gid,
        scope=p.scope,
        dry_run=p.dry_run,
    )


async def backfill_summary_embeddings(
    app: ServiceHost, ctx: CallContext, p: GroupRequiredParams
) -> Result:
    """``knowledge_backfill_summary_embeddings``."""
    return await _call(
        app,
        ctx,
        curation.backfill_summary_embeddings,
        app.ws,
        group_id=p.group_id,
        dry_run=p.dry_run,
        write=False,
    )


async def validate_corrections(app: ServiceHost, ctx: CallContext, p: NoParams) -> Result:
    """``knowledge_validate_corrections``."""
    return await app.run(curation.validate_corrections, app.ws, app.config.workspace_root)


async def apply_corrections(app: ServiceHost, ctx: CallContext, p: DryRunParams) -> Result:
    """``knowledge_apply_corrections``."""
    return await app.run_write(
        curation.apply_corrections,
        app.ws,
        app.config.workspace_root,
        dry_run=p.dry_run,
    )


#: The extraction and curation methods of ``app``.
EXTRACTION_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_extract_pending",
        "write",
        extract_pending,
        "Extract the episodes stored without extraction (lite mode, failures), oldest first.",
        ExtractPendingParams,
        streaming=True,
        writes=True,
        own=True,
    ),
    MethodDef(
        "knowledge_canonicalize_relations",
        "write",
        canonicalize,
        "Map every relationship of a group onto the ontology's relation types.",
        CanonicalizeParams,
        streaming=True,
        writes=True,
    ),
    MethodDef(
        "knowledge_backfill_relation_types",
        "write",
        backfill_relation_types,
        "Deprecated: give untyped relationships a type from their name or fact.",
        GroupRequiredParams,
        streaming=True,
        writes=True,
    ),
    MethodDef(
        "knowledge_reprocess_entity_types",
        "write",
        reprocess_entity_types,
        "Classify a group's entities into the ontology's entity types with the LLM.",
        ReprocessParams,
        streaming=True,
        writes=True,
    ),
    MethodDef(
        "knowledge_reprocess_relation_types",
        "write",
        reprocess_relation_types,
        "Classify a group's relationships into the ontology's relation types with the LLM.",
        ReprocessParams,
        streaming=True,
        writes=True,
    ),
    MethodDef(
        "knowledge_backfill_summary_embeddings",
        "admin",
        backfill_summary_embeddings,
        "Report entity summary vectors (lcg derives them from the text: nothing to redo).",
        GroupRequiredParams,
        streaming=True,
    ),
    MethodDef(
        "knowledge_validate_corrections",
        "read",
        validate_corrections,
        "Check the workspace corrections file (.liminis/knowledge-corrections.yaml).",
        NoParams,
    ),
    MethodDef(
        "knowledge_apply_corrections",
        "write",
        apply_corrections,
        "Apply the unapplied entries of the corrections file and stamp them applied_at.",
        DryRunParams,
        writes=True,
    ),
)
