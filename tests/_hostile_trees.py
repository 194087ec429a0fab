"""Source trees an attacker could hand over (issue 27, ADR 0192): a folder nested deeper than
a path can spell, and an I/O error on opening a given name.

``chain`` makes ``root/d/d/…/leaf`` one descriptor at a time (``os.makedirs`` would pass
PATH_MAX); ``unchain`` removes it deepest first, with no recursion (``shutil.rmtree`` recurses
once per level). ``deny`` makes opening or listing a name fail with EACCES however it is
opened (``os.open``, ``os.scandir``, ``io.open``): a chmod cannot when the suite runs as root.
"""

from __future__ import annotations

import errno
import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def chain(root: Path, depth: int, leaf: str, body: bytes = b"at the bottom") -> None:
    """``root/d/d/…/d/leaf``, ``depth`` folders deep."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    out = os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, body)
    os.close(out)
    os.close(fd)


def unchain(root: Path, depth: int, leaf: str) -> None:
    """Remove what ``chain`` made."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    for _ in range(depth):
        fds.append(os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
    os.unlink(leaf, dir_fd=fds[-1])
    for i in range(depth, 0, -1):
        os.close(fds[i])
        os.rmdir("d", dir_fd=fds[i - 1])
    os.close(fds[0])


@contextmanager
def deny(monkeypatch: pytest.MonkeyPatch, *names: str) -> Iterator[None]:
    """Opening (or listing) anything named ``names`` fails with EACCES in this process."""

    def refuse(path: object) -> None:
        if isinstance(path, (str, bytes, os.PathLike)):
            name = os.path.basename(os.fsdecode(path))
            if name in names:
                raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))

    def wrap(real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(path: Any, *args: Any, **kwargs: Any) -> Any:
            refuse(path)
            return real(path, *args, **kwargs)

        return guarded

    with monkeypatch.context() as m:
        m.setattr(os, "open", wrap(os.open))
        m.setattr(os, "scandir", wrap(os.scandir))
        m.setattr(io, "open", wrap(io.open))
        yield
