"""What a method handler may use of the service that hosts it: ``ServiceHost``.

The handlers (``methods_*``) are typed against this protocol, not against ``ServiceApp``, so
the method tables sit below the app that binds them and import nothing of it (issue 20
item 3, ADR 0183). ``ServiceApp`` and ``ReplicaApp`` satisfy it structurally; a test's fake
needs only the members the handlers under test read.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Literal, Protocol, TypeVar

import msgspec

from lcg.config import Config
from lcg.ingest import ExtractionService
from lcg.projections import ReplayResult
from lcg.query import CypherSandbox, Searcher
from lcg.rpc.dispatch import State
from lcg.rpc.problems import ComponentProblems
from lcg.workspace import OntologyStatus, Workspace

__all__ = ["Job", "ServiceHost"]

T = TypeVar("T")


class Job(msgspec.Struct, kw_only=True):
    """A background rebuild job (``knowledge_rebuild_status``)."""

    job_id: str
    status: Literal["running", "completed", "failed"] = "running"
    group_id: str = ""
    mutations_replayed: int = 0
    wal_files_processed: int = 0
    wal_files_total: int = 0
    start_time: str = ""
    started_monotonic: float = 0.0
    elapsed_seconds: float = 0.0
    error: str | None = None
    result: ReplayResult | None = None


class ServiceHost(Protocol):
    """The service as its method handlers see it: the workspace, the worker pools, the
    background jobs and the recovery they may ask for."""

    #: The extraction pipeline; ``None`` until the app opens or a handler builds it.
    extraction: ExtractionService | None

    @property
    def config(self) -> Config:
        """The workspace's configuration."""
        ...

    @property
    def ws(self) -> Workspace:
        """The open workspace; raises ``DegradedError`` when there is none."""
        ...

    @property
    def workspace_or_none(self) -> Workspace | None:
        """The open workspace, or ``None`` while degraded."""
        ...

    @property
    def searcher(self) -> Searcher:
        """The searcher over the open workspace."""
        ...

    @property
    def cypher(self) -> CypherSandbox | None:
        """The worker process clients' Cypher runs in (``None`` before opening)."""
        ...

    @property
    def jobs(self) -> dict[str, Job]:
        """The background jobs, by id."""
        ...

    @property
    def problems(self) -> ComponentProblems:
        """What background parts of the process (a watcher) report wrong (ADR 0193)."""
        ...

    @property
    def active_writes(self) -> int:
        """The writes running now (a real rebuild is refused while any is)."""
        ...

    def state(self) -> tuple[State, str | None]:
        """``(initializing | healthy | degraded, reason)``: the dispatcher's guard."""
        ...

    def health(self) -> tuple[State, str | None]:
        """``state()``, except ``degraded`` while writes fail or projections lag."""
        ...

    def ontology_status(self) -> OntologyStatus:
        """The workspace ontology's status."""
        ...

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking call in a read worker thread."""
        ...

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking call in a read worker thread, holding the projections for reading."""
        ...

    async def run_write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a write in a worker thread (refused on a read-only service)."""
        ...

    def new_job(self, group_id: str) -> Job:
        """Register a new background job."""
        ...

    def background(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a background task of the service."""
        ...

    async def recover(self, strategy: str) -> int:
        """Recover the projections; the number of events replayed."""
        ...
