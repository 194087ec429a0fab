"""``.wal-bounds.json``: a self-validating cache of a stream's min and max seq.

The cache records the segment set it was computed from as ``[name, size]`` pairs. It is used
only while that set is unchanged; if only the last segment grew, its tail is re-read; any
other change recomputes from the files. A missing, foreign or corrupt cache is a miss, so the
cache can never change an answer.

With ``limits`` (a publication read by a follower) no cache is read or written, every file
is opened guarded and bounded (``events.guarded``), and a line is searched for no further
than the line limit: the status of a hostile group fails with its reason, it never stalls.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from lcg.events.codec import decode_line
from lcg.events.files import atomic_write
from lcg.events.guarded import (
    DEFAULT_MAX_SIDECAR_BYTES,
    ReadLimits,
    UnsafeFileError,
    open_regular,
    read_small,
)
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


#: The largest bounds cache read (a pair per segment: thousands of segments fit).
_MAX_CACHE_BYTES = 16 * DEFAULT_MAX_SIDECAR_BYTES


def _first_seq(path: Path, limits: ReadLimits | None) -> int | None:
    max_line = -1 if limits is None else limits.max_line_bytes + 1
    size = None if limits is None else limits.max_segment_bytes
    with open_regular(path, max_bytes=size) as fh:
        while line := fh.readline(max_line):
            if not line.endswith(b"\n"):
                if limits is not None and len(line) >= max_line:
                    raise UnsafeFileError(
                        f"a line of {path} is longer than the {limits.max_line_bytes:,} bytes "
                        "a line may hold"
                    )
                return None
            seq = decode_line(line).seq
            if seq is not None:
                return seq
    return None


def _last_seq(path: Path, limits: ReadLimits | None) -> int | None:
    max_line = None if limits is None else limits.max_line_bytes
    tail = read_tail(path, max_line_bytes=max_line)
    return decode_line(tail.last_line).seq if tail.last_line is not None else None


def _read_cache(group_dir: Path) -> Bounds | None:
    try:
        data = read_small(group_dir / BOUNDS_FILE, _MAX_CACHE_BYTES)
        return None if data is None else _decoder.decode(data)
    except (OSError, ValueError, UnsafeFileError):
        return None


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


def read_bounds(
    group_dir: Path, *, write_cache: bool = True, limits: ReadLimits | None = None
) -> Bounds:
    """The stream's bounds, from the cache when it is still valid, else from the files.

    ``limits``: read a stream someone else wrote (no cache; bounded, guarded reads).
    """
    segments = list_segments(group_dir)
    # lstat: a link's own size; reading through it is refused below.
    files = [(s.path.name, s.path.lstat().st_size) for s in segments]
    total = sum(size for _, size in files)
    cached = _read_cache(group_dir) if limits is None else None
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
        last = _last_seq(segments[-1].path, limits)
        max_seq = last if last is not None else cached.max_seq
        min_seq = (
            cached.min_seq if cached.min_seq is not None else _first_seq(segments[-1].path, limits)
        )
    else:
        min_seq = None
        for seg in segments:
            min_seq = _first_seq(seg.path, limits)
            if min_seq is not None:
                break
        max_seq = None
        for seg in reversed(segments):
            max_seq = _last_seq(seg.path, limits)
            if max_seq is not None:
                break
    bounds = Bounds(
        min_seq=min_seq, max_seq=max_seq, files=files, file_count=len(files), byte_size=total
    )
    if write_cache and limits is None and group_dir.is_dir():
        try:
            atomic_write(group_dir / BOUNDS_FILE, _encoder.encode(bounds), durable=False)
        except OSError:
            pass  # A read-only publication: the cache is optional.
    return bounds
