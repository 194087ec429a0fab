"""Opening a stream's files as untrusted input: never through a symlink, regular files only,
never more bytes than a limit (ADR 0154).

A stream directory may have been written by someone else: a publication a replica pulls
from a git remote, a shared folder, a damaged disk. ``open_regular`` opens the file's
directory with ``O_NOFOLLOW`` and the file relative to that descriptor with ``O_NOFOLLOW |
O_NONBLOCK``, so a symlinked group directory or file is refused (the last two components are
checked without a race), a FIFO cannot block the open, and ``fstat`` on the opened descriptor
refuses anything but a regular file (``/dev/zero``, a FIFO, a socket, a directory) and a file
larger than ``max_bytes``. Hard links are regular files: read, and bounded like any other.
The stream root itself may be reached through a symlink (a replica's ``.lcg/wal`` is one);
only what is inside it is judged.

``ReadLimits`` are the bounds a follower reads a publication under; its own workspace's
streams are read without size limits, but through the same guarded open.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

import msgspec

from lcg.errors import StreamError

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_SEGMENT_BYTES",
    "DEFAULT_MAX_SIDECAR_BYTES",
    "ReadLimits",
    "UnsafeFileError",
    "check_real_dir",
    "open_regular",
    "read_small",
]

#: The largest segment a follower reads. The writer rotates at 5 MiB (``LCG_WAL_MAX_BYTES_PER_
#: FILE``) or 10,000 events (a dump's only bound): 256 MiB holds 10,000 events of 26 KB.
DEFAULT_MAX_SEGMENT_BYTES = 256 * 1024 * 1024
#: The longest line a follower reads: twice the largest request the service accepts by
#: default (``LCG_RPC_MAX_REQUEST_BYTES``, 8 MiB), which bounds one event.
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
#: The largest sidecar (``.wal-generation.json`` and the others) read: they are a few
#: hundred bytes.
DEFAULT_MAX_SIDECAR_BYTES = 64 * 1024

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symlink"),
)


class UnsafeFileError(StreamError):
    """A stream file that is a symlink, not a regular file, or larger than its limit."""


class ReadLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The bounds a stream directory written by someone else is read under."""

    max_segment_bytes: int = DEFAULT_MAX_SEGMENT_BYTES
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_sidecar_bytes: int = DEFAULT_MAX_SIDECAR_BYTES


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def check_real_dir(path: Path) -> None:
    """Refuse ``path`` unless it is a real directory (``lstat``); a missing one passes."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise UnsafeFileError(
            f"{path} is a symlink (to {_link_target(path)}); a stream directory is read only "
            "as a real directory, never through a link"
        )
    if not stat.S_ISDIR(mode):
        raise UnsafeFileError(f"{path} is {_kind(mode)}, not a stream directory")


def open_regular(path: Path, *, max_bytes: int | None = None) -> BinaryIO:
    """Open ``path`` for reading if it is a regular file in a real directory, within limits.

    Raises ``FileNotFoundError`` if it is missing, ``UnsafeFileError`` if it (or its
    directory) is a symlink, is not a regular file, or holds more than ``max_bytes``.
    """
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            check_real_dir(path.parent)
        raise
    try:
        fd = os.open(
            path.name,
            os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
            dir_fd=dir_fd,
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(
                f"{path} is a symlink (to {_link_target(path)}); stream files are read only "
                "as regular files, never through a link"
            ) from None
        if exc.errno == errno.ENXIO:  # a socket (or a device with no driver)
            raise UnsafeFileError(f"{path} is not a regular file (a socket)") from None
        raise
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"{path} is not a regular file ({_kind(st.st_mode)})")
        if max_bytes is not None and st.st_size > max_bytes:
            raise UnsafeFileError(
                f"{path} is {st.st_size:,} bytes, larger than the {max_bytes:,} bytes allowed"
            )
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_small(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of a small file (a sidecar), ``None`` if it is missing.

    Raises ``UnsafeFileError`` as ``open_regular`` does, also when the file grew past
    ``max_bytes`` after it was opened (at most ``max_bytes + 1`` bytes are ever read).
    """
    try:
        fh = open_regular(path, max_bytes=max_bytes)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnsafeFileError(f"{path} grew past the {max_bytes:,} bytes allowed while read")
    return data
