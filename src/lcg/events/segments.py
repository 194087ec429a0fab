"""Segment files of a group stream: listing, locating a seq, reading the last line."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from lcg.events.guarded import UnsafeFileError, open_regular
from lcg.events.layout import SEGMENT_DIGITS, SEGMENT_SUFFIX

__all__ = ["Segment", "TailInfo", "list_segments", "read_tail", "segments_from"]

_TAIL_WINDOW = 256 * 1024


class Segment(msgspec.Struct, frozen=True):
    """One segment file: its path and the seq of its first line (from its name)."""

    path: Path
    first_seq: int


class TailInfo(msgspec.Struct, frozen=True):
    """The end of a segment: the last complete line, and any torn bytes after it."""

    last_line: bytes | None
    #: Byte offset where the complete lines end (torn bytes start here).
    good_end: int
    size: int


def list_segments(group_dir: Path) -> list[Segment]:
    """The group's segments in seq order (by the first seq their names carry)."""
    try:
        names = os.listdir(group_dir)
    except FileNotFoundError:
        return []
    segments = []
    for name in names:
        stem = name[: -len(SEGMENT_SUFFIX)]
        if name.endswith(SEGMENT_SUFFIX) and len(stem) == SEGMENT_DIGITS and stem.isdigit():
            segments.append(Segment(group_dir / name, int(stem)))
    segments.sort(key=lambda s: s.first_seq)
    return segments


def segments_from(segments: list[Segment], from_seq: int) -> list[Segment]:
    """The suffix of ``segments`` that can hold ``from_seq`` and later (no earlier file read)."""
    start = 0
    for i, seg in enumerate(segments):
        if seg.first_seq <= from_seq:
            start = i
        else:
            break
    return segments[start:]


def read_tail(path: Path, *, max_line_bytes: int | None = None) -> TailInfo:
    """Find the last complete line of ``path``; a final line without ``\\n`` is torn.

    The file is opened guarded (``events.guarded``: a regular file, never through a link).
    With ``max_line_bytes`` no more than about that many bytes are searched for the line's
    start (``UnsafeFileError`` past it), so a huge file without newlines cannot fill memory.
    """
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return TailInfo(None, 0, 0)
        window = min(size, _TAIL_WINDOW)
        while True:
            if max_line_bytes is not None and window > 2 * max_line_bytes + _TAIL_WINDOW:
                raise UnsafeFileError(
                    f"the last line of {path} is longer than the {max_line_bytes:,} bytes a "
                    "line may hold (or it has no line end)"
                )
            fh.seek(size - window)
            data = fh.read(window)
            end = data.rfind(b"\n")
            if end == -1:
                if window == size:
                    return TailInfo(None, 0, size)
                window = min(size, window * 4)
                continue
            start = data.rfind(b"\n", 0, end)
            if start == -1 and window < size:
                window = min(size, window * 4)
                continue
            line = data[start + 1 : end]
            good_end = size - window + end + 1
            return TailInfo(line, good_end, size)
