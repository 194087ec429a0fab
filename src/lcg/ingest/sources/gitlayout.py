"""Which repositories lcg reads as data: the plain layout (ADR 0191).

``gitread`` opens a work tree's repository only when its ``.git`` is a real directory in
the plain layout: format version 0 or 1, no ``extensions``, no ``core.worktree`` or
``core.bare``, no ``include``/``includeIf``, not shallow, no alternates, no grafts, not a
linked work tree. Anything else is not read at all (its history would not be the one git
shows, or would be read from elsewhere). Only ``config`` is parsed, by dulwich's
``ConfigFile`` with ``expand_includes=False``; every file is opened as untrusted input.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

from lcg.events import UnsafeFileError, read_small

__all__ = ["looks_like_gitdir", "plain_layout"]

#: The largest ``config`` file read.
_MAX_CONFIG_BYTES = 1024 * 1024
#: Files whose presence means a layout this reader does not follow (history cut or
#: rewritten, objects elsewhere, a linked work tree).
_UNUSUAL_FILES = ("shallow", "commondir", "info/grafts", "objects/info/alternates")


def looks_like_gitdir(folder: Path) -> bool:
    """Whether ``folder`` holds ``HEAD``, ``objects`` and ``refs`` itself (is a git directory)."""
    return all(os.path.lexists(folder / name) for name in ("HEAD", "objects", "refs"))


def plain_layout(gitdir: Path) -> bool:
    """Whether ``gitdir`` (a work tree's ``.git`` folder) is the plain layout read (module
    docstring)."""
    if any(os.path.lexists(gitdir / name) for name in _UNUSUAL_FILES):
        return False
    for name in ("objects", "refs"):
        try:
            if not stat.S_ISDIR(os.lstat(gitdir / name).st_mode):
                return False
        except OSError:
            return False
    try:
        raw = read_small(gitdir / "config", _MAX_CONFIG_BYTES)
    except (OSError, UnsafeFileError):
        return False
    if raw is None:
        return True
    from dulwich.config import ConfigFile

    try:
        config = ConfigFile.from_file(io.BytesIO(raw), expand_includes=False)
    except Exception:  # a config git itself would refuse
        return False
    for section in config.sections():
        head = section[0].lower()
        if head in (b"include", b"includeif", b"extensions"):
            return False
        if head != b"core" or len(section) != 1:
            continue
        for key, value in config[section].items():
            key = key.lower()
            if key == b"worktree":
                return False
            if key == b"bare" and value.strip().lower() not in (b"false", b"no", b"off", b"0"):
                return False
            if key == b"repositoryformatversion" and value.strip() not in (b"0", b"1"):
                return False
    return True
