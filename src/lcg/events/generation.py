"""A stream's generation: an opaque id minted once per stream and stamped on every line.

``.wal-generation.json`` (``{"generation": "<uuid4 hex>"}``) is the publish contract of the
reference. It is written atomically and published with a hard link, so when two processes
race to mint, exactly one wins and both read the winner. A stream whose dot-files were dropped
still knows its generation from its lines (``generation_from_lines``).

The group's *effective* generation is decided here and nowhere else (ADR 0115): the sidecar's,
else the lines'. Where both are present and differ (a split), the sidecar's is still the
effective one; the projector degrades the group and the writer refuses it, reading ``split``.

Both witnesses are read through the guarded open (``events.guarded``): a sidecar or segment
that is a symlink, a FIFO or a device is never read through. A follower reads them strictly
(``stream_generation(..., limits=...)``): a sidecar that is unsafe, larger than its limit or
malformed is an ``UnsafeFileError`` or ``GenerationError`` naming it, not "absent".
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Literal

import msgspec

from lcg.errors import GenerationError
from lcg.events.files import FILE_MODE, atomic_write, fsync_dir
from lcg.events.guarded import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_MAX_SIDECAR_BYTES,
    ReadLimits,
    UnsafeFileError,
    open_regular,
    read_small,
)
from lcg.events.layout import GENERATION_FILE, TEMP_SUFFIX
from lcg.events.segments import list_segments

__all__ = [
    "GenerationFile",
    "GenerationSource",
    "StreamGeneration",
    "effective_generation",
    "generation_from_lines",
    "mint_generation",
    "read_generation",
    "read_generation_strict",
    "stream_generation",
    "write_generation",
]

#: Where a stream's effective generation was read from.
GenerationSource = Literal["sidecar", "lines"]


class GenerationFile(msgspec.Struct, kw_only=True):
    """The content of ``.wal-generation.json``."""

    generation: str


_decoder = msgspec.json.Decoder(GenerationFile)
_encoder = msgspec.json.Encoder()
_raw = msgspec.json.Decoder()


def read_generation(group_dir: Path) -> str | None:
    """The generation recorded in the sidecar, or ``None`` if absent, blank or corrupt.

    A sidecar that is a symlink, not a regular file or larger than a sidecar may be counts
    as corrupt: it is never read through.
    """
    try:
        return read_generation_strict(group_dir, DEFAULT_MAX_SIDECAR_BYTES)
    except (UnsafeFileError, GenerationError):
        return None


def read_generation_strict(group_dir: Path, max_bytes: int) -> str | None:
    """The sidecar's generation, ``None`` if there is no sidecar or it is blank.

    Raises ``UnsafeFileError`` for a sidecar that is a link, not a regular file or larger
    than ``max_bytes``, and ``GenerationError`` for one that is not a generation file.
    """
    path = group_dir / GENERATION_FILE
    data = read_small(path, max_bytes)
    if data is None:
        return None
    try:
        gen = _decoder.decode(data).generation.strip()
    except ValueError as exc:  # msgspec.DecodeError, or UnicodeDecodeError for invalid UTF-8
        if not data.strip():
            return None
        raise GenerationError(f"{path} is malformed ({exc}): it names no generation") from None
    return gen or None


def generation_from_lines(
    group_dir: Path, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> str | None:
    """The generation stamped on the stream's first decodable line, or ``None`` if empty.

    A line is read up to ``max_line_bytes``: a longer one ends the search in its segment.
    """
    for seg in list_segments(group_dir):
        with open_regular(seg.path) as fh:
            while line := fh.readline(max_line_bytes + 1):
                if not line.endswith(b"\n"):
                    break
                try:
                    raw = _raw.decode(line)
                except ValueError:  # msgspec.DecodeError or UnicodeDecodeError
                    continue
                if isinstance(raw, dict) and isinstance(raw.get("gen"), str) and raw["gen"]:
                    return str(raw["gen"])
    return None


class StreamGeneration(msgspec.Struct, frozen=True, kw_only=True):
    """What a stream directory says its generation is: the sidecar's word and the lines'."""

    #: ``.wal-generation.json``'s generation, or ``None`` if absent, blank or corrupt.
    sidecar: str | None
    #: The generation on the first decodable line, or ``None`` if no line carries one.
    lines: str | None

    @property
    def effective(self) -> str | None:
        """The group's generation: the sidecar's (the reference's contract), else the lines'."""
        return self.sidecar if self.sidecar is not None else self.lines

    @property
    def source(self) -> GenerationSource | None:
        """Which of the two ``effective`` was read from; ``None`` if neither names one."""
        if self.sidecar is not None:
            return "sidecar"
        return "lines" if self.lines is not None else None

    @property
    def split(self) -> bool:
        """True if the sidecar and the lines name different generations (a damaged copy)."""
        return self.sidecar is not None and self.lines is not None and self.sidecar != self.lines


def stream_generation(group_dir: Path, *, limits: ReadLimits | None = None) -> StreamGeneration:
    """Read both witnesses of ``group_dir``'s generation, from disk (no writer's memory).

    With ``limits`` (a follower reading a publication) the sidecar is read strictly: unsafe,
    oversized or malformed raises instead of reading as absent.
    """
    if limits is None:
        return StreamGeneration(
            sidecar=read_generation(group_dir), lines=generation_from_lines(group_dir)
        )
    return StreamGeneration(
        sidecar=read_generation_strict(group_dir, limits.max_sidecar_bytes),
        lines=generation_from_lines(group_dir, max_line_bytes=limits.max_line_bytes),
    )


def effective_generation(group_dir: Path) -> str | None:
    """The generation ``group_dir``'s stream is read as, or ``None`` for an unnamed stream."""
    sidecar = read_generation(group_dir)
    # The lines are read only when the sidecar is missing: the common case opens no segment.
    return sidecar if sidecar is not None else generation_from_lines(group_dir)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` (mode 0600) and make its bytes durable."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def write_generation(group_dir: Path, generation: str) -> None:
    """Replace the sidecar with ``generation`` (used when restoring it from the lines)."""
    atomic_write(
        group_dir / GENERATION_FILE, _encoder.encode(GenerationFile(generation=generation))
    )


def mint_generation(group_dir: Path) -> str:
    """Mint a generation for an empty stream; if another process won the race, return theirs."""
    existing = read_generation(group_dir)
    if existing is not None:
        return existing
    generation = uuid.uuid4().hex
    tmp = group_dir / f"{GENERATION_FILE}.{uuid.uuid4().hex[:8]}{TEMP_SUFFIX}"
    _write_private(tmp, _encoder.encode(GenerationFile(generation=generation)))
    target = group_dir / GENERATION_FILE
    try:
        os.link(tmp, target)
    except FileExistsError:
        # Someone else published first, or junk is there. Junk is replaced once.
        if read_generation(group_dir) is None:
            atomic_write(target, _encoder.encode(GenerationFile(generation=generation)))
            return generation
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(group_dir)
    winner = read_generation(group_dir)
    return winner if winner is not None else generation
