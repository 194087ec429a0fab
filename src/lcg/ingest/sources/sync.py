"""Bringing a group's copy of a source tree up to date: scan, compare, then record the change.

``sync_tree`` asks the backend which source the path belongs to (``resolve``: the innermost
registered folder holding it, else a new source registered for it; ADR 0200), reads that
source's tree or the part of it the path names (``scan_tree``), asks what the group holds of
it (``manifest``), plans the difference (``plan_sync``) and sends it in batches: first every
chunk to add, then the removals. Nothing is sent for an unchanged tree, so re-ingesting it
appends no event and embeds nothing. Adding before removing means a crash at any point leaves
the old text or the new, never neither; the same command again sees what is still missing or
still stale and converges. A tree with no file to read (empty, missing, unmounted) removes
nothing unless ``prune`` is given: the report says what would have gone
(``files_held``). The backend is the running service (through its socket) or the workspace
opened in this process (``direct.DirectBackend``); both record the same events. This module
is the client side and imports nothing of the engine (ADR 0218).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import msgspec

from lcg.errors import ConfigError
from lcg.ingest.declared.model import DeclaredStructure, DeclareResult
from lcg.ingest.sources.chunking import DEFAULT_MAX_CHARS
from lcg.ingest.sources.commits import (
    DEFAULT_WINDOW,
    CommitWindow,
    commit_mentions,
    commit_source,
    tree_commits,
)
from lcg.ingest.sources.declaring import DeclaredCounts, declared_counts, tree_structure
from lcg.ingest.sources.discover import DEFAULT_MAX_FILE_BYTES, Skipped
from lcg.ingest.sources.model import (
    ChunkIn,
    RemovalIn,
    RemovedSource,
    ResolvedSource,
    SourceKind,
    SourceStatus,
    SyncChunksResult,
)
from lcg.ingest.sources.times import source_times
from lcg.ingest.sources.tree import (
    Scan,
    ScanCache,
    StoredChunk,
    SyncPlan,
    TreeScope,
    plan_sync,
    scan_tree,
    under,
)

__all__ = [
    "ADD_BATCH_BYTES",
    "ADD_BATCH_CHUNKS",
    "DEFERRED_BATCH_CHUNKS",
    "SyncBackend",
    "SyncProgress",
    "SyncReport",
    "sync_tree",
]

#: Chunks per batch: one commit, one embedder call (the replay batch size's default).
ADD_BATCH_CHUNKS = 64
#: Chunks per batch once the backend answered that it leaves the vectors to the background
#: (ADR 0206): a request is then an append, the graph and BM25, about 0.1 ms a chunk.
DEFERRED_BATCH_CHUNKS = 1024
#: Bytes of text per batch, far under the service's 8 MiB request limit.
ADD_BATCH_BYTES = 1024 * 1024
#: Episode uuids per removal call.
_REMOVE_BATCH = 2000


class SyncBackend(Protocol):
    """Where a sync reads what the group holds and records its batches."""

    def manifest(self, group_id: str, scope: TreeScope) -> list[StoredChunk]:
        """The group's chunks of the tree."""
        ...

    def sync(
        self, group_id: str, adds: list[ChunkIn], removals: list[RemovalIn]
    ) -> SyncChunksResult:
        """Record one batch."""
        ...

    def resolve(
        self, group_id: str, root: str, kind: SourceKind, *, create: bool, touch: bool = False
    ) -> ResolvedSource:
        """The source ``root`` belongs to (registered here when new and ``create``)."""
        ...

    def sources(self, group_ids: list[str] | None) -> list[SourceStatus]:
        """The sources of the groups (``None``: every group) and what each holds."""
        ...

    def remove(self, group_id: str, prefix: str) -> RemovedSource:
        """Remove the source served under ``prefix``: its episodes, then its registration."""
        ...

    def declare(self, group_id: str, root: str, structure: DeclaredStructure) -> DeclareResult:
        """Make the source's declared structure match ``structure`` (ADR 0203)."""
        ...


class SyncProgress(msgspec.Struct, kw_only=True):
    """How far a sync's sending is: chunks sent of those to add, files done of those to do."""

    chunks_done: int
    chunks_total: int
    files_done: int
    files_total: int
    elapsed_s: float


