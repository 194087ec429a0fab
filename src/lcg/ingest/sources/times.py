"""A source file's time: its last git commit inside a git work tree, else its modification time.

The commit times of a whole tree come from one ``git log`` read until every file was seen,
so a tree of thousands of files costs one subprocess, not one per file. A file with changes
not committed yet (or not tracked) takes its modification time, which is then the newer and
truer one. A time in the future (a skewed clock, a copied file) is brought back to now: a
passage is never hidden from a search asked "now" by a clock's error.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from lcg import timestamps

__all__ = ["git_commit_times", "source_times"]

_GIT_TIMEOUT_S = 60


def _git(cwd: Path, *args: str) -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen(
            ["git", "-c", "core.quotePath=false", *args],
            cwd=str(cwd),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        return None  # no git installed: modification times serve


def _toplevel(folder: Path) -> Path | None:
    proc = _git(folder, "rev-parse", "--show-toplevel")
    if proc is None:
        return None
    out, _ = proc.communicate(timeout=_GIT_TIMEOUT_S)
    if proc.returncode != 0 or not out.strip():
        return None
    return Path(out.decode("utf-8", "replace").strip())


def git_commit_times(folder: Path, wanted: Iterable[Path]) -> dict[Path, str]:
    """The last commit time of each of ``wanted`` (absolute paths) that git tracks, unchanged
    since; files outside a work tree, untracked or modified are left out."""
    top = _toplevel(folder)
    if top is None:
        return {}
    want: dict[str, Path] = {}
    for path in wanted:
        try:
            want[path.resolve().relative_to(top.resolve()).as_posix()] = path
        except ValueError:
            continue
    if not want:
        return {}
    dirty = _dirty(top)
    proc = _git(top, "log", "-z", "--no-renames", "--format=%x01%cI", "--name-only", "--", ".")
    if proc is None or proc.stdout is None:
        return {}
    found: dict[Path, str] = {}
    when = ""
    buffer = b""
    try:
        while len(found) < len(want):
            block = os.read(proc.stdout.fileno(), 65536)
            if not block:
                break
            buffer += block
            *items, buffer = buffer.split(b"\x00")
            for item in items:
                name = item.decode("utf-8", "replace").strip("\n")
                if name.startswith("\x01"):
                    # "\x01<time>\n<first name>": a commit header, then its first file.
                    when, _, name = name[1:].partition("\n")
                    name = name.strip("\n")
                if name in want and want[name] not in found and name not in dirty:
                    found[want[name]] = when
    finally:
        proc.kill()
        proc.stdout.close()
        proc.wait()
    return found


def _dirty(top: Path) -> set[str]:
    proc = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    if proc is None:
        return set()
    out, _ = proc.communicate(timeout=_GIT_TIMEOUT_S)
    names: set[str] = set()
    items = out.split(b"\x00")
    i = 0
    while i < len(items):
        entry = items[i].decode("utf-8", "replace")
        if len(entry) > 3:
            names.add(entry[3:])
            if entry[0] in "RC":
                i += 1  # a rename's second name (its origin) follows
        i += 1
    return names


def source_times(folder: Path, files: dict[Path, int]) -> dict[Path, str]:
    """The source time of each file (absolute path → its ``mtime_ns``), RFC 3339 UTC."""
    commits = git_commit_times(folder, files)
    now = datetime.now(UTC)
    out: dict[Path, str] = {}
    for path, mtime_ns in files.items():
        raw = commits.get(path)
        when = timestamps.parse(raw) if raw else datetime.fromtimestamp(mtime_ns / 1e9, UTC)
        out[path] = timestamps.to_text(min(when, now))
    return out
