"""``lcg follow``: a read-only replica service of a publication directory.

The replica's workspace keeps its own projections, socket and lock in its ``.lcg``; its
``.lcg/wal`` is a symlink to the publication, so every other command (``lcg status``, ``lcg wal
ls``) sees the same streams. Nothing is written into the publication but the optional bounds
cache, which ``lcg publish`` keeps untracked.

``ReplicaApp`` is the service: the ordinary method table with writes refused (the error names
the publisher), the methods that would write into the publication or swap the workspace
under the follower refused too, ``knowledge_status`` extended with a ``replica`` object per
group, and ``knowledge_replica_status``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from lcg import telemetry
from lcg.cli._common import add_command, config_from
from lcg.config import Config
from lcg.errors import ConfigError, LcgError, ReadOnlyError
from lcg.events.layout import LCG_DIR, WAL_DIR
from lcg.extract.embedders import Embedder
from lcg.projections.workspace import Workspace
from lcg.replication import Follower, ReplicaStatus
from lcg.rpc.app import ServiceApp
from lcg.rpc.registry import CallContext, MethodSpec, Params, Registry, Result

__all__ = ["ReplicaApp", "ReplicaReport", "register", "replica_config"]

#: Methods that are not writes to a stream but still must not run on a replica: they write
#: into the publication (marks) or close the workspace under the follower (recovery).
_REFUSED = (
    "knowledge_wal_mark_create",
    "knowledge_wal_mark_delete",
    "knowledge_recover",
    "knowledge_recover_full",
)


class ReplicaStatusParams(Params):
    """``knowledge_replica_status``."""

    group_id: Annotated[str | None, Meta(description="one group (default: all)")] = None


class ReplicaReport(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_replica_status``."""

    source: str
    groups: dict[str, ReplicaStatus]


def replica_config(workspace: Path, source: Path, env: dict[str, str] | None = None) -> Config:
    """The settings of a replica workspace whose ``.lcg/wal`` links to ``source``."""
    source = source.resolve()
    if not source.is_dir():
        raise ConfigError(f"publication directory {source} does not exist; clone it first")
    config = Config.from_env(workspace, env=env)
    lcg_dir = config.workspace / LCG_DIR
    link = lcg_dir / WAL_DIR
    lcg_dir.mkdir(parents=True, exist_ok=True)
    if link.is_symlink():
        if link.resolve() != source:
            link.unlink()
    elif link.exists():
        raise ConfigError(
            f"{link} is the workspace's own stream directory; a replica needs a workspace of its "
            "own - pass -C with another directory"
        )
    if not link.is_symlink():
        link.symlink_to(source, target_is_directory=True)
    return msgspec.structs.replace(config, wal_dir=link)


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
    ) -> None:
        super().__init__(
            config,
            embedder_factory=embedder_factory,
            read_only=(f"this is a read-only replica of {source_label}; write to the publisher"),
        )
        self.source_label = source_label
        self.groups = list(groups) if groups else None
        self.follower: Follower | None = None
        self.step_ms = step_ms
        self.rescan_ms = rescan_ms
        self._replica_registry = self._build_replica_registry(super().registry)

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
            if (spec.writes and spec.name != "knowledge_rebuild_from_wal") or spec.name in _REFUSED:
                spec = dataclasses.replace(spec, handler=self._refuse(spec.name))
            elif spec.name == "knowledge_rebuild_from_wal":
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
                    f"knowledge_rebuild_from_wal: {self.read_only} (the replica rebuilds by "
                    "itself on a new generation; dry_run is allowed)"
                )
            return await spec.handler(ctx, p)

        return handler

    def _status_with_replica(self, spec: MethodSpec) -> Callable[[CallContext, Any], Any]:
        async def handler(ctx: CallContext, p: Any) -> Result:
            result = await spec.handler(ctx, p)
            follower = self.follower
            if follower is None:
                return result
            out: dict[str, Any] = msgspec.to_builtins(result)
            groups = out.get("wal_groups")
            if isinstance(groups, dict):
                for gid in set(groups) | set(follower.groups()):
                    entry = groups.setdefault(gid, {})
                    if isinstance(entry, dict):
                        entry["replica"] = msgspec.to_builtins(follower.replica_status(gid))
            out["replica_of"] = self.source_label
            return out

        return handler

    async def _replica_status(self, ctx: CallContext, p: ReplicaStatusParams) -> ReplicaReport:
        follower = self.follower
        if follower is None:
            return ReplicaReport(source=self.source_label, groups={})
        gid = p.group_id
        if gid:
            return ReplicaReport(
                source=self.source_label, groups={gid: follower.replica_status(gid)}
            )
        return ReplicaReport(source=self.source_label, groups=follower.statuses())

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
        ws = Workspace(self.config, embedder)
        follower = Follower(ws, self.groups, source_label=self.source_label)
        # Visible before the first pass, so knowledge_replica_status shows the hydration.
        self.follower = follower
        try:
            follower.sync()
        except BaseException:
            self.follower = None
            ws.close()
            raise
        self.replace_workspace(ws)
        follower.start(step_ms=self.step_ms, rescan_ms=self.rescan_ms)

    async def close(self) -> None:
        """Stop following, then save and close the workspace."""
        follower, self.follower = self.follower, None
        if follower is not None:
            await asyncio.to_thread(follower.stop)
        await super().close()


