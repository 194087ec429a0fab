"""How ``lcg ingest`` and ``lcg watch`` reach a workspace, and how they report a sync.

Always through a service (``ServiceBackend``, the ``knowledge_source_manifest`` /
``knowledge_sync_chunks`` methods): the one answering on the workspace socket, or one the
command serves itself while it runs (``lcg.cli._holder``, ADR 0199), so ``lcg search`` and
``lcg status`` answer during a long first ingest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import msgspec

from lcg.cli._service import ProgressBar
from lcg.config import Config
from lcg.ingest import (
    ChunkIn,
    DeclaredStructure,
    DeclareResult,
    RemovalIn,
    RemovedSource,
    ResolvedSource,
    SourceKind,
    SourceStatus,
    StoredChunk,
    SyncBackend,
    SyncChunksResult,
    SyncProgress,
    SyncReport,
    TreeScope,
)
from lcg.rpc import Client

__all__ = [
    "ServiceBackend",
    "SyncBar",
    "open_backend",
    "with_backend",
    "summary_line",
]

_to_builtins = msgspec.to_builtins
T = TypeVar("T")


class ServiceBackend:
    """A sync through the running service."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def manifest(self, group_id: str, scope: TreeScope) -> list[StoredChunk]:
        """The group's chunks of the tree."""
        result = self.client.call(
            "knowledge_source_manifest", {"prefix": scope.prefix, "group_id": group_id}
        )
        return msgspec.convert(result["chunks"], list[StoredChunk])

    def sync(
        self, group_id: str, adds: list[ChunkIn], removals: list[RemovalIn]
    ) -> SyncChunksResult:
        """Record one batch."""
        result = self.client.call(
            "knowledge_sync_chunks",
            {"group_id": group_id, "add": _to_builtins(adds), "remove": _to_builtins(removals)},
        )
        return msgspec.convert(result, SyncChunksResult)

    def resolve(
        self, group_id: str, root: str, kind: SourceKind, *, create: bool, touch: bool = False
    ) -> ResolvedSource:
        """The source ``root`` belongs to (registered by the service when new and ``create``)."""
        params = {"group_id": group_id, "root": root, "kind": kind, "create": create}
        result = self.client.call("knowledge_source_register", {**params, "touch": touch})
        return msgspec.convert(result, ResolvedSource)

    def sources(self, group_ids: list[str] | None) -> list[SourceStatus]:
        """The sources of the groups (``None``: every group) and what each holds."""
        result = self.client.call("knowledge_sources", {"group_ids": group_ids})
        return msgspec.convert(result["sources"], list[SourceStatus])

    def remove(self, group_id: str, prefix: str) -> RemovedSource:
        """Remove the source served under ``prefix``: its episodes, then its registration."""
        result = self.client.call(
            "knowledge_source_remove", {"group_id": group_id, "prefix": prefix}
        )
        return msgspec.convert(result, RemovedSource)

    def declare(self, group_id: str, root: str, structure: DeclaredStructure) -> DeclareResult:
        """Make the source's declared structure match ``structure`` (ADR 0203). The unresolved
        links stay here (the service needs none), and empty fields are left out: a tree's
        structure is one request."""
        sent = msgspec.structs.replace(structure, unresolved=[])
        result = self.client.call(
            "knowledge_declare_structure",
            {"group_id": group_id, "root": root, "structure": _compact(_to_builtins(sent))},
        )
        return msgspec.convert(result, DeclareResult)


def _compact(value: object) -> object:
    """``value`` without the keys whose value is empty (``None``, ``[]``, ``{}``): the
    service's decoder gives each its default again."""
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if v is not None and v != [] and v != {}}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


@contextmanager
def open_backend(config: Config, *, silent: bool = False) -> Iterator[tuple[SyncBackend, str]]:
    """A backend on the workspace's service (ADR 0199): the one running, or one this command
    serves while it runs (the workspace created when there is none); with a phrase saying
    which. ``with_backend`` also goes on through the next holder should this one end."""
    from lcg.cli._holder import service

    with service(config, "ingest", quiet=silent) as (client, how):
        backend: SyncBackend = ServiceBackend(client)
        yield backend, how


def with_backend(
    config: Config, work: Callable[[SyncBackend, str], T], *, silent: bool = False
) -> T:
    """``work(backend, how)`` on the workspace's service (ADR 0199): the one running, or one
    this command serves while it runs (the workspace created when there is none); ``how`` is
    a phrase saying which. Run again through the next holder when the one used ended: a
    sync is safe to repeat."""
    from lcg.cli._holder import through_service

    def on_client(client: Client, how: str) -> T:
        backend: SyncBackend = ServiceBackend(client)
        return work(backend, how)

    return through_service(config, "ingest", on_client, quiet=silent)


class SyncBar:
    """The progress bar of a sync: chunks sent, files, embedding rate and time left."""

    def __init__(self, label: str, *, silent: bool) -> None:
        self.bar = ProgressBar(label, silent=silent)

    def __call__(self, p: SyncProgress) -> None:
        """Redraw with ``p``."""
        rate = p.chunks_done / p.elapsed_s if p.elapsed_s > 0 else 0.0
        left = (p.chunks_total - p.chunks_done) / rate if rate > 0 else 0.0
        self.bar.update(
            p.chunks_done,
            p.chunks_total,
            f"chunks, {p.files_done}/{p.files_total} files, {rate:.1f} chunks/s, "
            f"ETA {_duration(left)}",
        )

    def done(self) -> None:
        """Finish the bar's line."""
        self.bar.done()


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    return time.strftime("%H:%M:%S" if seconds >= 3600 else "%M:%S", time.gmtime(seconds))


def summary_line(r: SyncReport) -> str:
    """One line: files new / changed / unchanged / removed / skipped, chunks, time, mode."""
    if r.chunks_added and r.extracted == 0 and r.extraction_failed == 0:
        mode = "; lite mode: stored and searchable, extraction pending (no LLM configured)"
    elif r.extraction_failed:
        mode = f"; {r.extraction_failed} chunks failed to extract (kept, pending)"
    elif r.extracted:
        mode = f"; {r.extracted} chunks extracted"
    else:
        mode = ""
    if r.vectors_deferred:
        # Text first (ADR 0201): searchable by its words now, its vectors made after.
        mode += (
            f"; {r.vectors_deferred} chunks' vectors still to come (searchable by their "
            "words meanwhile; `lcg status` shows the backlog)"
        )
    if r.commits_read or r.commits_added or r.commits_removed:
        mode = (
            f"; commits {r.commits_read} read, {r.commits_added} added, "
            f"{r.commits_removed} removed{mode}"
        )
    if r.declared is not None and r.declared.documents:
        d = r.declared
        mode += (
            f"; declared: {d.documents} documents, {d.links} links, {d.tags} tags, "
            f"{d.imports} imports, {d.mentions} mentions, {d.unresolved} unresolved"
        )
    return (
        f"{r.source} -> group {r.group_id!r}: files {r.files_new} new, {r.files_changed} "
        f"changed, {r.files_unchanged} unchanged, {r.files_removed} removed, "
        f"{r.files_skipped} skipped; chunks {r.chunks_added} added, {r.chunks_removed} "
        f"removed, {r.chunks_unchanged} unchanged; {r.seconds:.2f} s{mode}"
    )
