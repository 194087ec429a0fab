"""Stream files in a group's directory that lcg did not name: a reference-format stream.

lcg names each segment by its first seq (``layout.segment_name``: ``<12 digits>.jsonl``) and
reads no other file as its events. The reference names its segments by the time a writer
opened them (``YYYYMMDD_HHMMSS_<6hex>_<NNNN>.jsonl``, lcg-api §5.5), a publisher that creates
``.lcg/wal/<group>/`` itself names them as it likes, and the reference replays every
``*.jsonl`` of the directory (§5.4). So a ``*.jsonl`` there that is not one of our names is
another writer's stream: it is never decoded as our events, and it is never taken for an empty
stream either. ``reference_stream`` names it, with its highest seq as its lines say it (the
five-key line's ``seq``, read from each file's last line, bounded and guarded) and the command
that imports it (``lcg import-reference``, ADR 0212). Only names are listed; a link, a FIFO or
a huge line is counted and never followed, opened for blocking or held.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import msgspec

from lcg.events.guarded import DEFAULT_MAX_LINE_BYTES, UnsafeFileError
from lcg.events.layout import LCG_DIR, SEGMENT_DIGITS, SEGMENT_SUFFIX, WAL_DIR
from lcg.events.segments import read_tail

__all__ = ["ReferenceStream", "reference_segments", "reference_stream", "stream_files_missing"]

#: How many of the files' names a report shows.
_NAMES_SHOWN = 3


class ReferenceStream(msgspec.Struct, kw_only=True):
    """A stream in the reference's format found in a group's directory: lcg does not replay
    it; ``import_command`` brings it in as this group's stream."""

    file_count: int
    byte_size: int
    #: A few of the files' names, sorted.
    files: list[str]
    #: The highest ``seq`` the files' last lines carry (``None`` when none could be read).
    max_seq: int | None
    import_command: str
    #: One sentence for a person: what it is, why it is not served, what to run.
    note: str


def _ours(name: str) -> bool:
    stem = name[: -len(SEGMENT_SUFFIX)]
    return len(stem) == SEGMENT_DIGITS and stem.isdigit()


def reference_segments(group_dir: Path) -> list[str]:
    """The names of the ``*.jsonl`` entries of ``group_dir`` lcg did not name, sorted."""
    try:
        with os.scandir(group_dir) as entries:
            return sorted(
                e.name
                for e in entries
                if e.name.endswith(SEGMENT_SUFFIX)
                and not e.name.startswith(".")
                and not _ours(e.name)
                and not e.is_dir(follow_symlinks=False)
            )
    except (FileNotFoundError, NotADirectoryError):
        return []


def _last_seq(path: Path) -> int | None:
    try:
        tail = read_tail(path, max_line_bytes=DEFAULT_MAX_LINE_BYTES)
        value = json.loads(tail.last_line) if tail.last_line is not None else None
    except (OSError, UnsafeFileError, ValueError, RecursionError):
        return None
    seq = value.get("seq") if isinstance(value, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0 else None


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def _command(group_dir: Path, group_id: str) -> str:
    wal = group_dir.parent
    at = ""
    if wal.name == WAL_DIR and wal.parent.name == LCG_DIR:  # the workspace's own layout
        at = f"-C {shlex.quote(str(wal.parent.parent))} "
    where = shlex.quote(str(group_dir))
    return f"lcg {at}import-reference {where} --group {shlex.quote(group_id)} --force"


def reference_stream(group_dir: Path, group_id: str) -> ReferenceStream | None:
    """The reference-format stream in ``group_dir``, or ``None`` when it holds none."""
    names = reference_segments(group_dir)
    if not names:
        return None
    seqs = [s for s in (_last_seq(group_dir / n) for n in names) if s is not None]
    command = _command(group_dir, group_id)
    shown = ", ".join(names[:_NAMES_SHOWN]) + (", ..." if len(names) > _NAMES_SHOWN else "")
    note = (
        f"group {group_id!r}: {group_dir} holds a stream in the reference's format "
        f"({len(names)} file(s) lcg did not write: {shown}); lcg does not replay another "
        f"writer's Cypher lines as its events. Import it as this group's stream: stop the "
        f"service, then run `{command}` (the imported stream replaces these files)"
    )
    return ReferenceStream(
        file_count=len(names),
        byte_size=sum(_size(group_dir / n) for n in names),
        files=names[:_NAMES_SHOWN],
        max_seq=max(seqs) if seqs else None,
        import_command=command,
        note=note,
    )


def stream_files_missing(group_dir: Path, group_id: str) -> str:
    """Why a rebuild of ``group_id`` finds no stream of ours in ``group_dir``: none at all
    (the reference's ``No WAL files found at <dir>``), or a reference-format stream."""
    found = reference_stream(group_dir, group_id)
    if found is None:
        return f"No WAL files found at {group_dir}"
    return found.note
