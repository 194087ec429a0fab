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
import functools
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from lcg.cli._common import add_command, config_from
from lcg.cli._holder import claim, take_for_process
from lcg.cli._service import wait_serving
from lcg.cli._sync import service_backend, summary_line
from lcg.cli._terminal import stamped
from lcg.cli.ingest import add_commit_options, check_roots, commit_window, held_line
from lcg.client import Client, TransportError
from lcg.config import Config
from lcg.errors import LcgError, StreamLockedError
from lcg.events import DEFAULT_GROUP, LCG_DIR
from lcg.ingest import DEFAULT_WINDOW, history_dir

if TYPE_CHECKING:
    from lcg.ingest import CommitWindow, DeclareResult, ScanCache, SyncBackend, SyncReport
    from lcg.rpc import ComponentProblems

__all__ = ["WATCHER", "Watcher", "backoff", "register", "start_watching"]

_SUMMARY = "Watch files and folders and keep them in sync in a group until stopped."
_DETAILS = """
Starts with a sync of every PATH (as lcg ingest), then syncs again whenever files change:
saves, new files, deletes and moves; every 30 s each tree is checked anyway, so a change
whose file event was lost is found. A new git commit is an episode (as lcg ingest). Through
the running service, or serving the workspace's socket itself when none runs. A tree with no
file to read (emptied, unmounted) removes nothing unless --prune is given (ADR 0200). Stop
it with Ctrl-C or SIGTERM.
"""
_EXAMPLE = """
lcg watch ~/notes                        # keep ~/notes current in group 'liminis'
lcg watch ~/notes docs/ --group work
"""

#: Milliseconds without a further change before a batch of changes is synced.
STEP_MS = 50
#: Longest a stream of changes is gathered before it is synced anyway.
DEBOUNCE_MS = 400
#: The first wait before a tree whose sync failed is synced again, or the watching machinery
#: (or the whole watcher) that failed is started again; it doubles with each failure in a row.
RETRY_FIRST_S = 1.0
#: The longest such wait: a tree that keeps failing is tried at most this often.
RETRY_MAX_S = 15.0
#: Every tree is synced this often even when no change was told: file events can be lost
#: (a queue overflow, a folder too deep or too wide to watch, a file system that tells
#: nothing) and a save must never wait for the next event to be found (ADR 0202).
SWEEP_S = 30.0


def backoff(failures: int) -> float:
    """Seconds to wait after ``failures`` failures in a row: 1, 2, 4, ... up to RETRY_MAX_S."""
    return float(min(RETRY_MAX_S, RETRY_FIRST_S * 2 ** (min(max(failures, 1), 16) - 1)))


@dataclass
class _Failing:
    """A tree whose last sync failed, and when it is tried again."""

    error: str
    tries: int
    next_try: float


