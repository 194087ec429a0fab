"""A per-group JSON sidecar of the projector: ``{"groups": {group: value}}``, one file.

The projector keeps a few such files beside the projections (the cleared floors, the
unreported resets, the ``skipped`` damage). Each is read once on open — a file that does not
decode is a ``CorruptFileError`` naming it and its remedy, never "none" — and rewritten
whole, atomically, on each change; an empty one is deleted. Without a path (a scratch
projector, ``lcg verify``) the values live in memory only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Generic, TypeVar

import msgspec

from lcg.errors import CorruptFileError
from lcg.events import atomic_write

__all__ = ["GroupsFile", "GroupSidecar", "read_groups", "write_groups"]

V = TypeVar("V")


class GroupsFile(msgspec.Struct, Generic[V], kw_only=True):
    """The file: one value per group."""

    groups: dict[str, V] = {}


def read_groups(
    path: Path | None, decoder: msgspec.json.Decoder[GroupsFile[V]], remedy: str
) -> dict[str, V]:
    """The values kept at ``path`` (none if there is no path or no file yet)."""
    if path is None:
        return {}
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        return dict(decoder.decode(data).groups)
    except ValueError as exc:  # msgspec.DecodeError or UnicodeDecodeError
        raise CorruptFileError(f"{path} is unreadable ({exc}); {remedy}") from exc


def write_groups(path: Path, groups: Mapping[str, V]) -> None:
    """Write ``groups`` to ``path`` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, msgspec.json.encode(GroupsFile(groups=dict(groups))))


class GroupSidecar(Generic[V]):
    """One value per group, kept in a ``GroupsFile`` (in memory only without a path)."""

    def __init__(
        self, path: Path | None, decoder: msgspec.json.Decoder[GroupsFile[V]], remedy: str
    ) -> None:
        #: Where the values are kept (``None``: in memory only).
        self.path = path
        self.groups: dict[str, V] = read_groups(path, decoder, remedy)

    def forget(self, group_id: str | None = None) -> None:
        """Drop the value of ``group_id`` (of every group if ``None``)."""
        if group_id is None:
            if not self.groups:
                return
            self.groups.clear()
        elif self.groups.pop(group_id, None) is None:
            return
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        if not self.groups:
            self.path.unlink(missing_ok=True)
            return
        write_groups(self.path, self.groups)
