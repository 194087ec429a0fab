"""The workspace lock: one lcg process at a time has a workspace (ADR 0156).

An exclusive ``flock`` on ``.lcg/workspace.lock``, a file that also names the holder's pid.
Every ``Workspace`` takes it for as long as it is open (Kuzu allows one opener; two writers
of one stream would interleave). A service (``lcg serve``, ``lcg follow``, a standalone
``lcg mcp``) takes it with ``hold_for_process`` *before* it binds its socket and keeps it
until the process ends: a second service started beside it refuses at once, naming the
holder, instead of taking the socket path and degrading; the service's own workspace opens
(and its reopens, on recovery) borrow the held lock, so no other process can slip in between.
The kernel releases a ``flock`` when its process dies, however it dies.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lcg.errors import StreamLockedError
from lcg.events import FILE_MODE, private_dir
from lcg.workspace._layout import WORKSPACE_LOCK_FILE

__all__ = [
    "WorkspaceLock",
    "acquire",
    "hold_for_process",
    "holder_pid",
    "release_for_process",
    "writing_offline",
]


@dataclass
class _Held:
    fd: int
    borrowed: bool = False


#: Locks this process holds for its life, by lock-file path: lent to one workspace at a time.
_held: dict[str, _Held] = {}
_guard = threading.Lock()


def holder_pid(lcg_dir: Path) -> int | None:
    """The pid the lock file names (the holder while it is locked), or ``None``."""
    try:
        text = (lcg_dir / WORKSPACE_LOCK_FILE).read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    text = text.strip()
    if not text.isdigit():
        return None
    pid = int(text)
    try:
        os.kill(pid, 0)  # a holder that has just taken the lock may not have named itself yet
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return pid


def _locked_error(lcg_dir: Path, what: str) -> StreamLockedError:
    pid = holder_pid(lcg_dir)
    holder = f"lcg process {pid}" if pid is not None else "another lcg process"
    return StreamLockedError(f"the workspace {lcg_dir.parent} is held by {holder}; {what}")


def _take(lcg_dir: Path, what: str, *, look_only: bool = False) -> int | None:
    path = lcg_dir / WORKSPACE_LOCK_FILE
    if look_only:
        # A command that only looks changes nothing, the lock file included: it locks the
        # file as it is (a read-only descriptor takes a flock too) and names no pid; a
        # workspace no service has ever held has no file, and nothing to keep out.
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
    else:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise _locked_error(lcg_dir, what) from None
    if look_only:
        return fd
    try:
        # Whoever is refused next reads who holds it.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # a read-only file system: the lock still holds, the pid goes unnamed
    return fd


class WorkspaceLock:
    """The lock one open ``Workspace`` holds (or borrows from its process)."""

    def __init__(self, lcg_dir: Path, fd: int | None, *, borrowed: bool) -> None:
        self.path = lcg_dir / WORKSPACE_LOCK_FILE
        self._fd = fd
        self._borrowed = borrowed
        self._released = False

    def release(self) -> None:
        """Give the lock up (a borrowed one goes back to its process, still held)."""
        if self._released:
            return
        self._released = True
        if self._borrowed:
            with _guard:
                held = _held.get(str(self.path))
                if held is not None:
                    held.borrowed = False
        elif self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock


def acquire(lcg_dir: Path, *, look_only: bool = False) -> WorkspaceLock:
    """Take the workspace's lock for one open ``Workspace``; ``StreamLockedError`` naming the
    holder's pid when another process (or another open workspace here) has it.
    ``look_only`` (an inspecting open) neither creates the lock file nor names itself in it."""
    key = str(lcg_dir / WORKSPACE_LOCK_FILE)
    with _guard:
        held = _held.get(key)
        if held is not None:
            if held.borrowed:
                raise StreamLockedError(
                    f"the workspace {lcg_dir.parent} is already open in this process"
                )
            held.borrowed = True
            return WorkspaceLock(lcg_dir, held.fd, borrowed=True)
    fd = _take(
        lcg_dir,
        "use its service's socket, or stop it first (is `lcg serve` running?)",
        look_only=look_only,
    )
    return WorkspaceLock(lcg_dir, fd, borrowed=False)


def hold_for_process(lcg_dir: Path) -> None:
    """Take the workspace's lock until this process ends (a service, before its socket).

    ``StreamLockedError`` naming the holder's pid when another process has it."""
    key = str(lcg_dir / WORKSPACE_LOCK_FILE)
    with _guard:
        if key in _held:
            return
        private_dir(lcg_dir)
        fd = _take(
            lcg_dir,
            "a second service cannot serve it: use the running one, or stop it first",
        )
        assert fd is not None  # only a look-only take may find no file
        _held[key] = _Held(fd)


def release_for_process(lcg_dir: Path) -> None:
    """Give up what ``hold_for_process`` took (a command that served its workspace while it
    ran, ADR 0199); nothing when this process does not hold it, or an open workspace still
    borrows it."""
    key = str(lcg_dir / WORKSPACE_LOCK_FILE)
    with _guard:
        held = _held.get(key)
        if held is None or held.borrowed:
            return
        del _held[key]
    os.close(held.fd)  # closing the descriptor releases the flock


@contextmanager
def writing_offline(lcg_dir: Path) -> Iterator[None]:
    """Hold the workspace's lock while a command writes its files without a ``Workspace``
    (``lcg mark`` with no service answering): refused, naming the holder, while a service
    has the workspace (its socket may be gone; the service still writes)."""
    if not lcg_dir.is_dir():
        yield  # no state directory: no service ever ran here to hold it
        return
    lock = acquire(lcg_dir)
    try:
        yield
    finally:
        lock.release()
