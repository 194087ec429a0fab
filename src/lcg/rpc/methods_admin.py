"""Health, status, Cypher and administration methods (scopes ``none``, ``read``, ``cypher``,
``admin``)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from lcg.errors import (
    DegradedError,
    LcgError,
    RequestError,
)
from lcg.ingest import cross_group, deletion
from lcg.projections import graph_records as gr
from lcg.query import check_read_only
from lcg.rpc.dispatch import State
from lcg.rpc.host import ServiceHost
from lcg.rpc.params import GROUP_PARAM, RequiredGroupIds, unique
from lcg.rpc.registry import CallContext, MethodDef, NoParams, Params
from lcg.workspace import StatusReport, build_status, degraded_status, verify_workspace

__all__ = ["ADMIN_METHODS", "RECOVERY_METHODS", "STATUS_METHODS"]


class Health(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The result of ``health_check``."""

    ok: bool
    healthy: bool
    state: str
    reason: str | None = None
    #: Texts whose vectors the service is still making, and its rate (ADR 0201): present
    #: only while there are some; BM25 answers for them meanwhile.
    vectors_pending: int | None = None
    vectors_per_s: float | None = None


class CypherRows(msgspec.Struct, kw_only=True):
    """``{rows: [[string]]}``."""

    rows: list[list[str]]


