"""A stream's generation: an opaque id minted once per stream and stamped on every line.

``.wal-generation.json`` (``{"generation": "<uuid4 hex>"}``) is the publish contract of the
reference. It is written atomically and published with a hard link, so when two processes
race to mint, exactly one wins and both read the winner. A stream whose dot-files were dropped
still knows its generation from its lines (see ``reader.generation_from_lines``).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import msgspec

from lcg.events._fs import FILE_MODE, fsync_dir
from lcg.events.layout import GENERATION_FILE, TEMP_SUFFIX

__all__ = ["GenerationFile", "mint_generation", "read_generation", "write_generation"]


class GenerationFile(msgspec.Struct, kw_only=True):
    """The content of ``.wal-generation.json``."""

    generation: str


_decoder = msgspec.json.Decoder(GenerationFile)
_encoder = msgspec.json.Encoder()


def read_generation(group_dir: Path) -> str | None:
    """The generation recorded in the sidecar, or ``None`` if absent, blank or corrupt."""
    try:
        data = (group_dir / GENERATION_FILE).read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        gen = _decoder.decode(data).generation.strip()
    except ValueError:  # msgspec.DecodeError, or UnicodeDecodeError for invalid UTF-8
        return None
    return gen or None


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` (mode 0600) and make its bytes durable."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def write_generation(group_dir: Path, generation: str) -> None:
    """Replace the sidecar with ``generation`` (used when restoring it from the lines)."""
    tmp = group_dir / f"{GENERATION_FILE}.{uuid.uuid4().hex[:8]}{TEMP_SUFFIX}"
    _write_private(tmp, _encoder.encode(GenerationFile(generation=generation)))
    os.replace(tmp, group_dir / GENERATION_FILE)
    fsync_dir(group_dir)


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
            os.replace(tmp, target)
            fsync_dir(group_dir)
            return generation
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(group_dir)
    winner = read_generation(group_dir)
    return winner if winner is not None else generation