class SyncReport(msgspec.Struct, kw_only=True):
    """What one sync of one tree did (``--json`` prints it)."""

    root: str
    source: str
    group_id: str
    files_new: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    #: Files there but not readable this run, whose stored chunks were kept (ADR 0192).
    files_kept: int = 0
    files_skipped: int = 0
    files_ignored: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_unchanged: int = 0
    extracted: int = 0
    extraction_failed: int = 0
    pending: int = 0
    #: Added chunks whose vectors the service makes in the background (ADR 0201).
    vectors_deferred: int = 0
    seconds: float = 0.0
    skipped: list[Skipped] = []
    #: Files the group holds that a sync would have removed, kept because the tree had no
    #: file to read (empty or missing) and ``prune`` was not given (ADR 0200).
    files_held: int = 0
    #: Why they were kept (``""``: nothing held back).
    held_because: str = ""
    #: Whether this sync registered the source (its first).
    registered: bool = False
    #: Commits of the tree's git history read, sent as episodes, and removed (ADR 0205).
    commits_read: int = 0
    commits_added: int = 0
    commits_removed: int = 0
    #: What the tree's files declare (ADR 0203); ``None``: the sync covered a part of the
    #: tree, or held its files back, and did not run the declared pass.
    declared: DeclaredCounts | None = None


class _Batches:
    """``adds`` in batches of at most ``chunks`` chunks (``ADD_BATCH_CHUNKS``, raised to
    ``DEFERRED_BATCH_CHUNKS`` by ``deferred()``) and ``ADD_BATCH_BYTES`` bytes."""

    def __init__(self, adds: list[ChunkIn]) -> None:
        self.adds = adds
        self.chunks = ADD_BATCH_CHUNKS

    def deferred(self) -> None:
        """The backend leaves the vectors to the background: larger batches from now on."""
        self.chunks = DEFERRED_BATCH_CHUNKS

    def __iter__(self) -> Iterator[list[ChunkIn]]:
        current: list[ChunkIn] = []
        size = 0
        for chunk in self.adds:
            n = len(chunk.chunk_text.encode("utf-8"))
            if current and (len(current) >= self.chunks or size + n > ADD_BATCH_BYTES):
                yield current
                current, size = [], 0
            current.append(chunk)
            size += n
        if current:
            yield current


def sync_tree(
    backend: SyncBackend,
    root: Path,
    group_id: str,
    *,
    prune: bool = False,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    cache: ScanCache | None = None,
    progress: Callable[[SyncProgress], None] | None = None,
    commits: CommitWindow | None = DEFAULT_WINDOW,
    declared_memo: dict[str, tuple[bytes, DeclareResult]] | None = None,
) -> SyncReport:
    """Make ``group_id`` hold exactly the chunks of the tree at ``root`` (or, for a path
    inside an indexed tree, of that part of it); what changed.

    A path that is not there is synced only if it is a registered source (its files are then
    held back unless ``prune``); else ``ConfigError``. A folder's git commits of ``commits``
    (``None``: none) are episodes of it too (ADR 0205). ``declared_memo`` (kept by a caller
    that syncs the same trees again, as ``lcg watch``) lets a sync that changed no chunk skip
    sending a declared structure equal to the one it last sent.
    """
    started = time.monotonic()
    path = Path(os.path.abspath(root.expanduser())).resolve()
    exists = os.path.lexists(path)
    kind: SourceKind = "file" if path.is_file() else "folder"
    found = backend.resolve(group_id, str(path), kind, create=exists)
    source = found.source
    if source is None:
        raise ConfigError(f"no such file or folder: {root}")
    scope = source.scope
    scan = scan_tree(
        Path(source.root),
        scope=scope,
        within=found.within,
        exclude=tuple(found.nested),
        max_chars=max_chars,
        max_bytes=max_bytes,
        cache=cache,
    )
    if not os.path.lexists(source.root):
        scan.skipped = []  # a missing tree has nothing to skip: its summary says it is missing
    part = scope.prefix + found.within if found.within else ""
    stored = [s for s in backend.manifest(group_id, scope) if under(s.source_file, part)]
    plan = plan_sync(scan, [s for s in stored if s.source_file != commit_source(scope)])
    label = part or scope.prefix.rstrip(":")
    report = _report(source.root, label, group_id, scan, plan, registered=found.created)
    if plan.files_removed and not scan.files and not prune:
        _hold(report, plan, Path(source.root) / found.within)
    history = tree_commits(
        scope, commits, stored, within=found.within, hold=bool(report.held_because)
    )
    report.commits_read, report.commits_added = history.read, len(history.adds)
    report.commits_removed = len(history.removals)
    report.chunks_unchanged += history.unchanged
    if history.removals:
        plan.removals[history.source] = history.removals
    touched = {c.source_file for c in plan.adds}
    adds = _chunks_in(scope, scan, plan, touched) + history.adds
    files_total = len(touched) + plan.files_removed + bool(history.adds)
    _send(backend, group_id, adds, report, progress, files_total, started)
    removals = [RemovalIn(source_file=s, episode_uuids=u) for s, u in plan.removals.items()]
    for group in _removal_batches(removals):
        _count(report, backend.sync(group_id, [], group))
    if not found.within and not report.held_because:
        # The declared pass: only a scan of the whole tree says what the whole tree declares.
        structure = tree_structure(scan, stored, list(plan.removals))
        # Each commit's episode MENTIONS the documents of the files it touched (ADR 0205).
        structure.mentions += commit_mentions(history, [d.path for d in structure.documents])
        changed = bool(report.chunks_added or report.chunks_removed or plan.files_removed)
        declared = _declare(backend, group_id, source.root, structure, changed, declared_memo)
        report.declared = declared_counts(structure, declared)
    if (report.chunks_added or report.chunks_removed) and not found.created:
        backend.resolve(group_id, source.root, source.kind, create=False, touch=True)
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _report(
    root: str, source: str, group_id: str, scan: Scan, plan: SyncPlan, *, registered: bool
) -> SyncReport:
    """The report of a sync as planned, before anything is sent."""
    return SyncReport(
        root=root,
        source=source,
        group_id=group_id,
        files_new=plan.files_new,
        files_changed=plan.files_changed,
        files_unchanged=plan.files_unchanged,
        files_removed=plan.files_removed,
        files_kept=plan.files_kept,
        files_skipped=len(scan.skipped),
        files_ignored=scan.ignored,
        skipped=scan.skipped,
        chunks_unchanged=sum(len(f.chunks) for f in scan.files) - len(plan.adds),
        registered=registered,
    )