class Watcher:
    """Syncs trees through a service, again whenever their files change.

    Nothing that goes wrong in one sync or one batch of changes ends it (ADR 0193): a tree
    whose sync raises is named on ``warn`` with the error and tried again after a back-off
    (``backoff``; a change meanwhile waits for it); the watching machinery (watchfiles) that
    raises is started again after a back-off, and every tree synced once it runs (the changes
    of the lost batch are not known); a bug that ends ``run`` itself starts it again. While
    any of these fails, ``report`` is given one line saying what (``None`` once all works).
    """

    def __init__(
        self,
        socket_path: Path,
        roots: list[Path],
        group_id: str,
        *,
        stop: threading.Event,
        say: Callable[[str], None],
        warn: Callable[[str], None] | None = None,
        report: Callable[[str | None], None] | None = None,
        take_over: Callable[[], bool] | None = None,
        prune: bool = False,
        commits: CommitWindow | None = DEFAULT_WINDOW,
    ) -> None:
        self.socket_path = socket_path
        #: The commits each tree holds as episodes (``None``: none; ADR 0205).
        self.commits = commits
        #: Git directory → the trees whose commits it holds (set when the watches are).
        self.histories: dict[Path, list[Path]] = {}
        #: Whether a tree with no file to read has its stored files removed (``--prune``).
        self.prune = prune
        #: Stored files each tree's last sync held back (no file to read, no ``--prune``).
        self.held: dict[Path, int] = {}
        #: Asked while no service answers: True once this process took the workspace (the
        #: holder it went through has ended, ADR 0199); the run then ends, to serve it here.
        self.take_over = take_over
        #: Whether ``take_over`` took the workspace.
        self.took_over = False
        self.roots = [r.resolve() for r in roots]
        self.group_id = group_id
        self.stop = stop
        self.say = say
        #: Where failures are told (a person's stderr); ``say`` when not given.
        self.warn = warn or say
        #: Given what is wrong now whenever that changes (``None`` once all works).
        self.report = report
        self.caches: dict[Path, ScanCache] = {r: {} for r in self.roots}
        self.declared: dict[str, tuple[bytes, DeclareResult]] = {}  # what each root last declared
        self._client: Client | None = None
        #: Until the first connection a slow start (the catch-up on open) is no news.
        self._connected_once = False
        #: The trees whose last sync failed.
        self.failing: dict[Path, _Failing] = {}
        #: What is wrong with the watching itself (watchfiles, or the watcher), until it runs.
        self._watch_problem: str | None = None
        self._watch_failures = 0
        #: Whether "watching …" was said in this run (it is said once the watches are set).
        self._announced = False
        self._reported: str | None = None

    def _backend(self) -> SyncBackend:
        """A backend on a ready service, waiting (until stopped) for one to answer."""
        waited = False
        while self._client is None:
            client = Client(self.socket_path, timeout=None)
            try:
                # Short waits, so that a stop request is seen while no service answers.
                # A degraded one too: this watcher's own failing tree degrades the health of
                # the service that hosts it (ADR 0193), and a sync's calls say what blocks it.
                wait_serving(client, 2.0, starting=True)
                self._client = client
                self._connected_once = True
            except (TransportError, LcgError) as exc:
                client.close()
                if self.take_over is not None and self.take_over():
                    self.took_over = True
                    self.stop.set()
                    raise _Stopped from None
                if not waited and self._connected_once:
                    self.say(f"waiting for the service at {self.socket_path} ({exc})")
                    waited = True
                if self.stop.wait(0.5):
                    raise _Stopped from None
        return service_backend(self._client)

    def sync(self, roots: list[Path], *, always_say: bool = False) -> None:
        """Sync ``roots``; after the service went away, every tree once it is back.

        A tree whose sync raises is recorded in ``failing`` and left until its retry is due
        (``retry_due``); a tree already failing is passed over until then.
        """
        from lcg.ingest import sync_tree

        pending = list(roots)
        while pending and not self.stop.is_set():
            root = pending.pop(0)
            failing = self.failing.get(root)
            if failing is not None and failing.next_try > time.monotonic():
                continue
            try:
                done = sync_tree(
                    self._backend(),
                    root,
                    self.group_id,
                    prune=self.prune,
                    cache=self.caches[root],
                    commits=self.commits,
                    declared_memo=self.declared,
                )
            except TransportError as exc:
                self._drop_client()
                if self.stop.is_set():
                    raise _Stopped from None  # the service hung up because all is stopping
                self.say(f"the service went away ({exc}); syncing every tree when it is back")
                pending = list(self.roots)
                continue
            except _Stopped:
                raise
            except Exception as exc:  # noqa: BLE001 - one tree's failure never ends the watch
                if not isinstance(exc, LcgError):
                    # It may have come between a request and its answer: a fresh connection.
                    self._drop_client()
                self._sync_failed(root, exc)
                continue
            if failing is not None:
                del self.failing[root]
                tries = f"{failing.tries} failed tr{'y' if failing.tries == 1 else 'ies'}"
                self.say(f"{root}: synced again after {tries}")
                self._tell()
            if always_say or _changed(done) or failing is not None:
                self.say(summary_line(done))
            held = held_line(done)
            if held is not None and self.held.get(root) != done.files_held:
                self.warn(held.strip())  # said once, not on every save elsewhere
            self.held[root] = done.files_held

    def retry_due(self) -> None:
        """Sync again the failing trees whose back-off has passed."""
        now = time.monotonic()
        due = [root for root, f in self.failing.items() if f.next_try <= now]
        if due:
            self.sync(due)

    def _sync_failed(self, root: Path, exc: Exception) -> None:
        error = _describe(exc)
        before = self.failing.get(root)
        tries = 1 if before is None else before.tries + 1
        wait = backoff(tries)
        self.failing[root] = _Failing(error, tries, time.monotonic() + wait)
        # Said once per distinct error: a tree that keeps failing alike is not news each time.
        if before is None or before.error != error:
            self.warn(f"{root}: sync failed ({error}); trying again in {wait:g} s")
        self._tell()

    def _tell(self) -> None:
        """Give ``report`` what is wrong now (only when that changed)."""
        parts = [
            f"syncing {root} failed ({f.tries} tr{'y' if f.tries == 1 else 'ies'}): {f.error}"
            for root, f in sorted(self.failing.items())
        ]
        if self._watch_problem is not None:
            parts.insert(0, self._watch_problem)
        problem = "; ".join(parts) or None
        if problem != self._reported:
            self._reported = problem
            if self.report is not None:
                self.report(problem)

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
        for gitdir, trees in self.histories.items():
            # A commit moves HEAD or a ref and appends to a log: its trees have a new commit.
            # Nothing else of .git (objects, the index) counts.
            if any(_history_change(Path(raw), gitdir) for raw in paths):
                hit.extend(t for t in trees if t not in hit)
        for root in self.roots:
            if root in hit:
                continue
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
        """Sync every tree, then again on each change, until ``stop`` is set; a bug that
        ends a run is told and the run started again after a back-off."""
        failures = 0
        while not self.stop.is_set():
            try:
                self._run_once()
            except Exception as exc:  # noqa: BLE001 - the watcher never dies silently
                failures += 1
                wait = backoff(failures)
                error = _describe(exc)
                self.warn(f"the watcher failed ({error}); starting it again in {wait:g} s")
                self.warn("".join(traceback.format_exception(exc)).rstrip())
                self._watch_problem = f"the watcher failed ({error}); starting it again"
                self._tell()
                if self.stop.wait(wait):
                    break

    def _run_once(self) -> None:
        try:
            self.sync(self.roots, always_say=True)
            if self.stop.is_set():
                return
            self._warm_up()
            self._announced = False
            while not self.stop.is_set():
                try:
                    self._watch()
                except _Stopped:
                    raise
                except Exception as exc:  # noqa: BLE001 - the machinery is started again
                    self._watch_failed(exc)
        except _Stopped:
            pass
        finally:
            self._drop_client()

    def watched_folders(self) -> list[Path]:
        """The folders to watch: each tree's, and where a commit writes (``refs/``, ``logs/``;
        never ``objects/``) in the git directory of each work tree whose commits a tree holds
        (``histories``) when the tree does not hold it already: real folders, no link."""
        folders = {r if r.is_dir() else r.parent for r in self.roots}
        self.histories = {}
        for root in self.roots if self.commits is not None else ():
            gitdir = history_dir(root) if root.is_dir() else None
            if gitdir is not None:
                self.histories.setdefault(gitdir, []).append(root)
        for g in [g for g in self.histories if not any(f in g.parents for f in folders)]:
            folders |= {d for d in (g / "refs", g / "logs") if d.is_dir() and not d.is_symlink()}
        return sorted(folders)

    def _watch(self) -> None:
        """Sync each batch of changes watchfiles gives, until stopped or it raises."""
        import watchfiles

        folders = self.watched_folders()
        settled = False
        swept = time.monotonic()
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
                return
            if self._watch_problem is not None:
                self._watch_problem = None
                self.say("watching again")
                self._tell()
            if not settled:
                # The first batch comes once the watches are set. What changed before that
                # (since the sync on start, or in a lost batch and while restarting) no event
                # will tell: every tree is synced once more, and from here on events tell all.
                settled = True
                swept = time.monotonic()
                self.sync(self.roots)
                changes = set()
                if not self._announced:
                    self._announced = True
                    self.say(
                        f"watching {len(self.roots)} tree{'s' if len(self.roots) != 1 else ''} "
                        f"into group {self.group_id!r}; stop with Ctrl-C"
                    )
            if changes:
                affected = self._affected({path for _, path in changes})
                if affected:
                    self.sync(affected)
                self._watch_failures = 0
            if time.monotonic() - swept >= SWEEP_S:
                swept = time.monotonic()
                self.sync(self.roots)  # a stat of each file: nothing is read that did not change
            self.retry_due()

    def _watch_failed(self, exc: Exception) -> None:
        self._watch_failures += 1
        wait = backoff(self._watch_failures)
        error = _describe(exc)
        self.warn(
            f"watching for changes failed ({error}); starting it again in {wait:g} s, "
            "then syncing every tree"
        )
        self._watch_problem = f"watching for changes failed ({error}); starting it again"
        self._tell()
        if self.stop.wait(wait):
            raise _Stopped


