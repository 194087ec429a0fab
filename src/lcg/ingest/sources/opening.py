"""Opening a tree's folders and files as untrusted input: relative to the tree's root, one
name at a time, never through a symbolic link, regular files only, never more than a limit.

A folder handed to ``lcg ingest`` may come from anyone (an unpacked archive, a clone). Each
folder is opened from the root's descriptor one component at a time with ``O_NOFOLLOW |
O_DIRECTORY`` (``openat``), and each file relative to its folder's descriptor with
``O_NOFOLLOW | O_NONBLOCK``, so a link anywhere on the way (to a file or a folder, in the
tree or out of it, made before the walk or swapped in during it) is refused, a FIFO cannot
block the open, and ``fstat`` on the opened descriptor refuses whatever is not a regular
file. At most ``max_bytes + 1`` bytes are ever read, whatever the file's size claimed (a
``/proc`` file says 0; a file may grow after its stat): one byte more says "too large".
This is the idea of ``lcg.events``' guarded open (ADR 0154), walked from the tree's root.

Why a file could not be read decides what happens to what the group holds of it (ADR 0192):
a ``Refusal`` with ``kept=True`` is an error of this run (EACCES, EIO, too many open files),
not a fact about the file, so its stored chunks stay; any other refusal (a link, not a
regular file, too large, gone) is a fact, and the file is treated as no longer in the tree.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import msgspec

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "LINK_REASON",
    "Refusal",
    "kind_name",
    "open_folder",
    "read_at",
    "read_in_tree",
    "refusal_of",
    "shown",
    "too_large",
]

#: Files larger than this are skipped (notes and code are far smaller; a dump is not notes).
DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
#: Why a symbolic link is passed over.
LINK_REASON = "symbolic link (not followed)"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: Read in pieces of this size, so a limit far above a file's size allocates nothing extra.
_READ_PIECE = 1024 * 1024

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
)


class Refusal(msgspec.Struct, frozen=True, kw_only=True):
    """Why a file (or folder) is not read.

    ``kept``: an error of this run, what the group holds of it stays; ``gone``: it is not
    there (any more), nothing to name.
    """

    reason: str
    kept: bool = False
    gone: bool = False


def kind_name(mode: int) -> str:
    """What a non-regular file is, in words (``"a FIFO"``)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def shown(name: str) -> str:
    """``name`` as it can be printed and stored: bytes that are not UTF-8 as ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def refusal_of(exc: OSError) -> Refusal:
    """The refusal an ``OSError`` of an open or read means (``kept`` unless it is a fact)."""
    if exc.errno == errno.ELOOP:
        return Refusal(reason=LINK_REASON)
    if exc.errno == errno.ENXIO:  # a socket (or a device with no driver)
        return Refusal(reason="not a regular file (a socket)")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return Refusal(reason="gone (removed or replaced while read)", gone=True)
    why = exc.strerror or type(exc).__name__
    return Refusal(reason=f"unreadable this run ({why}): its stored chunks are kept", kept=True)


def open_folder(root_fd: int, parts: tuple[str, ...]) -> int:
    """A descriptor of the folder ``parts`` below ``root_fd``, no component a link.

    Raises ``OSError`` as ``open`` does: ``ENOTDIR`` (or ``ELOOP``) where a component is a
    link or not a folder. The caller closes the descriptor.
    """
    fd = os.dup(root_fd)
    try:
        for name in parts:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at(dir_fd: int, name: str, max_bytes: int, *, head: bool = False) -> bytes | Refusal:
    """The bytes of the regular file ``name`` in the folder ``dir_fd`` (at most ``max_bytes``).

    With ``head``, a larger file is not refused: its first ``max_bytes + 1`` bytes are
    returned (the caller sees it was cut by the length).
    """
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        return refusal_of(exc)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Refusal(reason=f"not a regular file ({kind_name(st.st_mode)})")
        if st.st_size > max_bytes and not head:
            return Refusal(reason=too_large(st.st_size, max_bytes))
        pieces: list[bytes] = []
        got = 0
        while got <= max_bytes:
            piece = os.read(fd, min(_READ_PIECE, max_bytes + 1 - got))
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        if got > max_bytes and not head:
            return Refusal(reason=f"too large: grew past the limit ({max_bytes:,} bytes) as read")
        return b"".join(pieces)
    except OSError as exc:
        return refusal_of(exc)
    finally:
        os.close(fd)


def too_large(size: int, max_bytes: int) -> str:
    """The reason a file of ``size`` bytes is skipped."""
    return f"too large: {size:,} bytes (limit {max_bytes:,})"


def read_in_tree(base: Path, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes | Refusal:
    """The bytes of the file ``rel`` (``/``-separated) below the folder ``base``.

    ``base`` itself is opened as given (the user named it); every component of ``rel`` is
    opened without following a link.
    """
    *folders, name = rel.split("/")
    try:
        root_fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return refusal_of(exc)
    try:
        dir_fd = open_folder(root_fd, tuple(folders))
    except OSError as exc:
        return refusal_of(exc)
    finally:
        os.close(root_fd)
    try:
        return read_at(dir_fd, name, max_bytes)
    finally:
        os.close(dir_fd)
