"""Marks (named checkpoints) of a group stream under ``.checkpoints/<name>/``.

A mark is ``gN.create.json`` ``{name, seq, created_at_ms, wal_generation}``; deleting it writes
``gN.delete.json`` ``{name, deleted_at_ms}``. The active mark is the highest N without a
tombstone. Files are created with ``O_EXCL`` so exactly one of two racing creators wins.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

import msgspec

from lcg.errors import MarkError
from lcg.events.files import DIR_MODE, FILE_MODE, fsync_dir
from lcg.events.layout import CHECKPOINTS_DIR

__all__ = ["MarkInfo", "MarkRecord", "create_mark", "delete_mark", "list_marks", "validate_name"]

_NAME = re.compile(r"[A-Za-z0-9_-]{1,200}")
_GEN = re.compile(r"g(\d+)\.(create|delete)\.json")


class MarkRecord(msgspec.Struct, kw_only=True):
    """The content of a ``gN.create.json`` file."""

    name: str
    seq: int | None
    created_at_ms: int
    wal_generation: str | None


class Tombstone(msgspec.Struct, kw_only=True):
    """The content of a ``gN.delete.json`` file."""

    name: str
    deleted_at_ms: int


class MarkInfo(msgspec.Struct, kw_only=True):
    """A listed mark with its reachability against the current stream."""

    name: str
    seq: int | None
    reachable: bool
    wal_min_seq: int | None
    wal_max_seq: int | None
    generation: str | None


_rec_decoder = msgspec.json.Decoder(MarkRecord)
_encoder = msgspec.json.Encoder()


def validate_name(name: str) -> None:
    """Raise ``MarkError`` unless ``name`` matches ``[A-Za-z0-9_-]{1,200}``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise MarkError(
            f"invalid checkpoint name {name!r}: use 1-200 characters of A-Z, a-z, 0-9, _ and -"
        )


def _state(mark_dir: Path) -> tuple[int, int | None]:
    """(highest N seen, highest N that is active or None)."""
    creates: set[int] = set()
    deletes: set[int] = set()
    try:
        entries = os.listdir(mark_dir)
    except FileNotFoundError:
        return 0, None
    for entry in entries:
        m = _GEN.fullmatch(entry)
        if m:
            (creates if m.group(2) == "create" else deletes).add(int(m.group(1)))
    highest = max(creates | deletes, default=0)
    active = max((n for n in creates if n not in deletes), default=None)
    if active is not None and any(d > active for d in deletes):
        active = None
    return highest, active


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return 0


def _write_excl(path: Path, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        # A half-written mark must not stand as created (a full disk): take it back.
        path.unlink(missing_ok=True)
        raise
    os.close(fd)
    fsync_dir(path.parent)
    return True


def create_mark(group_dir: Path, name: str, seq: int | None, generation: str | None) -> MarkRecord:
    """Create the mark ``name`` at ``seq``; raise ``MarkError`` if it is already active."""
    validate_name(name)
    # Only an existing stream directory takes marks: creating it here would make a group
    # (and pass by the case-collision guard, which only the writer applies).
    if not stat.S_ISDIR(_lstat_mode(group_dir)):
        raise MarkError(
            f"no stream directory {group_dir} (or it is not a real directory): marks are made "
            "on a group that has been written"
        )
    mark_dir = group_dir / CHECKPOINTS_DIR / name
    mark_dir.parent.mkdir(mode=DIR_MODE, exist_ok=True)
    mark_dir.mkdir(mode=DIR_MODE, exist_ok=True)
    record = MarkRecord(
        name=name, seq=seq, created_at_ms=int(time.time() * 1000), wal_generation=generation
    )
    for _ in range(16):
        highest, active = _state(mark_dir)
        if active is not None:
            raise MarkError(f'checkpoint "{name}" already exists')
        if _write_excl(mark_dir / f"g{highest + 1}.create.json", _encoder.encode(record)):
            return record
    raise MarkError(f'checkpoint "{name}": too many concurrent creators, try again')


def delete_mark(group_dir: Path, name: str) -> None:
    """Tombstone the active mark ``name``; raise ``MarkError`` if there is none."""
    validate_name(name)
    mark_dir = group_dir / CHECKPOINTS_DIR / name
    _, active = _state(mark_dir)
    if active is None:
        raise MarkError(f'checkpoint "{name}" not found')
    tomb = Tombstone(name=name, deleted_at_ms=int(time.time() * 1000))
    if not _write_excl(mark_dir / f"g{active}.delete.json", _encoder.encode(tomb)):
        raise MarkError(f'checkpoint "{name}" not found')


def list_marks(
    group_dir: Path,
    *,
    wal_min_seq: int | None,
    wal_max_seq: int | None,
    generation: str | None,
) -> list[MarkInfo]:
    """Active marks sorted by name, with ``reachable`` computed as the reference does."""
    root = group_dir / CHECKPOINTS_DIR
    if not root.is_dir():
        return []
    out: list[MarkInfo] = []
    for name in sorted(os.listdir(root)):
        if not _NAME.fullmatch(name):
            continue
        _, active = _state(root / name)
        if active is None:
            continue
        try:
            rec = _rec_decoder.decode((root / name / f"g{active}.create.json").read_bytes())
        except (OSError, ValueError):
            continue
        reachable = rec.seq is None or (
            wal_min_seq == 0 and wal_max_seq is not None and rec.seq <= wal_max_seq
        )
        if (
            rec.wal_generation is not None
            and generation is not None
            and rec.wal_generation != generation
        ):
            reachable = False
        out.append(
            MarkInfo(
                name=name,
                seq=rec.seq,
                reachable=reachable,
                wal_min_seq=wal_min_seq,
                wal_max_seq=wal_max_seq,
                generation=rec.wal_generation,
            )
        )
    return out
