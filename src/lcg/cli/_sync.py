"""How ``lcg ingest`` and ``lcg watch`` reach a workspace, and how they report a sync.

Always through a service (``lcg.cli._backend.ServiceBackend``, the
``knowledge_source_manifest`` / ``knowledge_sync_chunks`` methods, imported when a sync
starts: the command's parser stays light): the one answering on the workspace socket, or one the
command serves itself while it runs (``lcg.cli._holder``, ADR 0199), so ``lcg search`` and
``lcg status`` answer during a long first ingest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from lcg.cli._service import ProgressBar
from lcg.client import Client
from lcg.config import Config

if TYPE_CHECKING:
    from lcg.ingest import SyncBackend, SyncProgress, SyncReport

__all__ = [
    "SyncBar",
    "open_backend",
    "service_backend",
    "summary_line",
    "with_backend",
]

T = TypeVar("T")


def service_backend(client: Client) -> SyncBackend:
    """A sync through the service ``client`` talks to (``lcg.cli._backend``, imported now)."""
    from lcg.cli._backend import ServiceBackend

    return ServiceBackend(client)


@contextmanager
def open_backend(config: Config, *, silent: bool = False) -> Iterator[tuple[SyncBackend, str]]:
    """A backend on the workspace's service (ADR 0199): the one running, or one this command
    serves while it runs (the workspace created when there is none); with a phrase saying
    which. ``with_backend`` also goes on through the next holder should this one end."""
    from lcg.cli._holder import service

    with service(config, "ingest", quiet=silent) as (client, how):
        yield service_backend(client), how


def with_backend(
    config: Config, work: Callable[[SyncBackend, str], T], *, silent: bool = False
) -> T:
    """``work(backend, how)`` on the workspace's service (ADR 0199): the one running, or one
    this command serves while it runs (the workspace created when there is none); ``how`` is
    a phrase saying which. Run again through the next holder when the one used ended: a
    sync is safe to repeat."""
    from lcg.cli._holder import through_service

    def on_client(client: Client, how: str) -> T:
        return work(service_backend(client), how)

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
