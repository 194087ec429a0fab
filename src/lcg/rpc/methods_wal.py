"""The stream-side admin methods: dump, checkpoint, marks and the rebuild from the WAL.

Two tables, because ``lcg methods`` and MCP list the rebuild job's status among the status
methods: ``JOB_METHODS`` and ``WAL_METHODS`` (``lcg.rpc.methods`` orders every table).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from lcg.errors import (
    InvalidParamsError,
    LcgError,
    RebuildRefusedError,
    StreamError,
)
from lcg.events import MarkInfo, encode_group, remove_tree, rename_into_place
from lcg.ingest import DumpResult, dump_groups, rebind_after_reset
from lcg.projections import ReplayProgress, ReplayResult
from lcg.rpc._paths import export_target
from lcg.rpc.host import Job, ServiceHost
from lcg.rpc.params import GROUP_PARAM, GroupId, SeqInt, write_group
from lcg.rpc.registry import CallContext, MethodDef, NoParams, Params
from lcg.workspace import (
    Workspace,
    close_segments,
    create_applied_mark,
    delete_group_mark,
    group_marks,
)

__all__ = [
    "JOB_METHODS",
    "WAL_METHODS",
    "dump_wal",
    "mark_create",
    "mark_delete",
    "mark_list",
    "prepare_checkpoint",
    "rebuild",
    "rebuild_status",
]


def _name(description: str) -> Any:
    return Meta(min_length=1, description=description)


class CheckpointResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_prepare_checkpoint``."""

    success: bool = True
    files_flushed: int
    files_total: int


