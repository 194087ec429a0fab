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

from lcg.projections._group_file import GroupsFile, GroupSidecar

__all__ = ["PendingReset", "PendingResets"]


class PendingReset(msgspec.Struct, kw_only=True):
    """A reset applied to a group and not yet reported: from which generation, to which."""

    previous_generation: str
    generation: str


#: ``<db_dir>/resets.json``: the unreported reset of each group.
_decoder = msgspec.json.Decoder(GroupsFile[PendingReset])


class PendingResets(GroupSidecar[PendingReset]):
    """The unreported resets, by group (in memory only without a path)."""

    def __init__(self, path: Path | None) -> None:
        super().__init__(
            path,
            _decoder,
            "delete it (the next rebuild of a reset group then reports no reset, and needs "
            "force_clear=true)",
        )

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