class _Puller:
    """Runs ``git pull --ff-only`` in the publication every few seconds (``--pull-every``)."""

    def __init__(self, repo: Path, every_s: float) -> None:
        self.repo = repo
        self.every_s = every_s
        self.stop = threading.Event()
        self._last_error: str | None = None
        self.thread = threading.Thread(target=self._run, name="lcg-pull", daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(self.every_s):
            proc = subprocess.run(
                ["git", "-C", str(self.repo), "pull", "--ff-only", "-q"],
                capture_output=True,
                text=True,
                check=False,
            )
            error = (proc.stderr or proc.stdout).strip() if proc.returncode else None
            if error and error != self._last_error:
                print(f"lcg follow: git pull failed: {error}", file=sys.stderr)
            self._last_error = error


def _run(args: argparse.Namespace) -> int:
    from lcg.rpc.server import Limits, run_server

    source = Path(args.source)
    workspace = config_from(args).workspace
    config = replica_config(workspace, source)
    if args.embedder:
        config = msgspec.structs.replace(config, embedder=args.embedder)
    telemetry.set_sink(None, enabled=config.telemetry)
    app = ReplicaApp(config, source_label=str(source.resolve()), groups=args.group)
    puller: _Puller | None = None
    if args.pull_every:
        puller = _Puller(source.resolve(), args.pull_every)
        puller.thread.start()
    try:
        return run_server(
            app, config.socket_path, config.shutdown_timeout_ms, limits=Limits.from_config(config)
        )
    finally:
        if puller is not None:
            puller.stop.set()


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg follow``."""
    p = add_command(
        subparsers,
        "follow",
        summary="Serve a read-only replica of a publication, applying new events as they land.",
        details="""
            DIR is a clone of a repository that `lcg publish` commits to (or any directory of
            group streams). The replica's own workspace (-C, default the current directory)
            holds its projections and socket. Events are applied as files change, including
            after `git pull`; a new generation rebuilds the group; a gap, regression, mixed
            generation or rewritten file stops the group with the reason in
            knowledge_replica_status and knowledge_status. Writes are refused.
        """,
        example="""
            git clone git@host:team/pub.git ~/pub
            lcg -C ~/replica follow ~/pub --pull-every 5
            lcg follow ~/pub --group team -C ~/replica
        """,
        func=_run,
    )
    p.add_argument("source", metavar="DIR", help="the publication directory")
    p.add_argument("-g", "--group", action="append", metavar="G", help="follow only G (repeatable)")
    p.add_argument(
        "-C",
        "--workspace",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="WORKSPACE",
        help="the replica's workspace (default: the current directory)",
    )
    p.add_argument(
        "--pull-every", type=_positive, metavar="S", help="run `git pull --ff-only` every S s"
    )
    p.add_argument("--embedder", choices=["local", "hash", "http", "uds"], help="embedder kind")
