"""``.wal-bounds.json``: a self-validating cache of a stream's min and max seq.

The cache records the segment set it was computed from as ``[name, size]`` pairs. It is used
only while that set is unchanged; if only the last segment grew, its tail is re-read; any
other change recomputes from the files. A missing, foreign or corrupt cache is a miss, so the
cache can never change an answer.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from lcg.events.codec import decode_line
from lcg.events.files import atomic_write
from lcg.events.layout import BOUNDS_FILE, SEGMENT_SUFFIX
from lcg.events.segments import list_segments, read_tail

__all__ = ["Bounds", "read_bounds"]


class Bounds(msgspec.Struct, kw_only=True):
    """The lowest and highest seq in the stream (``None`` when it has no lines)."""

    min_seq: int | None
    max_seq: int | None
    files: list[tuple[str, int]] = []
    file_count: int = 0
    byte_size: int = 0


_decoder = msgspec.json.Decoder(Bounds)
_encoder = msgspec.json.Encoder()


def _first_seq(path: Path) -> int | None:
    with open(path, "rb") as fh:
        for line in fh:
            if not line.endswith(b"\n"):
                return None
            seq = decode_line(line).seq
            if seq is not None:
                return seq
    return None


def _last_seq(path: Path) -> int | None:
    tail = read_tail(path)
    return decode_line(tail.last_line).seq if tail.last_line is not None else None


def _plausible(cached: Bounds) -> bool:
    """A cache must agree with itself and with the file names it lists, or it is a miss."""
    if cached.file_count != len(cached.files) or cached.byte_size != sum(
        n for _, n in cached.files
    ):
        return False
    firsts = [int(name[: -len(SEGMENT_SUFFIX)]) for name, size in cached.files if size > 0]
    if not firsts:
        return cached.min_seq is None and cached.max_seq is None
    lo, hi = cached.min_seq, cached.max_seq
    # Names carry the first seq of each file: min sits in the first file, max in the last.
    return lo is not None and hi is not None and firsts[0] <= lo <= hi and hi >= firsts[-1]


def read_bounds(group_dir: Path, *, write_cache: bool = True) -> Bounds:
    """The stream's bounds, from the cache when it is still valid, else from the files."""
    segments = list_segments(group_dir)
    files = [(s.path.name, s.path.stat().st_size) for s in segments]
    total = sum(size for _, size in files)
    cached: Bounds | None = None
    try:
        cached = _decoder.decode((group_dir / BOUNDS_FILE).read_bytes())
    except (OSError, ValueError):
        cached = None
    if cached is not None and not _plausible(cached):
        cached = None
    if cached is not None and [tuple(f) for f in cached.files] == files:
        return cached
    if (
        cached is not None
        and files
        and len(cached.files) == len(files)
        and [tuple(f) for f in cached.files[:-1]] == files[:-1]
        and cached.files[-1][0] == files[-1][0]
        and cached.files[-1][1] < files[-1][1]
    ):
        # Only the last segment grew: its new tail is the new maximum.
        last = _last_seq(segments[-1].path)
        max_seq = last if last is not None else cached.max_seq
        min_seq = cached.min_seq if cached.min_seq is not None else _first_seq(segments[-1].path)
    else:
        min_seq = None
        for seg in segments:
            min_seq = _first_seq(seg.path)
            if min_seq is not None:
                break
        max_seq = None
        for seg in reversed(segments):
            max_seq = _last_seq(seg.path)
            if max_seq is not None:
                break
    bounds = Bounds(
        min_seq=min_seq, max_seq=max_seq, files=files, file_count=len(files), byte_size=total
    )
    if write_cache and group_dir.is_dir():
        try:
            atomic_write(group_dir / BOUNDS_FILE, _encoder.encode(bounds), durable=False)
        except OSError:
            pass  # A read-only publication: the cache is optional.
    return bounds
