"""The worker's read model: its own graph projection, caught up from the streams on demand.

The service passes, with every query, what its graph has applied of each group
(``Target``: generation, seq, cleared floor). The mirror brings its own Kuzu graph to exactly
that by reading the group's stream with the service's reader and applying with the service's
``GraphProjection`` (same code, so the same rows): a group whose generation or floor changed,
that the service purged (``dirty``), or that is ahead of its target is purged and replayed
from its floor; a lagging one applies only the missing seqs; a group the service no longer
holds is purged. Each group's position is the ``WalPosition`` row of the mirror's graph,
labelled ``<generation>|<floor>`` so that a change of either is seen after a restart too.

Events the service could not apply (it skipped them, ADR 0076) fail here the same way and
are skipped one by one, so the mirror holds what the service holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from lcg.errors import ProjectionError, ProjectionIOError
from lcg.events import Event, StreamReader, encode_group
from lcg.projections import GraphProjection
from lcg.query.sandbox.protocol import Target

__all__ = ["Mirror", "label_of"]

_BATCH = 256


def label_of(target: Target) -> str:
    """The generation the mirror records for a group: the stream's and the cleared floor."""
    return f"{target.generation}|{target.floor}"


class Mirror:
    """A graph projection kept equal to the service's, group by group."""

    def __init__(self, graph: GraphProjection, wal_dir: Path) -> None:
        self.graph = graph
        self.wal_dir = wal_dir
        #: ``(label, seq)`` per group as synced in this process: a group whose stream has
        #: unreadable lines at its end stays below its target seq, and is not re-read.
        self._synced: dict[str, tuple[str, int]] = {}

    def pending(self, targets: dict[str, Target], dirty: list[str]) -> bool:
        """Whether ``sync`` has anything to do (the common case, from memory: no)."""
        if dirty or len(self._synced) != len(targets):
            return True
        return any(self._synced.get(g) != (label_of(t), t.seq) for g, t in targets.items())

    def sync(self, targets: dict[str, Target], dirty: list[str]) -> None:
        """Make every group equal to its target; purge the groups not in ``targets``."""
        held = self.graph.committed_positions()
        for group_id in sorted(set(held) - set(targets)):
            self.graph.purge_group(group_id)
            self._synced.pop(group_id, None)
        for group_id in dirty:
            if group_id in held and group_id in targets:
                self.graph.purge_group(group_id)
                self._synced.pop(group_id, None)
        held = self.graph.committed_positions()
        for group_id, target in targets.items():
            self._sync_group(group_id, target, held.get(group_id))
        for group_id in set(self._synced) - set(targets):
            del self._synced[group_id]

    def _sync_group(self, group_id: str, target: Target, held: tuple[int, str] | None) -> None:
        label = label_of(target)
        if self._synced.get(group_id) == (label, target.seq):
            return
        if held is not None and (held[1] != label or held[0] > target.seq):
            self.graph.purge_group(group_id)
            held = None
        start = target.floor + 1 if held is None else held[0] + 1
        if start <= target.seq:
            reader = StreamReader(
                self.wal_dir / encode_group(group_id), generation=target.generation
            )
            batches = reader.batches(start, target.seq, batch_size=_BATCH)
            if held is None:
                self._load(group_id, label, batches)
            else:
                for batch in batches:
                    self._apply(group_id, label, batch)
        self._synced[group_id] = (label, target.seq)

    def _load(self, group_id: str, label: str, batches: Iterator[list[Event]]) -> None:
        """A group from nothing: the bulk path, or batch by batch if an event fails."""
        kept: list[list[Event]] = []

        def keeping() -> Iterator[list[Event]]:
            for batch in batches:
                kept.append(batch)
                yield batch

        try:
            self.graph.load_group(group_id, label, keeping())
        except ProjectionIOError:
            raise
        except ProjectionError:
            # Nothing of the bulk load was kept: apply what it read, and the rest, one batch
            # at a time, so that only the events that fail are left out.
            for batch in kept:
                self._apply(group_id, label, batch)
            for batch in batches:
                self._apply(group_id, label, batch)

    def _apply(self, group_id: str, label: str, batch: list[Event]) -> None:
        try:
            self.graph.apply(group_id, label, batch)
        except ProjectionIOError:
            raise
        except ProjectionError:
            for event in batch:
                try:
                    self.graph.apply(group_id, label, [event])
                except ProjectionIOError:
                    raise
                except ProjectionError:
                    continue  # the service skipped it too (it fails the same way there)
