"""Find a reference workspace's group streams and read their five-key lines in replay order.

The reference keeps one directory of ``*.jsonl`` files per group under its WAL root
(``.lcg/wal/<encoded group>/``, lcg-api §5.5), named by the time a writer opened them, so
names do not sort by seq: files are replayed in the order of their first parseable line's
seq (ties by name), files with none last by name (§5.4). Loose files beside group directories
are ``liminis``'s (the reference's startup migration moves them there). One directory of
segments given alone — a root written before multi-group streams (flat), the target of
``knowledge_dump_wal`` (§5.6: with no group, one compacted stream of every group, the
documented restore point), a group's directory copied out — is one stream whose rows are
routed by their own ``group_id`` (``ReferenceStreams.by_row``, ADR 0212). Each line is ``{seq,
ts, db, cypher, params}``; one lacking a key, or not JSON, is reported, not replayed.

The files are untrusted: a segment is opened without following a symbolic link and read only
if it is a regular file (a link, a FIFO or a device is reported, never read), a group
directory that is a link is refused, and a line longer than ``MAX_LINE_BYTES`` is reported
and skipped without being held in memory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from lcg.errors import LcgError
from lcg.events import (
    DEFAULT_GROUP,
    UnsafeFileError,
    check_real_dir,
    decode_group,
    open_regular,
)

__all__ = [
    "MAX_LINE_BYTES",
    "BadLine",
    "RefLine",
    "ReferenceStreams",
    "count_lines",
    "find_streams",
    "ordered",
    "read_lines",
]

_KEYS = ("seq", "ts", "db", "cypher", "params")
#: A line longer than this is reported and skipped (a reference line is a statement, its
#: parameters and one vector per text: kilobytes).
MAX_LINE_BYTES: Final = 16 << 20


@dataclass(frozen=True)
class RefLine:
    """One five-key line of a reference stream and where it was read."""

    where: str
    seq: int
    cypher: str
    params: dict[str, Any]


@dataclass(frozen=True)
class BadLine:
    """A line that is not a five-key line: where, and why."""

    where: str
    detail: str


@dataclass
class ReferenceStreams:
    """The WAL root found under the path given, and each group's files."""

    root: Path
    #: ``multi-group`` (a WAL root: each directory is its group's stream), ``flat`` (a root
    #: written before multi-group streams) or ``stream`` (one directory of segments given
    #: alone: a dump, or a group's directory copied out).
    layout: str
    groups: dict[str, list[Path]] = field(default_factory=dict)

    @property
    def by_row(self) -> bool:
        """Whether the rows go to the group each names (one stream of any number of groups:
        a flat root, a dump) rather than to the group its directory names."""
        return self.layout != "multi-group"


def _jsonl(directory: Path) -> list[Path]:
    # Links and other non-regular entries are listed too: reading them is refused, reported.
    with os.scandir(directory) as entries:
        return sorted(
            Path(e.path)
            for e in entries
            if e.name.endswith(".jsonl") and not e.is_dir(follow_symlinks=False)
        )


def _root_of(path: Path) -> Path:
    for candidate in (path / ".lcg" / "wal", path / ".graphiti" / "wal"):
        if candidate.is_dir():
            return candidate
    if not _jsonl(path) and (path / "wal").is_dir():
        return path / "wal"
    return path


