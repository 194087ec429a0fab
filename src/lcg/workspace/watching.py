"""Who is watching which trees of a workspace (issue 28 item 2, ADR 0207).

Each ``lcg watch`` process, whether it serves the workspace or goes through the service
that does, keeps a claim file in ``.lcg/watchers/`` for as long as it runs: its pid, group
and the roots it watches, under an exclusive ``flock``. ``active_watches`` lists the claims
whose lock is still held; the kernel drops a lock when its process dies, however it dies, so
a claim left by a killed watcher reads as gone (and is removed) — no pid is trusted alone.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from lcg.events import FILE_MODE, private_dir, rename_into_place
from lcg.timestamps import now

__all__ = ["WATCHERS_DIR", "WatchClaim", "active_watches", "watching"]

#: The folder of ``.lcg`` that holds the claims.
WATCHERS_DIR = "watchers"
#: A claim larger than this is not one lcg wrote: skipped.
_MAX_CLAIM_BYTES = 1 << 20


class WatchClaim(msgspec.Struct, frozen=True, kw_only=True):
    """One running watcher: its process, group, resolved roots and start time."""

    pid: int
    group_id: str
    roots: list[str]
    since: str


@contextmanager
def watching(lcg_dir: Path, roots: list[Path], group_id: str) -> Iterator[WatchClaim]:
    """Hold a claim that this process watches ``roots`` into ``group_id`` until the block
    ends (or the process dies)."""
    folder = lcg_dir / WATCHERS_DIR
    private_dir(folder)
    claim = WatchClaim(
        pid=os.getpid(),
        group_id=group_id,
        roots=[str(r.resolve()) for r in roots],
        since=now(),
    )
    name = f"{os.getpid()}-{secrets.token_hex(4)}"
    path = folder / f"{name}.json"
    # Written and locked under a name readers pass over, then renamed into place: a claim a
    # reader can see is always whole and always locked while its watcher lives.
    draft = folder / f"{name}.draft"
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, msgspec.json.encode(claim))
        rename_into_place(draft, path, sync_dir=False)
        yield claim
    finally:
        draft.unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        os.close(fd)


def active_watches(lcg_dir: Path) -> list[WatchClaim]:
    """The claims of the watchers running now; those whose process ended are removed."""
    folder = lcg_dir / WATCHERS_DIR
    try:
        names = sorted(p.name for p in folder.iterdir() if p.suffix == ".json")
    except OSError:
        return []
    out: list[WatchClaim] = []
    for name in names:
        claim = _read_live(folder / name)
        if claim is not None:
            out.append(claim)
    return out


def _read_live(path: Path) -> WatchClaim | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None  # gone meanwhile, or not a plain file
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: its watcher runs
        else:
            # Nobody holds it: its watcher ended without removing it (killed).
            path.unlink(missing_ok=True)
            return None
        data = os.read(fd, _MAX_CLAIM_BYTES + 1)
        if len(data) > _MAX_CLAIM_BYTES:
            return None
        try:
            return msgspec.json.decode(data, type=WatchClaim)
        except msgspec.DecodeError:
            return None  # not one lcg wrote
    finally:
        os.close(fd)