class _Stopped(Exception):
    """Raised inside the watcher when it was asked to stop while waiting."""


def _describe(exc: BaseException) -> str:
    """An error as one line: lcg's own say what they are; others are named by their type."""
    text = str(exc) if isinstance(exc, LcgError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


def _history_change(path: Path, gitdir: Path) -> bool:
    """Whether ``path`` is ``gitdir``'s ``HEAD`` or ``packed-refs``, or in ``refs``/``logs``."""
    parts = path.relative_to(gitdir).parts if gitdir in path.parents else ("",)
    return parts[0] in ("HEAD", "packed-refs", "refs", "logs")


def _changed(r: SyncReport) -> bool:
    return bool(r.chunks_added or r.chunks_removed or r.files_removed)


_say: Callable[[str], None] = stamped
_warn: Callable[[str], None] = functools.partial(stamped, err=True)


def _watch_through(
    config: Config,
    roots: list[Path],
    group_id: str,
    *,
    prune: bool = False,
    commits: CommitWindow | None = DEFAULT_WINDOW,
) -> int:
    """Watch through the service already running (its failures are told on stderr only:
    that service's health is about itself, ADR 0193); when the process holding it ends and
    nothing else takes the workspace, this watch takes it and serves it (ADR 0199)."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    def take_over() -> bool:
        try:
            take_for_process(config)
        except StreamLockedError:
            return False  # another holder (starting): wait for its socket
        return True

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        _say(f"using the service running on {config.socket_path}")
        watcher = Watcher(
            config.socket_path,
            roots,
            group_id,
            stop=stop,
            say=_say,
            warn=_warn,
            take_over=take_over,
            prune=prune,
            commits=commits,
        )
        watcher.run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if watcher.took_over:
        _say("the service went away; serving the workspace here")
        return _watch_hosting(config, roots, group_id, prune=prune, commits=commits)
    _say("stopped")
    return 0


#: The name the watcher's problems carry in the hosting service's health.
WATCHER = "watcher"


def start_watching(watcher: Watcher, problems: ComponentProblems) -> threading.Thread:
    """Run ``watcher`` in a thread of a serving process whose health reads ``problems``: the
    watcher reports what fails, and a probe names the thread should it end while not asked
    to stop (a bug past every guard), so the process is never alive and silent."""
    thread = threading.Thread(target=watcher.run, name="lcg-watch", daemon=True)
    previous = watcher.report

    def report(problem: str | None) -> None:
        problems.report(WATCHER, problem)
        if previous is not None:
            previous(problem)

    def ended() -> str | None:
        if thread.is_alive() or watcher.stop.is_set():
            return None
        return "the watch thread has ended: changes are no longer synced; restart lcg watch"

    watcher.report = report
    thread.start()
    problems.probe(WATCHER, ended)
    return thread


def _watch_hosting(
    config: Config,
    roots: list[Path],
    group_id: str,
    *,
    prune: bool = False,
    commits: CommitWindow | None = DEFAULT_WINDOW,
) -> int:
    """Serve the workspace's socket here and watch through it; the watcher's problems are
    the service's health (``health_check``, ``lcg status``). A stop ends the process within
    the grace plus 2 s, as ``lcg serve`` (ADR 0197)."""
    import asyncio

    from lcg.cli.serve import end_promptly, run_until_stopped
    from lcg.rpc import Limits, Server, build_app, serve

    stop = threading.Event()
    watcher = Watcher(
        config.socket_path,
        roots,
        group_id,
        stop=stop,
        say=_say,
        warn=_warn,
        prune=prune,
        commits=commits,
    )
    app = build_app(config)
    threads: list[threading.Thread] = []
    tasks: set[asyncio.Task[None]] = set()

    async def stop_with(server: Server) -> None:
        # The watcher stops when the service begins to, not after: its sync in flight is
        # then no "service went away".
        await server.wait_for_shutdown_request()
        stop.set()

    def started(server: Server) -> None:
        _say(f"serving {config.socket_path} (no service was running)")
        threads.append(start_watching(watcher, app.problems))
        task = asyncio.get_running_loop().create_task(stop_with(server))
        tasks.add(task)  # held until done: the loop keeps only a weak reference
        task.add_done_callback(tasks.discard)

    try:
        server = run_until_stopped(
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
    for thread in threads:
        thread.join(max(0.0, (server.deadline or 0.0) - time.monotonic()))
    _say("stopped")
    return end_promptly(0, server.deadline)


def _run(args: argparse.Namespace) -> int:
    roots = check_roots(args.paths)
    config = config_from(args)
    window = commit_window(args)
    # ADR 0199: through the service that answers, else hold the workspace and serve it here.
    got = claim(config, "watch", take=lambda: take_for_process(config))
    from lcg.workspace import watching

    # Listed by `lcg sources` as watched for as long as this process runs (ADR 0207).
    with watching(config.workspace / LCG_DIR, roots, args.group):
        if isinstance(got, Client):
            got.close()
            return _watch_through(config, roots, args.group, prune=args.prune, commits=window)
        return _watch_hosting(config, roots, args.group, prune=args.prune, commits=window)


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
    p.add_argument(
        "--prune",
        action="store_true",
        help="remove the stored files of a tree that has no file to read (empty or missing)",
    )
    add_commit_options(p)