def find_streams(path: Path) -> ReferenceStreams:
    """The reference streams under ``path``: a workspace (its ``.lcg/wal``), a WAL root (one
    directory per group, and loose files of a flat layout for ``liminis``) or one group's
    directory. ``LcgError`` when there is none."""
    if not path.is_dir():
        raise LcgError(f"{path} is not a directory; give a reference workspace or its WAL root")
    root = _root_of(path)
    streams = ReferenceStreams(root=root, layout="multi-group")
    subdirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    for sub in subdirs:
        check_real_dir(sub)  # a group directory linked elsewhere is refused, never followed
    for sub in subdirs:
        group_id = decode_group(sub.name)
        files = _jsonl(sub)
        if group_id is not None and files:
            streams.groups[group_id] = files
    loose = _jsonl(root)
    if loose and not streams.groups:
        # One stream given alone: a dump's target directory (``knowledge_dump_wal`` of one
        # group or of all, §5.6), a group's directory copied out, or a flat root. Its rows
        # go to the group each names (``by_row``); the key is the group the directory names,
        # used only if no row names one.
        streams.layout = "flat" if root.name == "wal" else "stream"
        named = decode_group(root.name)
        streams.groups[DEFAULT_GROUP if named is None or streams.layout == "flat" else named] = (
            loose
        )
    elif loose:
        # Loose files beside group directories: the migration moves them into ``liminis/``.
        streams.groups[DEFAULT_GROUP] = loose + streams.groups.get(DEFAULT_GROUP, [])
    if not streams.groups:
        raise LcgError(
            f"no reference streams under {path} (looked for .lcg/wal/<group>/*.jsonl, "
            "<group>/*.jsonl and loose *.jsonl)"
        )
    return streams


def _parse(text: str, where: str) -> RefLine | BadLine:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return BadLine(where, f"not JSON ({exc.msg})")
    except RecursionError:
        return BadLine(where, "JSON nested too deeply to read")
    if not isinstance(value, dict):
        return BadLine(where, "not a JSON object")
    missing = [k for k in _KEYS if k not in value]
    if missing:
        return BadLine(where, f"no {', '.join(missing)}")
    seq, cypher, params = value["seq"], value["cypher"], value["params"]
    if isinstance(seq, bool) or not isinstance(seq, int) or not isinstance(cypher, str):
        return BadLine(where, "seq is not an integer or cypher not a string")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return BadLine(where, "params is not an object")
    return RefLine(where, seq, cypher, params)


def _open(path: Path) -> IO[bytes] | str:
    """The segment opened for reading, or why it is not read."""
    try:
        return open_regular(path)
    except UnsafeFileError as exc:
        return f"not read: {exc}"
    except OSError as exc:
        return f"not read: {exc.strerror or exc}"


def _raw_lines(fh: IO[bytes]) -> Iterator[bytes | None]:
    """Each line of ``fh``; ``None`` for one longer than ``MAX_LINE_BYTES`` (skipped)."""
    while raw := fh.readline(MAX_LINE_BYTES + 1):
        if len(raw) > MAX_LINE_BYTES:
            while raw and not raw.endswith(b"\n"):
                raw = fh.readline(1 << 20)
            yield None
        else:
            yield raw


def _lines_of(path: Path) -> Iterator[RefLine | BadLine]:
    fh = _open(path)
    if isinstance(fh, str):
        yield BadLine(path.name, fh)
        return
    with fh:
        for number, raw in enumerate(_raw_lines(fh), 1):
            if raw is None:
                yield BadLine(f"{path.name}:{number}", f"longer than {MAX_LINE_BYTES} bytes")
            elif raw.strip():
                yield _parse(raw.decode("utf-8", errors="replace"), f"{path.name}:{number}")


def _first_seq(path: Path) -> int | None:
    for line in _lines_of(path):
        if isinstance(line, RefLine):
            return line.seq
    return None


def ordered(files: list[Path]) -> list[Path]:
    """``files`` in replay order: by first parseable seq, then name; the undetermined last."""
    keyed = [(_first_seq(f), f.name, f) for f in files]
    known = sorted((s, n, f) for s, n, f in keyed if s is not None)
    unknown = sorted((n, f) for s, n, f in keyed if s is None)
    return [f for _, _, f in known] + [f for _, f in unknown]


def read_lines(files: list[Path]) -> Iterator[RefLine | BadLine]:
    """Every non-blank line of ``files``, file by file in replay order."""
    for path in ordered(files):
        yield from _lines_of(path)


def count_lines(files: list[Path]) -> int:
    """How many non-blank lines ``files`` hold (the progress total)."""
    total = 0
    for path in files:
        fh = _open(path)
        if isinstance(fh, str):
            total += 1  # reported as one line
            continue
        with fh:
            total += sum(1 for raw in _raw_lines(fh) if raw is None or raw.strip())
    return total
