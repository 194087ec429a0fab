"""File-system helpers: atomic durable writes, directory fsync, private modes, stale temps.

Every file lcg replaces in place goes through ``atomic_write`` (bytes in hand) or
``atomic_file`` (a library writes the file itself: numpy, hnswlib): a temp file beside the
target, fsynced, renamed over it, and the directory fsynced, so a crash leaves the old file or
the new one, never a torn one (ADR 0117); a file or directory staged whole elsewhere (a
dump, an import, a watch claim) is put in place by ``rename_into_place``. Every directory lcg
deletes (a stream, a projection, a group's vectors) goes through ``remove_tree``: renamed to a
tombstone in one step, then deleted, so a crash leaves it whole or gone, never holed (ADR
0156). This is the one module that renames (a test holds the others to it, ADR 0227). Every
package may use this module.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from lcg.events.layout import REMOVING_SUFFIX, TEMP_SUFFIX

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "atomic_file",
    "atomic_write",
    "describe_os_error",
    "fsync_dir",
    "fsync_file",
    "private_dir",
    "probe_write",
    "remove_tree",
    "remove_trees",
    "rename_into_place",
    "sweep_removals",
    "sweep_temps",
]

#: Mode of every file lcg creates: the streams hold what users wrote, for their eyes only.
FILE_MODE = 0o600
#: Mode of every directory lcg creates.
DIR_MODE = 0o700

#: Errors that mean "no room": the write can succeed once space is freed.
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def describe_os_error(exc: OSError, path: Path) -> str:
    """What failed, in the words health and errors use: ``disk full writing <path>``."""
    if exc.errno in _NO_SPACE:
        return f"disk full writing {path}"
    reason = exc.strerror or type(exc).__name__
    return f"{reason} writing {path} ([Errno {exc.errno}])"


def private_dir(path: Path) -> None:
    """Create ``path`` (and its parents) as ``0700``; an existing one of ours is tightened.

    lcg's state directory holds every stream and projection, so other local users must not
    reach into it, whatever mode a file inside gets (Kuzu and hnswlib create their own).
    """
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    # One by one: ``mkdir(parents=True)`` would give the parents the umask's mode.
    for directory in reversed(missing):
        directory.mkdir(mode=DIR_MODE, exist_ok=True)
    st = path.stat()
    if st.st_uid == os.geteuid() and st.st_mode & 0o077:
        path.chmod(DIR_MODE)


def fsync_dir(path: Path) -> None:
    """Make the directory entry changes under ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    """Make the bytes of the file at ``path`` durable (one another writer closed)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_beside(path: Path) -> Path:
    return path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}{TEMP_SUFFIX}")


@contextlib.contextmanager
def atomic_file(path: Path, *, durable: bool = True, sync_dir: bool = True) -> Iterator[Path]:
    """Yield a temp path beside ``path`` for the block to write; then fsync it (``durable``),
    make it private (0600), rename it over ``path`` and fsync the directory (``durable`` and
    ``sync_dir``; a caller replacing several files in one directory may fsync it once itself).

    If the block raises, the temp file is removed and ``path`` is left as it was.
    """
    tmp = _temp_beside(path)
    try:
        yield tmp
        if durable:
            fsync_file(tmp)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        # A full disk must not also keep a half-written temp file taking its space.
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable and sync_dir:
        fsync_dir(path.parent)


def atomic_write(
    path: Path, data: bytes | bytearray, *, durable: bool = True, sync_dir: bool = True
) -> None:
    """Replace ``path`` with ``data``: write a temp file (0600), fsync it, rename it into
    place, fsync the directory (``durable``; ``sync_dir=False`` leaves that to the caller).

    ``atomic_file`` with the bytes written here: fsynced through the descriptor that wrote
    them, not by opening the file again."""
    with atomic_file(path, durable=False) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    if durable and sync_dir:
        fsync_dir(path.parent)


def rename_into_place(staged: Path, target: Path, *, sync_dir: bool = True) -> None:
    """Rename ``staged`` (a file, or a directory onto an absent or empty ``target``) to
    ``target``, then fsync the directory holding it (``sync_dir=False``: the caller does, once
    for several): a reader sees the whole of it or none of it."""
    os.replace(staged, target)
    if sync_dir:
        fsync_dir(target.parent)


def probe_write(directory: Path, size: int = 1 << 16) -> OSError | None:
    """Write and remove a ``size``-byte temp file in ``directory``: ``None`` if that worked.

    How a failure on a full disk is known to be over without risking a real write.
    """
    probe = directory / f".probe.{uuid.uuid4().hex[:8]}{TEMP_SUFFIX}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            view = memoryview(bytes(size))
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except OSError as exc:
        return exc
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return None


def sweep_temps(directory: Path, older_than_s: float = 300.0) -> int:
    """Remove temp files left by interrupted atomic writes; returns how many were removed."""
    if not directory.is_dir():
        return 0
    removed = 0
    cutoff = time.time() - older_than_s
    for entry in directory.iterdir():
        if entry.name.endswith(TEMP_SUFFIX) and entry.is_file():
            try:
                if entry.stat().st_mtime < cutoff:
                    entry.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
    return removed


def _tombstone_of(path: Path) -> Path:
    # A leading dot: no lister of groups, segments or projections takes it for one of its own.
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}{REMOVING_SUFFIX}")


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        # A sweep of the same tombstone by another process may race this one: whatever is
        # already gone is gone.
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def remove_trees(paths: Iterable[Path], *, durable: bool = True) -> list[Path]:
    """Remove each of ``paths`` (directories or files) as one step; returns those removed.

    ``shutil.rmtree`` deletes in directory order, so a crash in the middle left a stream with
    a hole. Each path is first renamed to a tombstone beside it (``.<name>.<hex>.removing``,
    one atomic rename), every parent is fsynced once (``durable``), and only then are the
    tombstones deleted: a crash at any point leaves each path whole or absent, and the
    tombstones left behind are deleted by ``sweep_removals`` on the next start. A path that
    does not exist is skipped.
    """
    tombstones: list[Path] = []
    removed: list[Path] = []
    parents: dict[Path, None] = {}
    for path in paths:
        tomb = _tombstone_of(path)
        try:
            os.rename(path, tomb)
        except FileNotFoundError:
            continue
        tombstones.append(tomb)
        removed.append(path)
        parents[path.parent] = None
    if durable:
        for parent in parents:
            fsync_dir(parent)
    for tomb in tombstones:
        _delete(tomb)
    return removed


def remove_tree(path: Path, *, durable: bool = True) -> bool:
    """Remove the directory (or file) at ``path`` as one step (``remove_trees``); ``False``
    when there was nothing there."""
    return bool(remove_trees([path], durable=durable))


def sweep_removals(directory: Path, *, of: str = "") -> int:
    """Delete the tombstones an interrupted ``remove_trees`` left in ``directory`` (only those
    of entries whose names began with ``of``, in a directory lcg shares); returns how many.
    Their content was already gone from every reader's view."""
    if not directory.is_dir():
        return 0
    swept = 0
    for entry in directory.iterdir():
        if entry.name.startswith(f".{of}") and entry.name.endswith(REMOVING_SUFFIX):
            _delete(entry)
            swept += 1
    return swept
