"""What a writer does to its stream on open: cut a torn tail off, and settle the generation.

Both run under the writer's ``flock``, before the first append: a torn final line (no newline,
or not JSON) is a write that was never acknowledged, so it is cut off and its bytes kept in
``.quarantine/``; the stream's generation is read from its sidecar and its lines (and the
sidecar restored or a generation minted where that is safe).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from lcg.errors import GenerationError
from lcg.events.codec import decode_line
from lcg.events.files import DIR_MODE, FILE_MODE, fsync_dir
from lcg.events.generation import mint_generation, stream_generation, write_generation
from lcg.events.layout import QUARANTINE_DIR
from lcg.events.segments import list_segments, read_tail

__all__ = ["recover_tail", "resolve_generation"]


def recover_tail(group_dir: Path) -> None:
    """Cut a torn or undecodable final line off the last segment, keeping its bytes."""
    segments = list_segments(group_dir)
    if not segments:
        return
    path = segments[-1].path
    while True:
        tail = read_tail(path)
        cut = tail.good_end
        if tail.last_line is not None and decode_line(tail.last_line).problem == "unparseable":
            # A complete but undecodable last line is a torn write too.
            cut = tail.good_end - len(tail.last_line) - 1
        if cut >= tail.size:
            return
        _quarantine(group_dir, path, cut)


def _quarantine(group_dir: Path, path: Path, offset: int) -> None:
    qdir = group_dir / QUARANTINE_DIR
    qdir.mkdir(mode=DIR_MODE, exist_ok=True)
    with open(path, "r+b") as fh:
        fh.seek(offset)
        torn = fh.read()
        # A name per cut: repeated crashes at one offset must not overwrite earlier bytes.
        target = qdir / f"{path.name}.{offset}.{uuid.uuid4().hex[:8]}.torn"
        with open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "wb") as out:
            out.write(torn)
            out.flush()
            os.fsync(out.fileno())
        fh.truncate(offset)
        fh.flush()
        os.fsync(fh.fileno())
    fsync_dir(qdir)


def resolve_generation(group_dir: Path, group_id: str) -> str:
    """The generation of the stream in ``group_dir``; raise if its witnesses disagree."""
    witnesses = stream_generation(group_dir)
    recorded, from_lines = witnesses.sidecar, witnesses.lines
    last_gen = _last_line_generation(group_dir)
    if recorded is None:
        if from_lines is not None:
            if last_gen is not None and last_gen != from_lines:
                raise GenerationError(
                    f"group {group_id!r}: its first line carries generation "
                    f"{from_lines!r} and its last {last_gen!r}; the stream mixes two "
                    "generations - restore it from its publication or dump it to a new stream"
                )
            # The dot-file was dropped (a glob copy) but every line carries the generation.
            write_generation(group_dir, from_lines)
            return from_lines
        if any(seg.path.stat().st_size > 0 for seg in list_segments(group_dir)):
            # Minting into a populated stream would silently re-identify its lines.
            raise GenerationError(
                f"group {group_id!r}: {group_dir} holds lines but no generation "
                "(no .wal-generation.json and no line carries one); restore the sidecar "
                "from the stream's publication"
            )
        return mint_generation(group_dir)
    for seen in (from_lines, last_gen):
        if seen is not None and seen != recorded:
            raise GenerationError(
                f"group {group_id!r}: lines carry generation {seen!r} but "
                f"{group_dir}/.wal-generation.json says {recorded!r}; the stream mixes "
                "two generations - restore it from its publication or dump it to a new stream"
            )
    return recorded


def _last_line_generation(group_dir: Path) -> str | None:
    for seg in reversed(list_segments(group_dir)):
        tail = read_tail(seg.path)
        if tail.last_line is not None:
            decoded = decode_line(tail.last_line)
            return decoded.event.gen if decoded.event is not None else None
    return None
