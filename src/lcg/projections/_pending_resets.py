"""The generation resets a catch-up applied that no rebuild has reported yet (ADR 0173).

The reference keeps the old rows until ``knowledge_rebuild_from_wal`` compares the recorded
generation with the one on disk and reports ``reset_detected`` (§3.9 step 3). lcg re-hydrates
a reset group at once (at open, or when a replaced stream is next caught up), so that
comparison finds nothing by the time the operator calls the rebuild. The reset is noted here
instead, in ``<db_dir>/resets.json`` (written atomically), and the next real rebuild of the
group reports it and forgets it. The file sits beside the projections it speaks of: a workspace
whose projections are deleted has no previous generation left to report.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from lcg.errors import CorruptFileError
from lcg.events.files import atomic_write

__all__ = ["PendingReset", "PendingResets"]


class PendingReset(msgspec.Struct, kw_only=True):
    """A reset applied to a group and not yet reported: from which generation, to which."""

    previous_generation: str
    generation: str


class _ResetsFile(msgspec.Struct, kw_only=True):
    """``<db_dir>/resets.json``: the unreported reset of each group."""

    groups: dict[str, PendingReset] = {}


_decoder = msgspec.json.Decoder(_ResetsFile)


class PendingResets:
    """The unreported resets, by group (in memory only without a path)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.groups: dict[str, PendingReset] = {}
        if path is None:
            return
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return
        try:
            self.groups = dict(_decoder.decode(data).groups)
        except ValueError as exc:  # msgspec.DecodeError or UnicodeDecodeError
            raise CorruptFileError(
                f"{path} is unreadable ({exc}); delete it (the next rebuild of a reset group "
                "then reports no reset, and needs force_clear=true)"
            ) from exc

    def get(self, group_id: str, generation: str | None) -> PendingReset | None:
        """The unreported reset of ``group_id`` into ``generation`` (the stream's now)."""
        pending = self.groups.get(group_id)
        if pending is None or pending.generation != generation:
            return None
        return pending

    def note(self, group_id: str, previous: str, generation: str) -> None:
        """Record a reset of ``group_id``; one still unreported keeps its older generation."""
        earlier = self.groups.get(group_id)
        if earlier is not None and earlier.generation == generation:
            return
        origin = previous if earlier is None else earlier.previous_generation
        if origin == generation:
            # Back to the generation last reported: there is no reset left to report.
            self.forget(group_id)
            return
        self.groups[group_id] = PendingReset(previous_generation=origin, generation=generation)
        self._save()

    def forget(self, group_id: str | None = None) -> None:
        """Drop the reset of ``group_id`` (of every group if ``None``): it was reported."""
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, msgspec.json.encode(_ResetsFile(groups=dict(self.groups))))
