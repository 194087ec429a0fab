"""``.lcg/replica/<group>.json``: what a follower verified, kept across restarts.

Without it a restarted replica could re-verify seqs and generations but not notice that bytes
it applied before were since changed in place. The file only strengthens the next run's
checks: a missing or unreadable one means "verify from the start".
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import msgspec

from lcg.events import LCG_DIR, REPLICA_DIR, VerifiedTail, atomic_write, encode_group

__all__ = ["SavedFile", "SavedTrack", "load_saved", "save_verified", "saved_path"]


class SavedFile(msgspec.Struct, kw_only=True):
    """A verified prefix of one segment: its length, line count and BLAKE2b digest."""

    name: str
    consumed: int
    lines: int
    digest: str


class SavedTrack(msgspec.Struct, kw_only=True):
    """``.lcg/replica/<group>.json``: what the follower verified, kept across restarts."""

    group_id: str
    generation: str
    next_seq: int
    files: list[SavedFile] = []
    #: Whether a checksummed line was verified: a line without one after it is corrupt.
    checksummed: bool = False


_decoder = msgspec.json.Decoder(SavedTrack)
_encoder = msgspec.json.Encoder()


def saved_path(workspace: Path, group_id: str) -> Path:
    """Where the replica workspace ``workspace`` keeps ``group_id``'s verification marks."""
    return workspace / LCG_DIR / REPLICA_DIR / f"{encode_group(group_id)}.json"


def load_saved(workspace: Path, group_id: str) -> SavedTrack | None:
    """The marks a previous run saved, or ``None`` if there are none it could read."""
    try:
        return _decoder.decode(saved_path(workspace, group_id).read_bytes())
    except (OSError, ValueError):
        return None


def save_verified(workspace: Path, track: VerifiedTail) -> None:
    """Save what ``track`` verified (nothing before it knows its generation)."""
    if track.generation is None:
        return
    saved = SavedTrack(
        group_id=track.group_id,
        generation=track.generation,
        next_seq=track.next_seq,
        files=[
            SavedFile(name=name, consumed=m.consumed, lines=m.lines, digest=m.hasher.hexdigest())
            for name, m in sorted(track.files.items())
        ],
        checksummed=track.lines.checksummed,
    )
    path = saved_path(workspace, track.group_id)
    # The marks only strengthen the next run's checks: failing to save them is not an error.
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, _encoder.encode(saved), durable=False)