class MarkCreated(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_wal_mark_create``."""

    success: bool = True
    name: str
    group_id: str
    seq: int | None
    generation: str | None


class MarkList(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_wal_mark_list``."""

    group_id: str
    checkpoints: list[MarkInfo]


class MarkDeleted(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_wal_mark_delete``."""

    success: bool = True
    name: str
    group_id: str


class JobStarted(msgspec.Struct, kw_only=True):
    """A rebuild running in the background."""

    success: bool = True
    job_id: str
    status: str = "running"


class JobNotFound(msgspec.Struct, kw_only=True):
    """``{status: "not_found"}``."""

    status: str = "not_found"


class RebuildStatusParams(Params):
    """``knowledge_rebuild_status``."""

    job_id: Annotated[str, _name("job id (from knowledge_rebuild_from_wal)")]


class DumpParams(Params):
    """``knowledge_dump_wal``."""

    group_id: Annotated[
        str | None, Meta(description="one group (default all)", extra=GROUP_PARAM)
    ] = None
    target_dir: Annotated[str | None, Meta(description="empty target directory")] = None


class MarkCreateParams(Params):
    """``knowledge_wal_mark_create``."""

    name: Annotated[str, _name("mark name ([A-Za-z0-9_-], at most 200)")]
    group_id: GroupId = None
    examples: ClassVar[dict[str, Any]] = {"name": "before-import"}


class MarkListParams(Params):
    """``knowledge_wal_mark_list``."""

    group_id: GroupId = None


class MarkDeleteParams(Params):
    """``knowledge_wal_mark_delete``."""

    name: Annotated[str, _name("mark name")]
    group_id: GroupId = None
    examples: ClassVar[dict[str, Any]] = {"name": "before-import"}


class RebuildParams(Params):
    """``knowledge_rebuild_from_wal``."""

    group_id: GroupId = None
    from_seq: Annotated[SeqInt, Meta(description="first seq (inclusive)")] = 0
    to_seq: Annotated[SeqInt | None, Meta(description="last seq (inclusive)")] = None
    dry_run: Annotated[bool, Meta(description="count only")] = False
    force_clear: Annotated[bool, Meta(description="purge the group first")] = False
    accept_loss: Annotated[
        bool, Meta(description="report success even if the replay skipped seqs (damage)")
    ] = False
    examples: ClassVar[dict[str, Any]] = {"group_id": "liminis", "dry_run": True}

    def __post_init__(self) -> None:
        """Refuse an empty range (reference wording)."""
        if self.to_seq is not None and self.to_seq < self.from_seq:
            raise InvalidParamsError(
                f"to_seq ({self.to_seq}) must be >= from_seq ({self.from_seq})"
            )


class ResetPreview(msgspec.Struct, kw_only=True):
    """A dry run that found a generation reset: the reference's short answer (§3.9 step 3)."""

    success: bool = True
    group_id: str
    dry_run: bool = True
    reset_detected: bool = True
    previous_generation: str | None
    generation: str | None
    message: str


def _dump_group_into(ws: Workspace, target_dir: Path, group_id: str) -> DumpResult:
    """Dump one group so that ``target_dir`` *is* its stream directory (reference §5.6).

    The group is dumped into a hidden staging root beside the target, then its stream
    directory is renamed onto the (absent or empty) target: no half-written target is seen.
    """
    if target_dir.exists() and (not target_dir.is_dir() or any(target_dir.iterdir())):
        raise StreamError(
            f"dump target {target_dir} is not empty; choose a new directory or empty it first"
        )
    staging = target_dir.parent / f".{target_dir.name}.group-{os.getpid()}.tmp"
    remove_tree(staging, durable=False)
    try:
        result = dump_groups(ws, staging, [group_id])
        rename_into_place(staging / encode_group(group_id), target_dir)
    finally:
        with contextlib.suppress(OSError):  # best effort: a hidden, never-committed staging
            remove_tree(staging, durable=False)
    result.target_dir = str(target_dir)
    return result


def _with_indices(result: ReplayResult) -> dict[str, Any] | ResetPreview:
    """A rebuild result as sent: a real rebuild adds ``indices_built`` (reference §3.9)."""
    if result.dry_run and result.reset_detected:
        return ResetPreview(
            group_id=result.group_id,
            previous_generation=result.previous_generation,
            generation=result.generation,
            message=(
                f"WAL stream generation changed from {result.previous_generation} to "
                f"{result.generation}; a real rebuild purges group {result.group_id!r} and "
                "replays its stream in full"
            ),
        )
    out: dict[str, Any] = msgspec.to_builtins(result)
    if not result.dry_run:
        # The text and vector indices are maintained by every apply, so they are built.
        out["indices_built"] = True
    return out


class JobView(msgspec.Struct, kw_only=True):
    """A background rebuild as ``knowledge_rebuild_status`` reports it."""

    job_id: str
    status: str
    group_id: str
    mutations_replayed: int
    wal_files_processed: int
    wal_files_total: int
    start_time: str
    elapsed_seconds: float
    error: str | None
    #: The rebuild result as ``knowledge_rebuild_from_wal`` sends it (``indices_built`` too).
    result: dict[str, Any] | ResetPreview | None


def _job_view(job: Job) -> JobView:
    elapsed = job.elapsed_seconds
    if job.status == "running":
        elapsed = round(time.monotonic() - job.started_monotonic, 3)
    return JobView(
        job_id=job.job_id,
        status=job.status,
        group_id=job.group_id,
        mutations_replayed=job.mutations_replayed,
        wal_files_processed=job.wal_files_processed,
        wal_files_total=job.wal_files_total,
        start_time=job.start_time,
        elapsed_seconds=elapsed,
        error=job.error,
        result=None if job.result is None else _with_indices(job.result),
    )


async def rebuild_status(
    app: ServiceHost, ctx: CallContext, p: RebuildStatusParams
) -> msgspec.Struct:
    """``knowledge_rebuild_status``."""
    job = app.jobs.get(p.job_id)
    return JobNotFound() if job is None else _job_view(job)


async def dump_wal(app: ServiceHost, ctx: CallContext, p: DumpParams) -> msgspec.Struct:
    """``knowledge_dump_wal``."""
    ws = app.ws
    # A client's path lands inside the workspace or LCG_EXPORT_ROOT, never elsewhere.
    target_dir = (
        export_target(ws.config, p.target_dir)
        if p.target_dir is not None
        else ws.config.wal_dir.parent / "wal-compacted"
    )
    if p.group_id:
        # One group: its stream goes directly into target_dir, as the reference (§5.6).
        return await app.run_write(_dump_group_into, ws, target_dir, p.group_id)
    return await app.run_write(dump_groups, ws, target_dir, None)


async def prepare_checkpoint(app: ServiceHost, ctx: CallContext, p: NoParams) -> CheckpointResult:
    """``knowledge_prepare_checkpoint``."""
    closed = await app.run(close_segments, app.ws)
    return CheckpointResult(files_flushed=closed.files_flushed, files_total=closed.files_total)


async def mark_create(app: ServiceHost, ctx: CallContext, p: MarkCreateParams) -> MarkCreated:
    """``knowledge_wal_mark_create``."""
    gid = write_group(p.group_id)
    rec = await app.run(create_applied_mark, app.ws, gid, p.name)
    return MarkCreated(name=p.name, group_id=gid, seq=rec.seq, generation=rec.wal_generation)


async def mark_list(app: ServiceHost, ctx: CallContext, p: MarkListParams) -> MarkList:
    """``knowledge_wal_mark_list``."""
    gid = write_group(p.group_id)
    return MarkList(group_id=gid, checkpoints=await app.run(group_marks, app.config, gid))


async def mark_delete(app: ServiceHost, ctx: CallContext, p: MarkDeleteParams) -> MarkDeleted:
    """``knowledge_wal_mark_delete``."""
    gid = write_group(p.group_id)
    await app.run(delete_group_mark, app.config, gid, p.name)
    return MarkDeleted(name=p.name, group_id=gid)


async def rebuild(
    app: ServiceHost, ctx: CallContext, p: RebuildParams
) -> msgspec.Struct | dict[str, Any]:
    """``knowledge_rebuild_from_wal``."""
    gid = write_group(p.group_id)
    from_seq, to_seq = p.from_seq, p.to_seq
    dry_run, force_clear = p.dry_run, p.force_clear
    ws = app.ws
    if not dry_run and app.active_writes > 0:
        raise RebuildRefusedError(
            f"Service is busy: {app.active_writes} write operation(s) in progress; "
            "retry the rebuild when they finish"
        )

    def replay(progress: Callable[[ReplayProgress], None] | None) -> ReplayResult:
        return ws.projector.rebuild(
            gid,
            from_seq=from_seq,
            to_seq=to_seq,
            dry_run=dry_run,
            force_clear=force_clear,
            accept_loss=p.accept_loss,
            progress=progress,
        )

    def work(progress: Callable[[ReplayProgress], None] | None) -> ReplayResult:
        if dry_run:
            # A dry run only reads the stream and the positions: shared, as the reference
            # (§3.9 step 5), so it neither waits for nor blocks the group's writes.
            with ws.reading():
                return replay(progress)
        with ws.group_lock(gid), ws.rw.write():
            result = replay(progress)
        rebind_after_reset(ws, result)  # takes each owning group's lock itself
        return result

    if ctx.progress_enabled:
        loop = asyncio.get_running_loop()

        async def emit(frame: ReplayProgress) -> None:
            await ctx.progress(frame)

        def send(frame: ReplayProgress) -> None:
            asyncio.run_coroutine_threadsafe(emit(frame), loop).result()

        return _with_indices(await app.run(work, send))
    if dry_run:
        return _with_indices(await app.run(work, None))

    # Refused here rather than as a job that fails at once (the projector's one set of rules).
    await app.read(
        ws.projector.check_rebuild, gid, from_seq=from_seq, to_seq=to_seq, force_clear=force_clear
    )
    return _start_job(app, gid, work)


def _start_job(
    app: ServiceHost, gid: str, work: Callable[[Callable[[ReplayProgress], None]], ReplayResult]
) -> JobStarted:
    """Run ``work`` as the app's background rebuild job (or report the one already running)."""
    running = [j for j in app.jobs.values() if j.status == "running"]
    if running:
        return JobStarted(job_id=running[0].job_id)
    job = app.new_job(gid)
    job.started_monotonic = time.monotonic()

    def track(frame: ReplayProgress) -> None:
        job.mutations_replayed = frame.mutations_replayed_so_far
        job.wal_files_processed = frame.files_processed_so_far
        job.wal_files_total = frame.files_total

    async def background() -> None:
        try:
            job.result = await app.run(work, track)
            job.status = "completed"
            job.mutations_replayed = job.result.mutations_replayed
        except LcgError as exc:
            job.status = "failed"
            job.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a job reports, never crashes the service
            job.status = "failed"
            job.error = f"{type(exc).__name__}: {exc}"
        job.elapsed_seconds = round(time.monotonic() - job.started_monotonic, 3)

    app.background(background())
    return JobStarted(job_id=job.job_id)


#: The background rebuild job's status (listed after ``methods_admin.STATUS_METHODS``).
JOB_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_rebuild_status",
        "read",
        rebuild_status,
        "The state of a background rebuild job.",
        RebuildStatusParams,
    ),
)

