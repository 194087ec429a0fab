"""The service application: a workspace behind the method registry.

``ServiceApp.open`` runs after the socket is bound: it opens the workspace and catches the
projections up with the streams (``initializing`` until then), then reports ``healthy``; a
failure leaves the service ``degraded`` with the reason, answering only the exempt methods.
Handlers run the (blocking) workspace calls in worker threads, so reads run concurrently and
LLM or embedder calls never hold the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from lcg import telemetry, timestamps
from lcg.config import Config
from lcg.errors import DegradedError, LcgError, ProjectionError
from lcg.events import remove_trees
from lcg.extract import REPROBE_S, Embedder
from lcg.ingest import ExtractionService
from lcg.projections import ReplayProgress
from lcg.query import CypherSandbox, Searcher, open_cypher_sandbox
from lcg.rpc.dispatch import State
from lcg.rpc.host import Job
from lcg.rpc.methods import build_registry
from lcg.rpc.problems import ComponentProblems
from lcg.rpc.registry import Registry
from lcg.workspace import (
    OntologyStatus,
    RecoveryTrace,
    Workspace,
    drain_step,
    next_lagging,
    ontology_status,
    projection_dirs,
)

__all__ = ["Job", "ServiceApp", "State", "build_app"]

T = TypeVar("T")
#: Worker threads for reads (searches, graph reads, status) and for writes.
READ_THREADS = 32
WRITE_THREADS = 16
#: How often the vector drainer looks for groups that lack vectors while none do, seconds.
DRAIN_IDLE_S = 0.25
#: How long writes must have been quiet before the drainer runs the model, seconds.
DRAIN_QUIET_S = 0.5


class ServiceApp:
    """One workspace served over the socket or MCP."""

    def __init__(
        self,
        config: Config,
        *,
        embedder_factory: Callable[[], Embedder] | None = None,
        read_only: str | None = None,
        one_shot: bool = False,
    ) -> None:
        self.config = config
        #: Served only while one command runs (ADR 0199): its Cypher worker starts at the first
        #: query rather than replaying a read model on open, and its writes make their vectors
        #: with them — a background drain (ADR 0201) would only make the command wait longer.
        self.one_shot = one_shot
        self.embedder_factory = embedder_factory
        #: When set, writes are refused with this message (a replica names its publisher).
        self.read_only = read_only
        self._ws: Workspace | None = None
        self._searcher: Searcher | None = None
        self._state: State = "initializing"
        self._reason: str | None = None
        self.jobs: dict[str, Job] = {}
        self.active_writes = 0
        self._last_write = 0.0
        self._writes_guard = threading.Lock()
        #: A retry of I/O faults (``health``) is running in a write thread.
        self._retrying_io = False
        self.shutdown_hook: Callable[[], None] | None = None
        #: Supplies the ontology status (set by the extraction layer when one is loaded).
        self.ontology_provider: Callable[[], OntologyStatus] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._embedder_watch: asyncio.Task[None] | None = None
        #: The extraction pipeline (its extractor is ``None`` in lite mode); set on open.
        self.extraction: ExtractionService | None = None
        #: Clients' Cypher runs in its worker process (ADR 0152); set on open.
        self.cypher: CypherSandbox | None = None
        #: What background parts of this process (a watcher) report wrong; health reads it.
        self.problems = ComponentProblems()
        # Own pools rather than asyncio's default one (min(32, cpus + 4) threads, shared):
        # writes wait for their group's lock inside a worker thread, and on a small machine a
        # few of them would otherwise take every thread and stall reads and health checks.
        self._read_pool = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="lcg-read")
        self._write_pool = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="lcg-write")
        self._registry = build_registry(self)

    # ---- App protocol --------------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        """The method table."""
        return self._registry

    async def open(self) -> None:
        """Open the workspace and catch up; degrade with a reason on failure."""
        try:
            await asyncio.to_thread(self._open_sync)
        except LcgError as exc:
            self._degrade(str(exc))
        except Exception as exc:  # noqa: BLE001 - any failure to open degrades, never crashes
            self._degrade(f"{type(exc).__name__}: {exc}")
        # Vectors left behind (a source sync's, ADR 0201; an away embedder's, ADR 0171) are
        # made in the background.
        self._embedder_watch = asyncio.get_running_loop().create_task(self._watch_vectors())

    async def _watch_vectors(self) -> None:
        """Make the vectors the groups lack, one batch at a time (``drain_step``: the model
        runs outside the group's lock, the apply under it); while a remote embedder is away,
        probe it every few seconds instead, and once it answers catch the vectors up (no
        restart, no client call)."""
        loop = asyncio.get_running_loop()
        last: str | None = None
        while True:
            ws = self._ws
            pause = DRAIN_IDLE_S
            # Writes first: the model waits until they have been quiet a moment, so that a
            # sync's parts are not slowed by it (text first, ADR 0201).
            quiet = time.monotonic() - self._last_write >= DRAIN_QUIET_S
            if self.active_writes or not quiet:
                pass
            elif ws is not None and (
                ws.embedder_away is not None or ws.projector.embedder_failures
            ):
                try:
                    if ws.embedder_away is not None:
                        pause = REPROBE_S
                        await loop.run_in_executor(self._write_pool, ws.retry_embedder)
                    elif (group := next_lagging(ws, last)) is not None:
                        last = group
                        await loop.run_in_executor(self._write_pool, drain_step, ws, group)
                        pause = 0.0
                except RuntimeError:  # the pool is shut down: the service is closing
                    return
                except LcgError:
                    pause = REPROBE_S  # the embedder fails, or a group's own damage: reported
            await asyncio.sleep(pause)

    def _open_sync(self) -> None:
        if self.extraction is None:
            from lcg.workspace import make_extractor

            self.extraction = ExtractionService.from_config(
                self.config, make_extractor(self.config)
            )
        embedder = self.embedder_factory() if self.embedder_factory else None
        ws = Workspace.open(self.config, embedder, progress=self._note_catch_up)
        self._attach(ws)

    def _note_catch_up(self, p: ReplayProgress) -> None:
        # While initializing, health_check's reason says how far the catch-up on open is.
        total = "?" if p.max_seq is None else f"{p.max_seq + 1:,}"
        done = 0 if p.last_seq is None else p.last_seq + 1
        phase = "" if p.phase == "apply" else f"; {p.message}"
        self._reason = f"catching up group {p.group_id!r}: {done:,} of {total} events{phase}"

    def _attach(self, ws: Workspace) -> None:
        self._close_cypher()
        self.cypher = open_cypher_sandbox(ws, start=not self.one_shot)
        self._ws = ws
        # Source syncs may leave their vectors to ``_watch_vectors`` (ADR 0201).
        ws.vectors.backlog.drained_in_background = not self.one_shot
        self._searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
        self._state = "healthy"
        self._reason = None

    def _degrade(self, reason: str) -> None:
        # The server's dispatcher emits ``service_state`` when it sees the state change.
        self._state = "degraded"
        self._reason = reason

    def _close_cypher(self) -> None:
        sandbox, self.cypher = self.cypher, None
        if sandbox is not None:
            sandbox.close()

    async def close(self) -> None:
        """Save and close the workspace."""
        if self._embedder_watch is not None:
            self._embedder_watch.cancel()
        # No new work from here: idle workers end now, busy ones when their call returns.
        self._read_pool.shutdown(wait=False, cancel_futures=True)
        self._write_pool.shutdown(wait=False, cancel_futures=True)
        try:
            await asyncio.to_thread(self._close_cypher)
        except Exception as exc:  # noqa: BLE001 - a read-only worker: nothing of it to keep
            # It is gone already when the signal went to the whole process group (a
            # supervisor's SIGTERM to every process of the service, ADR 0197).
            telemetry.emit(
                telemetry.ServiceNotice(
                    kind="cypher_worker_gone",
                    reason=f"the Cypher worker had ended before the service closed it ({exc!r})",
                )
            )
        ws, self._ws = self._ws, None
        if ws is not None:
            await asyncio.to_thread(ws.close)
        if self.extraction is not None:
            await asyncio.to_thread(functools.partial(self.extraction.close, close_extractor=True))

    def state(self) -> tuple[State, str | None]:
        """``(initializing | healthy | degraded, reason)``."""
        return self._state, self._reason

    def health(self) -> tuple[State, str | None]:
        """``state()``, except ``degraded`` while writes fail or projections lag on I/O, or
        a background part reports a problem (``problems``).

        Such a service still answers every method (reads work on a full disk and writes
        are retried by their callers), so this is not the ``state()`` the dispatcher guards
        with; it says the truth to ``health_check`` until the faults are over. While there
        are I/O faults, each call starts (at most one at a time) a retry in a write thread —
        a probe write, and a catch-up of the lagging groups — so that the service is healthy
        again soon after space came back, without waiting for a client's write.
        """
        state, reason = self.state()
        ws = self._ws
        if state == "healthy" and ws is not None:
            io_faults = ws.io_faults()
            if io_faults:
                self._retry_io(ws)
            # A damaged group is degraded too (ADR 0076): its reads work, its writes wait.
            faults = [*io_faults, *(d.reason for d in ws.projector.damage.values())]
            # So is an away embedder (ADR 0171): reads work, vectors wait for it.
            if (embedder := ws.embedder_away) is not None:
                faults.append(embedder)
            # So is a background part of this process that fails (ADR 0193): a watcher.
            faults.extend(self.problems.lines())
            if faults:
                return "degraded", "; ".join(faults)
        return state, reason

    def _retry_io(self, ws: Workspace) -> None:
        with self._writes_guard:
            if self._retrying_io:
                return
            self._retrying_io = True

        def run() -> None:
            try:
                ws.retry_io_faults()
            finally:
                self._retrying_io = False

        try:
            self._write_pool.submit(run)
        except RuntimeError:  # the pool is shut down: the service is closing
            self._retrying_io = False

    # ---- for handlers --------------------------------------------------------------------

    @property
    def ws(self) -> Workspace:
        """The open workspace; raises ``DegradedError`` when there is none."""
        if self._ws is None:
            raise DegradedError(self._reason or "the workspace is not open")
        return self._ws

    @property
    def workspace_or_none(self) -> Workspace | None:
        """The open workspace, or ``None`` while degraded."""
        return self._ws

    @property
    def searcher(self) -> Searcher:
        """The searcher over the open workspace."""
        if self._searcher is None:
            raise DegradedError(self._reason or "the workspace is not open")
        return self._searcher

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking workspace call in a read worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._read_pool, functools.partial(fn, *args, **kwargs))

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` in a read worker thread, holding the projections for
        reading (the shape every read handler shares)."""
        ws = self.ws

        def under_lock() -> T:
            with ws.reading():
                return fn(*args, **kwargs)

        return await self.run(under_lock)

    async def run_write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a write in a worker thread, counted in ``active_writes``."""
        if self.read_only is not None:
            from lcg.errors import ReadOnlyError

            raise ReadOnlyError(self.read_only)
        with self._writes_guard:
            self.active_writes += 1
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._write_pool, functools.partial(fn, *args, **kwargs)
            )
        finally:
            with self._writes_guard:
                self.active_writes -= 1
                self._last_write = time.monotonic()

    def new_job(self, group_id: str) -> Job:
        """Register a new background job."""
        job = Job(job_id=str(uuid.uuid4()), group_id=group_id, start_time=timestamps.now())
        self.jobs[job.job_id] = job
        return job

    def background(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a background task of the service (kept until it finishes)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def ontology_status(self) -> OntologyStatus:
        """The workspace ontology's status: the one extraction loaded (reference §3.1)."""
        if self.ontology_provider is not None:
            return self.ontology_provider()
        if self.extraction is None:
            return OntologyStatus()
        ws = self._ws
        has_episodes = ws is not None and ws.graph.counts(None).episodes > 0
        return ontology_status(self.extraction.ontologies, has_episodes=has_episodes)

    async def recover(self, strategy: str) -> int:
        """Recover the projections; returns the number of events replayed."""
        if strategy == "restore_from_backup":
            raise ProjectionError(
                "No backup file found: lcg keeps no database backups; use "
                "rebuild_from_workspace_wal, which rebuilds every projection from the streams"
            )

        # Healing a service whose workspace did not open is the reference's full recovery
        # sequence: its ``wal_auto_recovery`` phases are emitted (ADR 0213).
        trace = (
            RecoveryTrace()
            if self._ws is None and strategy == "rebuild_from_workspace_wal"
            else None
        )

        def run() -> int:
            old = self._ws
            if old is not None:
                old.close()
            self._ws = None
            self._searcher = None
            if trace is not None:
                trace.detected()
            if strategy == "rebuild_from_workspace_wal":
                # Each in one step: a crash here leaves a projection whole or gone (ADR 0156).
                remove_trees(projection_dirs(self.config))
                if trace is not None:
                    trace.dropped()
            embedder = self.embedder_factory() if self.embedder_factory else None
            ws = Workspace(self.config, embedder)
            try:
                results = ws.catch_up()
            except BaseException:
                ws.close()
                raise
            replayed = sum(r.mutations_replayed for r in results.values())
            if trace is not None:
                trace.replayed(replayed)
            self._attach(ws)
            if trace is not None:
                trace.indexed()
                trace.healed(replayed)
            return replayed

        try:
            return await asyncio.to_thread(run)
        except LcgError as exc:
            if trace is not None:
                trace.gave_up(str(exc))
            self._degrade(f"recovery failed: {exc}")
            raise

    def replace_workspace(self, ws: Workspace | None, reason: str | None = None) -> None:
        """Swap the open workspace (recovery); ``None`` degrades with ``reason``."""
        if ws is None:
            self._ws = None
            self._searcher = None
            self._degrade(reason or "workspace closed")
        else:
            self._attach(ws)


def build_app(config: Config, **kwargs: Any) -> ServiceApp:
    """The application a ``lcg serve`` or standalone ``lcg mcp`` process hosts."""
    return ServiceApp(config, **kwargs)