def _hold(report: SyncReport, plan: SyncPlan, where: Path) -> None:
    """Hold back the removals of a tree with nothing to read: that is no evidence its files
    are gone (an unmounted disk, a folder emptied by accident, a path that moved). Only
    --prune (or lcg sources remove) removes."""
    report.files_held, report.files_removed = plan.files_removed, 0
    report.held_because = (
        "it is missing" if not os.path.lexists(where) else "it has no file to read"
    )
    plan.removals = {}


def _chunks_in(scope: TreeScope, scan: Scan, plan: SyncPlan, touched: set[str]) -> list[ChunkIn]:
    """The chunks to add, each dated by its file (``source_times``)."""
    by_source = {f.source_file: f for f in scan.files}
    folder = Path(scope.root) if Path(scope.root).is_dir() else Path(scope.root).parent
    times = source_times(
        folder, {Path(by_source[s].path): by_source[s].mtime_ns for s in sorted(touched)}
    )
    return [
        ChunkIn(
            chunk_id=c.chunk_id,
            source_file=c.source_file,
            chunk_text=c.text,
            reference_time=times[Path(by_source[c.source_file].path)],
        )
        for c in plan.adds
    ]


def _send(
    backend: SyncBackend,
    group_id: str,
    adds: list[ChunkIn],
    report: SyncReport,
    progress: Callable[[SyncProgress], None] | None,
    files_total: int,
    started: float,
) -> None:
    """Send the chunks to add, in batches, counting the answers and reporting progress."""
    done_files: set[str] = set()
    sent = 0
    batches = _Batches(adds)
    for batch in batches:
        answer = backend.sync(group_id, batch, [])
        _count(report, answer)
        if answer.vectors_deferred:
            batches.deferred()
        sent += len(batch)
        done_files.update(c.source_file for c in batch)
        if progress is not None:
            progress(
                SyncProgress(
                    chunks_done=sent,
                    chunks_total=len(adds),
                    files_done=len(done_files),
                    files_total=files_total,
                    elapsed_s=time.monotonic() - started,
                )
            )


def _declare(
    backend: SyncBackend,
    group_id: str,
    root: str,
    structure: DeclaredStructure,
    changed: bool,
    memo: dict[str, tuple[bytes, DeclareResult]] | None,
) -> DeclareResult:
    """Send the tree's declared structure, unless it is the one sent last (``memo``) and no
    chunk ``changed``: the group holds it already."""
    digest = hashlib.sha256(msgspec.json.encode(structure)).digest()
    last = None if memo is None else memo.get(root)
    if last is not None and last[0] == digest and not changed:
        return DeclareResult(mentions_unheld=last[1].mentions_unheld)
    declared = backend.declare(group_id, root, structure)
    if memo is not None:
        memo[root] = (digest, declared)
    return declared


def _removal_batches(removals: list[RemovalIn]) -> list[list[RemovalIn]]:
    out: list[list[RemovalIn]] = []
    current: list[RemovalIn] = []
    size = 0
    for r in removals:
        if current and size + len(r.episode_uuids) > _REMOVE_BATCH:
            out.append(current)
            current, size = [], 0
        current.append(r)
        size += len(r.episode_uuids)
    if current:
        out.append(current)
    return out


def _count(report: SyncReport, result: SyncChunksResult) -> None:
    report.chunks_added += len(result.added)
    report.chunks_unchanged += result.already_held
    report.chunks_removed += result.removed
    report.extracted += result.extracted
    report.extraction_failed += result.extraction_failed
    report.pending += result.pending
    report.vectors_deferred += result.vectors_deferred
