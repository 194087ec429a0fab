"""The replica service over JSON-RPC: the ordinary method table, bound to a ``Replica``.

Writes are refused (the error names the publisher), and so are the methods that would write
into the publication or swap the workspace under the follower (``REFUSED_METHODS``, here
beside the method table they name: ``refuses``); ``knowledge_rebuild_from_wal`` answers a dry
run only; ``knowledge_status`` gains a ``replica`` object per group;
``knowledge_replica_status`` is added. What a replica is and does lives in
``lcg.replication``; this module only serves it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from msgspec import Meta

from lcg.config import Config
from lcg.errors import LcgError, ReadOnlyError
from lcg.events import ReadLimits
from lcg.extract import Embedder
from lcg.replication import Follower, Replica, ReplicaReport, SourceFactory, read_only_reason
from lcg.rpc.app import ServiceApp, State
from lcg.rpc.params import GROUP_PARAM
from lcg.rpc.registry import CallContext, MethodSpec, Params, Registry, Result

__all__ = [
    "REBUILD_METHOD",
    "REFUSED_METHODS",
    "ReplicaApp",
    "ReplicaStatusParams",
    "refuses",
]

#: Methods that are not writes to a stream but still must not run on a replica: they write
#: into the publication (marks) or close the workspace under the follower (recovery).
REFUSED_METHODS = frozenset(
    {
        "knowledge_wal_mark_create",
        "knowledge_wal_mark_delete",
        "knowledge_recover",
        "knowledge_recover_full",
    }
)
#: The one writing method a replica answers, and only as a dry run.
REBUILD_METHOD = "knowledge_rebuild_from_wal"


def refuses(name: str, *, writes: bool) -> bool:
    """Whether a replica refuses method ``name`` (``writes``: the method appends events)."""
    return (writes and name != REBUILD_METHOD) or name in REFUSED_METHODS


class ReplicaStatusParams(Params):
    """``knowledge_replica_status``."""

    group_id: Annotated[
        str | None, Meta(description="one group (default: all)", extra=GROUP_PARAM)
    ] = None


class ReplicaApp(ServiceApp):
    """A read-only service whose workspace follows a publication."""

    def __init__(
        self,
        config: Config,
        *,
        source_label: str,
        groups: Sequence[str] | None = None,
        embedder_factory: Callable[[], Embedder] | None = None,
        step_ms: int = 50,
        rescan_ms: int = 2000,
        limits: ReadLimits | None = None,
        source: SourceFactory | None = None,
    ) -> None:
        super().__init__(
            config, embedder_factory=embedder_factory, read_only=read_only_reason(source_label)
        )
        self.replica = Replica(
            config,
            source_label=source_label,
            groups=groups,
            step_ms=step_ms,
            rescan_ms=rescan_ms,
            limits=limits,
            source=source,
        )
        self.source_label = source_label
        self._replica_registry = self._build_replica_registry(super().registry)

    @property
    def follower(self) -> Follower | None:
        """The follower, once the replica started opening (``None`` before and after)."""
        return self.replica.follower

    @property
    def registry(self) -> Registry:
        """The method table, with the replica's refusals and additions."""
        return self._replica_registry

    def _refuse(self, name: str) -> Callable[[CallContext, Any], Any]:
        async def handler(ctx: CallContext, p: Any) -> Result:
            raise ReadOnlyError(f"{name}: {self.read_only}")

        return handler

    def _build_replica_registry(self, base: Registry) -> Registry:
        specs: list[MethodSpec] = []
        for spec in base:
            if refuses(spec.name, writes=spec.writes):
                spec = dataclasses.replace(spec, handler=self._refuse(spec.name))
            elif spec.name == REBUILD_METHOD:
                spec = dataclasses.replace(spec, handler=self._dry_rebuild_only(spec))
            elif spec.name == "knowledge_status":
                spec = dataclasses.replace(spec, handler=self._status_with_replica(spec))
            specs.append(spec)
        specs.append(
            MethodSpec(
                "knowledge_replica_status",
                "read",
                self._replica_status,
                "Where each followed group stands against its publication (lag, state).",
                ReplicaStatusParams,
                exempt=True,
            )
        )
        return Registry(specs)

    def _dry_rebuild_only(self, spec: MethodSpec) -> Callable[[CallContext, Any], Any]:
        async def handler(ctx: CallContext, p: Any) -> Result:
            # A real rebuild would apply unverified events behind the follower's back.
            if getattr(p, "dry_run", None) is not True:
                raise ReadOnlyError(
                    f"{REBUILD_METHOD}: {self.read_only} (the replica rebuilds by "
                    "itself on a new generation; dry_run is allowed)"
                )
            return await spec.handler(ctx, p)

        return handler

    def _status_with_replica(self, spec: MethodSpec) -> Callable[[CallContext, Any], Any]:
        async def handler(ctx: CallContext, p: Any) -> Result:
            return self.replica.with_replica_status(await spec.handler(ctx, p))

        return handler

    async def _replica_status(self, ctx: CallContext, p: ReplicaStatusParams) -> ReplicaReport:
        return self.replica.report(p.group_id)

    def health(self) -> tuple[State, str | None]:
        """The service's health, ``degraded`` naming each stopped group while any is.

        As a damaged group degrades a publisher (ADR 0076): the other groups' reads and
        updates go on; the reason says which group stopped and why.
        """
        state, reason = super().health()
        if state != "healthy":
            return state, reason
        stopped = self.replica.stopped()
        if not stopped:
            return state, reason
        return "degraded", "; ".join(
            f"replica group {g!r} stopped: {why}" for g, why in sorted(stopped.items())
        )

    async def open(self) -> None:
        """Open the workspace without catching up, hydrate it verified, then follow."""
        try:
            await asyncio.to_thread(self._open_replica)
        except LcgError as exc:
            self.replace_workspace(None, str(exc))
        except Exception as exc:  # noqa: BLE001 - a failure to open degrades, never crashes
            self.replace_workspace(None, f"{type(exc).__name__}: {exc}")

    def _open_replica(self) -> None:
        embedder = self.embedder_factory() if self.embedder_factory else None
        ws = self.replica.open(embedder)
        self.replace_workspace(ws)
        self.replica.start()

    async def close(self) -> None:
        """Stop following, then save and close the workspace."""
        await asyncio.to_thread(self.replica.stop)
        await super().close()