class IndicesBuilt(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_build_indices``."""

    status: str = "ok"
    indices_built: bool = True


class RecoverResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The result of ``knowledge_recover`` (soft error: ``success: false`` and ``error``)."""

    strategy: str
    success: bool
    # No default, so it is always sent (``omit_defaults`` only drops ``error: null``).
    restart_required: bool
    error: str | None = None


class RecoverFullResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_recover_full`` when it ran (or found nothing to do)."""

    success: bool = True
    recovery_needed: bool
    episodes_before: int
    mutations_replayed: int
    episodes_after: int
    indexes_rebuilt: bool


class RecoverFullFailed(msgspec.Struct, kw_only=True):
    """The soft error of ``knowledge_recover_full``: ``{success: false, error}``."""

    success: bool = False
    error: str


class Closed(msgspec.Struct, kw_only=True):
    """``{status: "closed"}``."""

    status: str = "closed"


class CypherParams(Params):
    """``knowledge_query_cypher``."""

    query: Annotated[str, Meta(description="read-only Cypher")]
    examples: ClassVar[dict[str, Any]] = {"query": "MATCH (e:Entity) RETURN e.name LIMIT 5"}


class DeleteByGroupParams(Params):
    """``knowledge_delete_by_group``."""

    group_ids: RequiredGroupIds
    confirm: Annotated[bool, Meta(description="must be true to purge")] = False
    dry_run: Annotated[bool, Meta(description="counts only")] = False
    examples: ClassVar[dict[str, Any]] = {"group_ids": ["scratch"], "dry_run": True}


class RebindParams(Params):
    """``knowledge_rebind_pointers``."""

    source_group_id: Annotated[
        str,
        Meta(min_length=1, description="group whose pointers to re-resolve", extra=GROUP_PARAM),
    ]


class RecoverParams(Params):
    """``knowledge_recover``."""

    strategy: Annotated[
        str,
        Meta(
            min_length=1,
            description="drop_lbug_wal, rebuild_from_workspace_wal or restore_from_backup",
        ),
    ]
    examples: ClassVar[dict[str, Any]] = {"strategy": "rebuild_from_workspace_wal"}


class VerifyParams(Params):
    """``knowledge_verify``."""

    group_ids: Annotated[
        list[str] | None, Meta(description="groups (default all)", extra=GROUP_PARAM)
    ] = None


async def health_check(app: ServiceHost, ctx: CallContext, p: NoParams) -> Health:
    """``health_check``."""
    state, reason = app.health()
    ws = app.workspace_or_none
    backlog = ws.vectors.backlog if ws is not None else None
    pending = backlog.total() if backlog is not None else 0
    extra: dict[str, Any] = (
        {"vectors_pending": pending, "vectors_per_s": round(backlog.rate(), 2)}
        if backlog is not None and pending
        else {}
    )
    if state == "healthy":
        await app.run(lambda: gr.ping(app.ws.graph))
        return Health(ok=True, healthy=True, state="healthy", **extra)
    return Health(ok=False, healthy=False, state=state, reason=reason, **extra)


async def status(app: ServiceHost, ctx: CallContext, p: NoParams) -> msgspec.Struct:
    """``knowledge_status``."""
    state, reason = app.state()
    ws = app.workspace_or_none
    if ws is None:
        return degraded_status(
            reason, initializing=state == "initializing", ontology=app.ontology_status()
        )

    def run() -> StatusReport:
        with ws.reading():
            return build_status(ws, app.ontology_status())

    report = await app.run(run)
    # Background parts of the serving process that fail (a watcher, ADR 0193) are named.
    if problems := app.problems.lines():
        report = msgspec.structs.replace(report, problems=problems)
    return _with_health(report, app.health())


def _with_health(report: StatusReport, health: tuple[State, str | None]) -> StatusReport:
    """``report`` as ``health_check`` sees the service (ADR 0214).

    The reference is degraded only with no database open, and its readiness recipe (poll
    ``knowledge_status`` until ``connected`` and ``queryable`` and not ``initializing``)
    rests on that. lcg is also degraded with its workspace open (a damaged group's writes
    are refused, an I/O fault, an away embedder, a failing watcher): then ``queryable`` is
    false, ``name_index_trusted`` null, and ``degraded``/``reason`` say why, so that the
    recipe waits exactly as long as ``health_check`` does."""
    state, reason = health
    if state != "degraded":
        return report
    return msgspec.structs.replace(
        report,
        queryable=False,
        name_index_trusted=None,
        degraded=True,
        reason=reason or "degraded",
    )


async def query_cypher(app: ServiceHost, ctx: CallContext, p: CypherParams) -> CypherRows:
    """``knowledge_query_cypher``."""
    query = p.query
    check_read_only(query)
    ws = app.ws
    sandbox = app.cypher
    if sandbox is None:
        raise DegradedError("knowledge_query_cypher: the Cypher worker is not running")
    # In the worker process, on its read model caught up with every applied write; the
    # service holds no lock and no read thread meanwhile (ADR 0152).
    rows = await sandbox.run(query, ws.config.cypher_timeout_ms, ws.config.cypher_max_rows)
    return CypherRows(rows=rows)


async def build_indices(app: ServiceHost, ctx: CallContext, p: NoParams) -> IndicesBuilt:
    """``knowledge_build_indices``."""
    ws = app.ws

    def run() -> None:
        with ws.rw.write():
            ws.projector.save()

    await app.run(run)
    return IndicesBuilt()


async def delete_by_group(
    app: ServiceHost, ctx: CallContext, p: DeleteByGroupParams
) -> msgspec.Struct:
    """``knowledge_delete_by_group``."""
    return await app.run_write(
        deletion.delete_by_group,
        app.ws,
        unique(p.group_ids),
        confirm=p.confirm,
        dry_run=p.dry_run,
    )


async def rebind(app: ServiceHost, ctx: CallContext, p: RebindParams) -> msgspec.Struct:
    """``knowledge_rebind_pointers``."""
    return await app.run_write(cross_group.rebind_pointers, app.ws, p.source_group_id)


async def recover(app: ServiceHost, ctx: CallContext, p: RecoverParams) -> RecoverResult:
    """``knowledge_recover``."""
    strategy = p.strategy
    if strategy not in ("drop_lbug_wal", "rebuild_from_workspace_wal", "restore_from_backup"):
        # A well-formed request naming no known strategy: a state error (-32000), as the
        # reference, not a parameter error.
        raise RequestError(f"Unknown strategy: {strategy}")
    try:
        await app.recover(strategy)
    except LcgError as exc:
        return RecoverResult(
            strategy=strategy, success=False, restart_required=False, error=str(exc)
        )
    return RecoverResult(strategy=strategy, success=True, restart_required=False)


async def recover_full(
    app: ServiceHost, ctx: CallContext, p: NoParams
) -> RecoverFullResult | RecoverFullFailed:
    """``knowledge_recover_full``."""
    ws = app.workspace_or_none
    if ws is not None:
        n = (await app.run(ws.graph.counts, None)).episodes
        return RecoverFullResult(
            recovery_needed=False,
            episodes_before=n,
            mutations_replayed=0,
            episodes_after=n,
            indexes_rebuilt=False,
        )
    try:
        replayed = await app.recover("rebuild_from_workspace_wal")
    except LcgError as exc:
        return RecoverFullFailed(error=str(exc))
    after = (await app.run(app.ws.graph.counts, None)).episodes
    return RecoverFullResult(
        recovery_needed=True,
        # The projections were closed, so nothing could be counted before the replay.
        episodes_before=0,
        mutations_replayed=replayed,
        episodes_after=after,
        indexes_rebuilt=True,
    )


async def verify(app: ServiceHost, ctx: CallContext, p: VerifyParams) -> msgspec.Struct:
    """``knowledge_verify``."""
    return await app.run(verify_workspace, app.ws, p.group_ids or None)


async def close(app: ServiceHost, ctx: CallContext, p: NoParams) -> Closed:
    """``knowledge_close``."""
    ctx.request_shutdown()
    return Closed()


#: The health, status, Cypher and admin methods, in the order MCP and ``lcg methods`` show.
#: Readiness and status, the first methods MCP and ``lcg methods`` show.
STATUS_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "health_check",
        "none",
        health_check,
        "Readiness: healthy once the projections have caught up.",
        exempt=True,
    ),
    MethodDef(
        "knowledge_status",
        "read",
        status,
        "Counts, stream positions, generations and hydration per group.",
        exempt=True,
    ),
)

#: Cypher and group administration (after the rebuild job's status, ``methods_wal``).
ADMIN_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_query_cypher",
        "cypher",
        query_cypher,
        "Run a read-only Cypher query on the graph; values are returned as strings.",
        CypherParams,
    ),
    MethodDef(
        "knowledge_delete_by_group",
        "admin",
        delete_by_group,
        "Purge whole groups (confirm, or dry_run to preview).",
        DeleteByGroupParams,
        writes=True,
    ),
    MethodDef(
        "knowledge_rebind_pointers",
        "admin",
        rebind,
        "Re-resolve cross-group pointers into a group.",
        RebindParams,
        writes=True,
    ),
)

#: Indices, recovery, verification and shutdown (after the WAL methods, ``methods_wal``).
RECOVERY_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_build_indices",
        "admin",
        build_indices,
        "Persist the search indices (they are maintained continuously).",
    ),
    MethodDef(
        "knowledge_recover",
        "admin",
        recover,
        "Recover the projections with a strategy.",
        RecoverParams,
        exempt=True,
    ),
    MethodDef(
        "knowledge_recover_full",
        "admin",
        recover_full,
        "Rebuild every projection from the streams if the workspace is not open.",
        exempt=True,
    ),
    MethodDef(
        "knowledge_verify",
        "admin",
        verify,
        "Replay the streams into scratch projections and compare digests (lcg verify).",
        VerifyParams,
        own=True,
    ),
    MethodDef(
        "knowledge_close",
        "admin",
        close,
        "Shut the service down gracefully.",
        exempt=True,
    ),
)