#: Dump, checkpoint, marks and the rebuild from the WAL, in the order MCP lists them.
WAL_METHODS: tuple[MethodDef, ...] = (
    MethodDef(
        "knowledge_dump_wal",
        "admin",
        dump_wal,
        "Compact the current state into a new stream with a fresh generation.",
        DumpParams,
    ),
    MethodDef(
        "knowledge_prepare_checkpoint",
        "admin",
        prepare_checkpoint,
        "Close every writer's current segment file.",
    ),
    MethodDef(
        "knowledge_wal_mark_create",
        "admin",
        mark_create,
        "Create a named mark at the group's applied seq.",
        MarkCreateParams,
    ),
    MethodDef(
        "knowledge_wal_mark_list",
        "admin",
        mark_list,
        "List a group's marks with their reachability.",
        MarkListParams,
        exempt=True,
    ),
    MethodDef(
        "knowledge_wal_mark_delete",
        "admin",
        mark_delete,
        "Delete a named mark.",
        MarkDeleteParams,
        exempt=True,
    ),
    MethodDef(
        "knowledge_rebuild_from_wal",
        "admin",
        rebuild,
        "Rebuild a group's projections from its stream (background job, or streaming).",
        RebuildParams,
        streaming=True,
        writes=True,
    ),
)
