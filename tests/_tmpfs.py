"""A tmpfs for the disk-full tests, and a filler that fills it.

The disk is full only while the test's filler holds it, never because the service under test
happened to write more (a snapshot, a Kuzu checkpoint) on a loaded machine: the tmpfs is
sized far above what a workspace uses, and :func:`fill` takes whatever room is left, however
much that is. A test's "with room" phases then have room whatever the load (a 12 MiB tmpfs
filled up with a snapshot under load and failed in a fresh clone, ADR 0222).

Mounting needs root (CI runs the suite as root); elsewhere the test is skipped with the
reason, never silently.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

#: Room for a workspace many times over: a tmpfs takes memory only for what is written, and the
#: filler's pages go when it is deleted or the tmpfs unmounted.
TMPFS_SIZE = "128m"


def _mount_tmpfs(target: Path, size: str) -> str | None:
    """Mount a small tmpfs on ``target``; the reason it cannot be done, or ``None``."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root (CI runs this test as root)"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f"mount -t tmpfs is not permitted here: {done.stderr.strip()}"
    return None


@contextlib.contextmanager
def small_disk(size: str = TMPFS_SIZE) -> Iterator[tuple[Path, Path]]:
    """``(mount point on a tmpfs of ``size``, a directory off it)``; skips when not root."""
    base = Path(tempfile.mkdtemp(prefix="lcg-df-", dir="/tmp"))
    mnt = base / "m"
    mnt.mkdir()
    why = _mount_tmpfs(mnt, size)
    if why is not None:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(why)
    try:
        yield mnt, base
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def fill(path: Path) -> int:
    """Write ``path`` until the disk is full; returns the bytes written."""
    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1 << 9, 1):
            try:
                while True:
                    written += os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    return written
