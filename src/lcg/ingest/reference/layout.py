"""Find a reference workspace's group streams and read their five-key lines in replay order.

The reference keeps one directory of ``*.jsonl`` files per group under its WAL root
(``.lcg/wal/<encoded group>/``, lcg-api §5.5), named by the time a writer opened them, so
names do not sort by seq: files are replayed in the order of their first parseable line's
seq (ties by name), files with none last by name (§5.4). A root written before multi-group
streams holds its files directly (a flat layout); the reference's startup migration moves them
into ``liminis/``, so they are read as that group's. Each line is ``{seq, ts, db, cypher,
params}``; one lacking a key, or not JSON, is reported, not replayed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lcg.errors import LcgError
from lcg.events import DEFAULT_GROUP, decode_group

__all__ = [
    "BadLine",
    "RefLine",
    "ReferenceStreams",
    "count_lines",
    "find_streams",
    "ordered",
    "read_lines",
]

_KEYS = ("seq", "ts", "db", "cypher", "params")


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
    layout: str  # "multi-group" or "flat"
    groups: dict[str, list[Path]] = field(default_factory=dict)


def _jsonl(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.jsonl") if p.is_file())


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
        group_id = decode_group(sub.name)
        files = _jsonl(sub)
        if group_id is not None and files:
            streams.groups[group_id] = files
    loose = _jsonl(root)
    if loose:
        named = decode_group(root.name)
        if not streams.groups and root.name != "wal" and named is not None:
            streams.groups[named] = loose  # the directory of one group, given directly
        else:
            streams.layout = "flat" if not streams.groups else "multi-group"
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


def _lines_of(path: Path) -> Iterator[RefLine | BadLine]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, text in enumerate(fh, 1):
            if text.strip():
                yield _parse(text, f"{path.name}:{number}")


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
        with path.open("rb") as fh:
            total += sum(1 for raw in fh if raw.strip())
    return total
