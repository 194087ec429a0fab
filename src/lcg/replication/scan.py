"""What a publication's root holds: its group directories, and the names that are no group.

The root is listed, never walked: an entry is a group only if its name decodes to a group id
and re-encodes to itself (``events.groups.decode_group``), so no name can reach outside the
root (``..``, ``/`` or a NUL cannot be an encoded name). A directory or symlink whose name is
no group is reported (``skipped``) and never opened; dot-entries (``.git``) and plain files
(a README) are the repository's own and are ignored. A symlink with a group's name is listed
as that group: the follower stops it with the reason (ADR 0154).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec

from lcg.events import decode_group

__all__ = ["MAX_SKIPPED", "PublicationScan", "scan_publication"]

#: The most names ``skipped`` lists (a hostile root may hold millions); the rest are counted.
MAX_SKIPPED = 50


class PublicationScan(msgspec.Struct, kw_only=True):
    """The groups of a publication root and the directory names that are none."""

    groups: list[str] = []
    #: The name (escaped if not printable) → why it is not followed (``MAX_SKIPPED`` at most).
    skipped: dict[str, str] = {}
    skipped_count: int = 0


def scan_publication(root: Path) -> PublicationScan:
    """List ``root`` once (no entry is followed or opened)."""
    scan = PublicationScan()
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return scan
    for entry in entries:
        name = entry.name
        if name.startswith("."):
            continue  # .git, .gitignore, .github: the repository's own
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue  # gone since the listing
        if not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            continue
        group_id = decode_group(name)
        if group_id is not None:
            scan.groups.append(group_id)
            continue
        scan.skipped_count += 1
        if len(scan.skipped) < MAX_SKIPPED:
            # The printable spelling of a name: it may hold control characters or bad UTF-8.
            shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            scan.skipped[ascii(shown)[1:-1] if not shown.isprintable() else shown] = (
                "not a valid group directory name (a group's directory is its id, or its id "
                "percent-encoded as `lcg publish` writes it); never opened"
            )
    return scan
