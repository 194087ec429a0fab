"""A workspace opened for use: the streams, the projections, the projector, the embedder.

``Workspace.open`` takes an exclusive lock on the workspace (one process at a time: Kuzu
allows no second opener), opens every projection and catches them up with the streams.

The write path is ``commit(group_id, events)``: under the group's lock, append the events
(durable per the fsync policy) and then apply them to the projections. Queries read the
projections under a shared lock; applying takes it exclusively for the (short) apply step.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from lcg import telemetry, timestamps
from lcg.config import Config, require_workspace
from lcg.errors import (
    ConfigError,
    DegradedError,
    ProjectionError,
    ProjectionIOError,
)
from lcg.events import (
    EMBEDDING_MODEL_FILE,
    LCG_DIR,
    EmbeddingModelSidecar,
    Event,
    ReadLimits,
    WalStore,
    check_streams,
    describe_os_error,
    private_dir,
    remove_trees,
    sweep_removals,
    write_embedding_model,
)
from lcg.extract import Embedder, HttpEmbedder, StandbyEmbedder
from lcg.projections import (
    CLEARED_FILE,
    DAMAGE_FILE,
    EMBEDDINGS_DIR,
    RESETS_FILE,
    CachedTextEmbedder,
    EmbeddingCache,
    GraphProjection,
    ProgressFn,
    Projector,
    ReplayResult,
    TextProjection,
    VectorProjection,
    cache_dir_name,
)
from lcg.workspace import lock as workspace_lock
from lcg.workspace._rwlock import RWLock
from lcg.workspace.auto_recovery import StartupHealing
from lcg.workspace.embedder_standby import recover, standby_for
from lcg.workspace.factory import (
    OpenContext,
    embedder_from_config,
    open_projections,
    projection_dirs,
)

__all__ = ["Workspace"]


class _WorkspaceLock:
    """Shared reads, exclusive maintenance, and a mutex around applying events.

    ``read()`` is held by queries; ``write()`` (rebuild, catch-up, close) excludes readers and
    applies; ``applying()`` (live commits) excludes other applies and ``write()`` only.
    """

    def __init__(self) -> None:
        self._rw = RWLock()
        self._apply = threading.RLock()

    def read(self) -> AbstractContextManager[None]:
        """Hold the projections for reading."""
        return self._rw.read()

    @contextmanager
    def write(self) -> Iterator[None]:
        """Hold the projections exclusively."""
        with self._rw.write(), self._apply:
            yield

    @contextmanager
    def applying(self) -> Iterator[None]:
        """Hold the right to apply events (not excluding readers)."""
        with self._apply:
            yield


def _state_dir(config: Config, *, inspect: bool) -> Path:
    """The workspace's own state directory (``.lcg``), where its lock lives: never beside a
    stream root that LCG_WAL_DIR may point elsewhere (a publication, a shared folder).
    Created private unless only looking (then it must exist)."""
    lcg_dir = config.workspace / LCG_DIR
    if inspect:
        require_workspace(config)
        if not lcg_dir.is_dir():  # streams elsewhere (LCG_WAL_DIR), never served here
            raise ConfigError(f"no lcg workspace state at {lcg_dir} (`lcg serve` there creates it)")
    else:
        private_dir(lcg_dir)  # 0700: no other local user reads the streams (ADR 0082)
    return lcg_dir


class Workspace:
    """Everything of one workspace that a process needs to read and write it."""

    def __init__(
        self,
        config: Config,
        embedder: Embedder | None = None,
        *,
        inspect: bool = False,
        publication: ReadLimits | None = None,
    ) -> None:
        """``publication``: the streams are someone else's (a replica follows them): they are
        read under these limits, no cache is written into them, and a bad group directory is
        the follower's to judge per group, not a reason to refuse the workspace (ADR 0154)."""
        self.config = config
        #: Opened to look only (``lcg status``, ``lcg verify``): nothing is created, applied,
        #: re-embedded or saved, and vectors another embedder made stay on disk as they are.
        self.inspect_only = inspect
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        lcg_dir = _state_dir(config, inspect=inspect)
        self._lock = workspace_lock.acquire(lcg_dir, look_only=inspect)
        try:
            if not inspect:
                # A replica's streams are the publication's: a tombstone-named entry there is
                # the publisher's (or an attacker's), never a removal of ours to finish.
                self._sweep_removals(config, streams=publication is None)
                if publication is None:
                    check_streams(config.wal_dir)
            self.store = WalStore(
                config.wal_dir,
                fsync=config.wal_fsync,
                max_events_per_file=config.wal_max_events_per_file,
                max_bytes_per_file=config.wal_max_bytes_per_file,
                write_caches=not inspect and publication is None,
                limits=publication,
            )
            self._open_embedder(config, embedder, inspect=inspect)
            #: Every projection, in the order each batch is applied to them.
            self.projections = open_projections(
                lambda spec: spec.directory(config),
                OpenContext(
                    dim=self.embedder.dim,
                    model_id=self.embedder.model_id,
                    read_only=inspect,
                    scratch=self._scratch_dir,
                ),
            )
            # The roles the reads need by type (the rest iterates ``projections``).
            self.graph = self.projections.role("graph", GraphProjection)
            self.text = self.projections.role("text", TextProjection)
            self.vectors = self.projections.role("vectors", VectorProjection)
            self.projector = Projector(
                self.store,
                self.projections,
                self.text_embedder,
                batch_size=config.replay_batch_size,
                failure_samples=config.replay_failure_samples,
                fidelity_threshold=config.replay_fidelity_threshold,
                damage_file=lcg_dir / DAMAGE_FILE,
                cleared_file=config.db_dir / CLEARED_FILE,
                resets_file=config.db_dir / RESETS_FILE,
            )
        except BaseException:
            self._lock.release()
            self._drop_scratch()
            raise
        self.rw = _WorkspaceLock()
        self._group_locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._closed = False
        self._stamped: set[str] = set()
        #: Groups whose last commit could not be applied or snapshotted after its append.
        self._apply_faults: dict[str, str] = {}

    def _open_embedder(self, config: Config, embedder: Embedder | None, *, inspect: bool) -> None:
        """The embedder (``config``'s unless given) and its cache of vectors."""
        self._owns_embedder = embedder is None
        self.embedder = embedder or embedder_from_config(config)
        if isinstance(self.embedder, HttpEmbedder):
            # A server that is away (or not asked: LCG_EMBEDDING_DIM) costs the vectors
            # only; the workspace opens and serves the rest (ADR 0171).
            self.embedder = standby_for(config, self.embedder)
        cache_dir = config.cache_dir
        model_cache = (
            cache_dir / EMBEDDINGS_DIR / cache_dir_name(self.embedder.model_id, self.embedder.dim)
        )
        if inspect and not model_cache.is_dir():
            cache_dir = self._scratch_dir("cache")  # looking makes no cache of its own
        self.cache = EmbeddingCache.for_embedder(cache_dir, self.embedder)
        self.text_embedder = CachedTextEmbedder(self.embedder, self.cache)

    @staticmethod
    def _sweep_removals(config: Config, *, streams: bool) -> None:
        """Finish the removals a crash interrupted: streams (``wipe``; only when they are
        this workspace's own), projections (``recover``), group vectors and Kuzu side files
        (ADR 0156)."""
        own_streams = (config.wal_dir,) if streams else ()
        for directory in (*own_streams, *projection_dirs(config)):
            sweep_removals(directory)
        for own in projection_dirs(config):
            sweep_removals(own.parent, of=own.name)  # a parent LCG_*_DIR may share

    def _scratch_dir(self, name: str) -> Path:
        """A directory outside the workspace for what an inspecting open must not create."""
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="lcg-inspect-")
        return Path(self._scratch.name) / name

    def _drop_scratch(self) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    @classmethod
    def open(
        cls,
        config: Config,
        embedder: Embedder | None = None,
        *,
        catch_up: bool = True,
        progress: ProgressFn | None = None,
        inspect: bool = False,
    ) -> Workspace:
        """Open the workspace and (by default) bring every projection up to its stream.

        ``inspect`` opens an existing workspace only to look (``ConfigError`` if there is
        none): no catch-up, no re-embedding, nothing written on close.
        """
        ws = cls(config, embedder, inspect=inspect)
        try:
            if catch_up and not inspect:
                ws.catch_up(progress)
            elif inspect:
                # Looking still finds damage (a lost tail, a sidecar naming another generation,
                # a damaged snapshot that only a catch-up would rebuild).
                ws.projector.assess_all()
                ws.projector.settle_files(attempted=False)
        except BaseException:
            ws.close()
            raise
        return ws

    def catch_up(self, progress: ProgressFn | None = None) -> dict[str, ReplayResult]:
        """Apply whatever the streams hold past the projections' positions; a snapshot
        found damaged on open is rebuilt here, in ``wal_auto_recovery`` phases."""
        healing = StartupHealing.begin(self.projector)
        try:
            results = self._catch_up(progress)
        except BaseException as exc:
            if healing is not None:
                healing.fail(exc)
            raise
        if healing is not None:
            healing.end(self.projector, results)
        return results

    def _catch_up(self, progress: ProgressFn | None) -> dict[str, ReplayResult]:
        with self.rw.write():
            try:
                results = self.projector.catch_up_all(progress)
            except ProjectionError as exc:
                if not isinstance(exc, ProjectionIOError) and not isinstance(
                    exc.__cause__, OSError
                ):
                    raise
                # No room to apply or to snapshot (a full disk at open): serve what the
                # projections hold; every group counts as lagging until ``retry_io_faults``
                # caught it up.
                for group_id in self.store.groups():
                    self._note_apply_fault(group_id, exc)
                return {}
        for group_id in results:
            self.record_embedding_model(group_id)
        return results

    def group_lock(self, group_id: str) -> threading.Lock:
        """The lock that serialises decide → append → apply for ``group_id``."""
        with self._locks_guard:
            lock = self._group_locks.get(group_id)
            if lock is None:
                lock = self._group_locks[group_id] = threading.Lock()
            return lock

    def commit(self, group_id: str, events: list[Event]) -> list[Event]:
        """Append ``events`` to the group's stream, then apply them; return them stamped.

        The caller holds ``group_lock(group_id)`` when its decision read the projections.
        A degraded group (its stream lost events the projections hold, or the reverse) takes
        no write until the operator acts: appending would bury the damage or reuse seqs.
        """
        reason = self.projector.degraded_reason(group_id)
        if reason is not None:
            raise DegradedError(f"writes to group {group_id!r} are refused: {reason}")
        stamped = self.store.append(group_id, events)
        # From here the events are durable, so the write succeeded whatever follows: a
        # projection that cannot apply or snapshot them (a full disk) lags, is noted in
        # ``io_faults()`` and catches up from the stream on a later commit or on open.
        try:
            # Applying excludes other applies and exclusive work (rebuild, close), not
            # readers: each projection guards its own state, so reads never queue behind.
            with self.rw.applying():
                self.projector.apply_live(group_id, stamped)
            if group_id not in self.projector.embedder_failures:
                # This write's own catch-up made the group's vectors whole (it embedded what
                # the drainer had still to make): no backlog is left to count.
                self.vectors.backlog.set_pending(group_id, 0)
            if group_id not in self._stamped:
                self._stamped.add(group_id)
                if not (self.store.group_dir(group_id) / EMBEDDING_MODEL_FILE).exists():
                    self.record_embedding_model(group_id)
        except Exception as exc:  # noqa: BLE001 - after the append nothing may fail the write
            self._note_apply_fault(group_id, exc)
        else:
            if group_id in self._apply_faults:
                self._note_apply_fault(group_id, None)
        return stamped

    def _note_apply_fault(self, group_id: str, exc: Exception | None) -> None:
        with self._locks_guard:
            if exc is None:
                reason = None
                self._apply_faults.pop(group_id, None)
            else:
                cause = exc if isinstance(exc, OSError) else exc.__cause__
                detail = (
                    describe_os_error(cause, Path(cause.filename))
                    if isinstance(cause, OSError) and cause.filename
                    else f"{type(exc).__name__}: {exc}"
                )
                reason = f"projections of group {group_id!r} lag the stream: {detail}"
                if self._apply_faults.get(group_id) == reason:
                    return
                self._apply_faults[group_id] = reason
        telemetry.emit(telemetry.IoFault(component=f"projections {group_id}", reason=reason))

    def retry_io_faults(self) -> None:
        """Retry what failed on I/O: clear faults whose directory takes writes again, and
        catch up the groups whose projections lag (once there is room, nothing waits for the
        next write to a group)."""
        for writer in self.store.open_writers():
            writer.recheck()
        self.cache.recheck()
        with self._locks_guard:
            lagging = list(self._apply_faults)
        for group_id in lagging:
            with self.group_lock(group_id):
                try:
                    with self.rw.applying():
                        self.projector.catch_up(group_id)
                        self.projector.save()
                except Exception as exc:  # noqa: BLE001 - still failing: noted, tried again later
                    self._note_apply_fault(group_id, exc)
                else:
                    self._note_apply_fault(group_id, None)

    def io_faults(self) -> list[str]:
        """Why writes fail or projections lag right now (a full disk), oldest cause first."""
        faults = [w.fault for w in self.store.open_writers() if w.fault is not None]
        if self.cache.fault is not None:
            faults.append(self.cache.fault)
        if self.graph.io_failure is not None:
            faults.append(self.graph.io_failure)
        with self._locks_guard:
            faults.extend(self._apply_faults.values())
        return faults

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Hold the projections for reading (many readers at once)."""
        with self.rw.read():
            yield

    @property
    def embedder_away(self) -> str | None:
        """Why no vector can be made now, with the remedy (``None``: the embedder answers)."""
        return self.embedder.away if isinstance(self.embedder, StandbyEmbedder) else None

    def retry_embedder(self) -> str | None:
        """Probe an away embedder; once it answers, catch up the vectors the groups lack
        (adopting what it reports); why it is still away, or ``None``."""
        return recover(self)

    def record_embedding_model(self, group_id: str) -> None:
        """Write ``.wal-embedding-model.json`` for a group whose stream directory exists."""
        gdir = self.store.group_dir(group_id)
        if isinstance(self.embedder, StandbyEmbedder) and not self.embedder.confirmed:
            return  # a provisional identity is no record of what made the vectors
        if gdir.is_dir():
            try:
                write_embedding_model(
                    gdir,
                    EmbeddingModelSidecar(
                        model=self.embedder.model_id,
                        dim=self.embedder.dim,
                        written_at=timestamps.now(),
                    ),
                )
            except OSError:
                pass  # A read-only publication keeps its sidecars.

    def known_groups(self, *, record_only: bool = False) -> list[str]:
        """Every group of the workspace, sorted: those with a stream and those any projection
        holds anything of. ``record_only``: the projection of record's only beside the
        streams — the groups whose state status reports and a dump writes (both read the
        graph); a wipe or a clear reaches whatever any projection holds."""
        held = self.projections.record.groups() if record_only else self.projections.groups()
        return sorted({*self.store.groups(), *held})

    def wipe(self) -> None:
        """Delete every stream and everything projected from them (``clear_all``)."""
        with self.rw.write():
            groups = self.known_groups()
            self.store.close()
            for group_id in groups:
                self.projections.purge_group(group_id)
            # Each stream goes in one step (renamed away, then deleted): a crash here leaves
            # it whole or gone, never with a hole (ADR 0156).
            if self.config.wal_dir.is_dir():
                remove_trees(list(self.config.wal_dir.iterdir()))
            self.config.wal_dir.mkdir(parents=True, exist_ok=True)
            # New streams start at seq 0 again: no floor of the old ones may hide them.
            self.projector.forget_cleared()
            self.projector.forget_damage()  # nothing is left that could be damaged
            self.projector.forget_resets()  # nor a previous generation to report
            self.projector.save()

    def digests(self, group_id: str) -> dict[str, str]:
        """The canonical digest of each projection for ``group_id``."""
        with self.rw.read():
            return self.projections.digests(group_id)

    def close(self) -> None:
        """Save snapshots, close projections and writers, release the workspace lock."""
        if self._closed:
            return
        self._closed = True

        def save() -> None:
            with self.rw.write():
                self.projector.save()

        steps: list[tuple[str, Callable[[], None]]] = [] if self.inspect_only else [("save", save)]
        steps += [
            ("streams", self.store.close),
            *((proj.name, proj.close) for proj in self.projections),
            ("cache", self.cache.close),
        ]
        if self._owns_embedder:
            steps.append(("embedder", self.embedder.close))
        failure: BaseException | None = None
        try:
            # Every step runs whatever an earlier one raised: a snapshot that cannot be
            # written (a full disk) must not leave the graph or the streams unclosed.
            for what, step in steps:
                try:
                    step()
                except (ProjectionError, OSError) as exc:
                    # A snapshot not written costs a catch-up from the stream on the next
                    # open, nothing more: say so and go on closing.
                    telemetry.emit(
                        telemetry.IoFault(
                            component=f"workspace close ({what})",
                            reason=f"{exc}; the projections catch up from the streams on open",
                        )
                    )
                except BaseException as exc:  # noqa: BLE001 - re-raised once all steps ran
                    failure = failure or exc
        finally:
            self._lock.release()
            self._drop_scratch()
        if failure is not None:
            raise failure

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
