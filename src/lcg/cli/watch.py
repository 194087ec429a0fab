"""``lcg watch PATH...``: keep source trees in sync while they change.

It first syncs every tree (catching up with whatever changed while nothing watched), then
syncs a tree again each time files in it change (watchfiles, debounced: a saved file is
searchable well within 2 s). Only changed files are read again. It goes through the running
service when there is one, and waits out a restart of it (then syncs every tree again, so
nothing changed meanwhile is lost); with no service it serves the workspace's socket itself,
so ``lcg search`` and every other command keep working beside it. SIGINT/SIGTERM end it with
exit status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from lcg.cli._common import add_command, config_from
from lcg.cli._service import live_client
from lcg.cli._sync import ServiceBackend, summary_line
from lcg.cli.ingest import check_roots
from lcg.config import Config
from lcg.errors import LcgError
from lcg.events import DEFAULT_GROUP
from lcg.ingest import ScanCache, SyncReport, sync_tree
from lcg.rpc import Client, TransportError

__all__ = ["Watcher", "register"]

_SUMMARY = "Watch files and folders and keep them in sync in a group until stopped."
_DETAILS = """
Starts with a sync of every PATH (as lcg ingest), then syncs again whenever files change:
saves, new files, deletes and moves. Through the running service, or serving the
workspace's socket itself when none runs. Stop it with Ctrl-C or SIGTERM.
"""
_EXAMPLE = """
lcg watch ~/notes                        # keep ~/notes current in group 'liminis'
lcg watch ~/notes docs/ --group work
"""

#: Milliseconds without a further change before a batch of changes is synced.
STEP_MS = 50
#: Longest a stream of changes is gathered before it is synced anyway.
DEBOUNCE_MS = 400


class Watcher:
    """Syncs trees through a service, again whenever their files change."""

    def __init__(
        self,
        socket_path: Path,
        roots: list[Path],
        group_id: str,
        *,
        stop: threading.Event,
        say: Callable[[str], None],
    ) -> None:
        self.socket_path = socket_path
        self.roots = [r.resolve() for r in roots]
        self.group_id = group_id
        self.stop = stop
        self.say = say
        self.caches: dict[Path, ScanCache] = {r: {} for r in self.roots}
        self._client: Client | None = None
        #: Until the first connection a slow start (the catch-up on open) is no news.
        self._connected_once = False

    def _backend(self) -> ServiceBackend:
        """A backend on a ready service, waiting (until stopped) for one to answer."""
        waited = False
        while self._client is None:
            client = Client(self.socket_path, timeout=None)
            try:
                # Short waits, so that a stop request is seen while no service answers.
                client.wait_ready(timeout=2.0, starting=True)
                self._client = client
                self._connected_once = True
            except (TransportError, LcgError) as exc:
                client.close()
                if not waited and self._connected_once:
                    self.say(f"waiting for the service at {self.socket_path} ({exc})")
                    waited = True
                if self.stop.wait(0.5):
                    raise _Stopped from None
        return ServiceBackend(self._client)

    def sync(self, roots: list[Path], *, always_say: bool = False) -> None:
        """Sync ``roots``; after the service went away, every tree once it is back."""
        pending = list(roots)
        while pending and not self.stop.is_set():
            root = pending[0]
            try:
                report = sync_tree(self._backend(), root, self.group_id, cache=self.caches[root])
            except TransportError as exc:
                self._drop_client()
                self.say(f"the service went away ({exc}); syncing every tree when it is back")
                pending = list(self.roots)
                continue
            pending.pop(0)
            if always_say or _changed(report):
                self.say(summary_line(report))

    def _warm_up(self) -> None:
        """One search, so the embedder's model is loaded before the first save (else the
        first save waits for the load, seconds on a small machine)."""
        if self._client is None:
            return
        try:
            self._client.call(
                "knowledge_search_passages", {"query": "warm up", "group_ids": [self.group_id]}
            )
        except (TransportError, LcgError):
            pass  # a failure here changes nothing; the next sync says what is wrong

    def _drop_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _affected(self, paths: set[str]) -> list[Path]:
        hit: list[Path] = []
        for root in self.roots:
            for raw in paths:
                p = Path(raw)
                if p == root or root in p.parents:
                    inner = p.relative_to(root).parts if p != root else ()
                    # Hidden entries (.lcg/, .git/, editors' swap files) never count.
                    if not any(part.startswith(".") for part in inner):
                        hit.append(root)
                        break
        return hit

    def run(self) -> None:
        """Sync every tree, then again on each change, until ``stop`` is set."""
        import watchfiles

        try:
            self.sync(self.roots, always_say=True)
            self._warm_up()
            self.say(
                f"watching {len(self.roots)} tree{'s' if len(self.roots) != 1 else ''} "
                f"into group {self.group_id!r}; stop with Ctrl-C"
            )
            folders = sorted({r if r.is_dir() else r.parent for r in self.roots})
            for changes in watchfiles.watch(
                *folders,
                watch_filter=None,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=self.stop,
                rust_timeout=1000,
                yield_on_timeout=True,
                raise_interrupt=False,
            ):
                if self.stop.is_set():
                    break
                affected = self._affected({path for _, path in changes})
                if affected:
                    self.sync(affected)
        except _Stopped:
            pass
        finally:
            self._drop_client()


class _Stopped(Exception):
    """Raised inside the watcher when it was asked to stop while waiting."""


def _changed(r: SyncReport) -> bool:
    return bool(r.chunks_added or r.chunks_removed or r.files_removed)


def _say(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)


def _watch_through(config: Config, roots: list[Path], group_id: str) -> int:
    """Watch through the service already running."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        _say(f"using the service running on {config.socket_path}")
        Watcher(config.socket_path, roots, group_id, stop=stop, say=_say).run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    _say("stopped")
    return 0


def _watch_hosting(config: Config, roots: list[Path], group_id: str) -> int:
    """Serve the workspace's socket here and watch through it."""
    from lcg.rpc import Limits, Server, build_app, serve

    stop = threading.Event()
    watcher = Watcher(config.socket_path, roots, group_id, stop=stop, say=_say)
    thread = threading.Thread(target=watcher.run, name="lcg-watch", daemon=True)

    def started(server: Server) -> None:
        _say(f"serving {config.socket_path} (no service was running)")
        thread.start()

    app = build_app(config)
    try:
        asyncio.run(
            serve(
                app,
                config.socket_path,
                config.shutdown_timeout_ms,
                started=started,
                limits=Limits.from_config(config),
            )
        )
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(timeout=30)
    _say("stopped")
    return 0


def _run(args: argparse.Namespace) -> int:
    roots = check_roots(args.paths)
    config = config_from(args)
    client = live_client(config)
    if client is not None:
        client.close()
        return _watch_through(config, roots, args.group)
    return _watch_hosting(config, roots, args.group)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg watch``."""
    p = add_command(
        subparsers, "watch", summary=_SUMMARY, details=_DETAILS, example=_EXAMPLE, func=_run
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a file or folder to keep in sync")
    p.add_argument(
        "-g",
        "--group",
        default=DEFAULT_GROUP,
        metavar="G",
        help=f"the group (default {DEFAULT_GROUP!r})",
    )
