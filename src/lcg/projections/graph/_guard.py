"""Keeping Kuzu away from a full disk, and out of ``close`` once a write failed (ADR 0081).

Kuzu 0.11.3 does not survive a failed write: after its WAL write fails (a full disk cuts it
short) the ``Database`` refuses every later write, even once space is back, and closing or
checkpointing it aborts the process (``double free or corruption``, ``corrupted size vs.
prev_size``). What it committed before is in its WAL, and the next open replays it.

So the graph projection (1) reserves room on disk before each write transaction and, short
of it, lags the stream instead of writing (``ProjectionIOError``: it catches up once there is room);
(2) if Kuzu still fails a write on I/O, stops writing to that database and, at close, leaves
it unclosed for the rest of the process (``abandon``) so that the process exits cleanly; the
next process reopens it and catches the graph up from the stream.
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path

import kuzu

from lcg.errors import ProjectionIOError

__all__ = ["GRAPH_WAL_ROOM", "abandon", "is_io_failure", "reserve_room"]

#: Bytes reserved past the end of Kuzu's WAL before each write transaction: more than one
#: transaction of live events writes there.
GRAPH_WAL_ROOM = 1 << 18

#: Kuzu's prefix for its ``IOException`` (the Python binding raises a bare ``RuntimeError``).
_KUZU_IO_PREFIX = "IO exception"
_FALLOC_FL_KEEP_SIZE = 0x01
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def reserve_room(db_path: Path, *, wal_room: int = GRAPH_WAL_ROOM) -> None:
    """Reserve disk blocks for the next write transaction, or raise ``ProjectionIOError``.

    ``wal_room`` bytes past the end of ``<db>.wal`` (created empty if Kuzu has none yet,
    which Kuzu accepts), and, for the checkpoint that folds the WAL into the database file,
    twice the WAL's size past the end of that file. ``fallocate(FALLOC_FL_KEEP_SIZE)``
    takes the blocks without changing what Kuzu sees, atomically: either the room is there
    and Kuzu's writes into it cannot fail for space, or nothing is attempted. Where the file
    system cannot reserve, the free space is checked instead (which another writer can race).
    """
    wal_path = Path(f"{db_path}.wal")
    wal_size = _reserve(wal_path, wal_room)
    if wal_size:
        _reserve(db_path, 2 * wal_size)


def _reserve(path: Path, room: int) -> int:
    """Reserve ``room`` bytes past the end of ``path``; returns its size."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError as exc:
        raise _unavailable(exc, path) from exc
    try:
        size = os.fstat(fd).st_size
        if _libc.fallocate(fd, _FALLOC_FL_KEEP_SIZE, size, room) != 0:
            code = ctypes.get_errno()
            if code in _NO_SPACE:
                raise _unavailable(OSError(code, os.strerror(code), str(path)), path)
            # No reservation on this file system (EOPNOTSUPP): check the free space instead.
            st = os.fstatvfs(fd)
            if st.f_bavail * st.f_frsize < room:
                full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
                raise _unavailable(full, path)
        return size
    finally:
        os.close(fd)


def _unavailable(exc: OSError, path: Path) -> ProjectionIOError:
    what = "disk full" if exc.errno in _NO_SPACE else f"{exc.strerror or exc}"
    error = ProjectionIOError(
        f"{what} writing {path}: the graph writes only with room reserved first (Kuzu cannot "
        "go on after a failed write); it catches up from the stream once there is room"
    )
    error.__cause__ = exc
    return error


def is_io_failure(exc: BaseException) -> bool:
    """True if Kuzu raised ``exc`` for a failed read or write of its files."""
    return str(exc).startswith(_KUZU_IO_PREFIX)


def abandon(db: kuzu.Database) -> None:
    """Never close ``db`` (its close would abort the process): keep it until the process ends.

    Its native object gets one reference no one will release, so neither ``close`` nor the
    interpreter's finalisation ever runs its destructor; its file lock ends with the process.
    """
    native = getattr(db, "_database", None)
    if native is not None:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(native))
    db.is_closed = True
    db._database = None
