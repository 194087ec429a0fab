"""``WalStore``: the streams of a workspace, one per group, under one WAL root.

Writers are opened lazily on a group's first write and kept; readers are created per call.
"""

from __future__ import annotations

import threading
from pathlib import Path

from lcg.events.bounds import Bounds, read_bounds
from lcg.events.generation import effective_generation
from lcg.events.groups import encode_group, list_groups
from lcg.events.guarded import ReadLimits
from lcg.events.model import Event
from lcg.events.reader import StreamReader
from lcg.events.writer import FsyncPolicy, StreamWriter

__all__ = ["WalStore"]


class WalStore:
    """Every group stream of one WAL root."""

    def __init__(
        self,
        root: Path,
        *,
        fsync: FsyncPolicy = "always",
        max_events_per_file: int = 10_000,
        max_bytes_per_file: int = 5 * 1024 * 1024,
        write_caches: bool = True,
        limits: ReadLimits | None = None,
    ) -> None:
        self.root = root
        #: False when the workspace is only inspected: the bounds cache is read, never written.
        self.write_caches = write_caches
        #: Set when the streams are a publication someone else writes (a replica): every
        #: read is bounded by these and no cache is read or written there (ADR 0154).
        self.limits = limits
        self.fsync: FsyncPolicy = fsync
        self.max_events_per_file = max_events_per_file
        self.max_bytes_per_file = max_bytes_per_file
        self._writers: dict[str, StreamWriter] = {}
        self._lock = threading.Lock()

    def group_dir(self, group_id: str) -> Path:
        """The stream directory of ``group_id`` (it may not exist yet)."""
        return self.root / encode_group(group_id)

    def groups(self) -> list[str]:
        """Every group that has a stream directory."""
        return list_groups(self.root)

    def writer(self, group_id: str) -> StreamWriter:
        """The (lazily opened) writer of ``group_id``."""
        with self._lock:
            writer = self._writers.get(group_id)
            if writer is None:
                writer = StreamWriter(
                    self.root,
                    group_id,
                    fsync=self.fsync,
                    max_events_per_file=self.max_events_per_file,
                    max_bytes_per_file=self.max_bytes_per_file,
                )
                self._writers[group_id] = writer
            return writer

    def append(self, group_id: str, events: list[Event]) -> list[Event]:
        """Append ``events`` to ``group_id``'s stream; return them stamped."""
        return self.writer(group_id).append(events)

    def reader(self, group_id: str, *, check_generation: bool = True) -> StreamReader:
        """A reader of ``group_id``'s stream, skipping lines of other generations."""
        gdir = self.group_dir(group_id)
        generation = self.generation(group_id) if check_generation else None
        max_size = None if self.limits is None else self.limits.max_segment_bytes
        return StreamReader(gdir, generation=generation, max_segment_bytes=max_size)

    def generation(self, group_id: str) -> str | None:
        """The group's generation: its sidecar, else its lines, else ``None``."""
        gdir = self.group_dir(group_id)
        writer = self._writers.get(group_id)
        if writer is not None:
            return writer.generation
        return effective_generation(gdir)

    def bounds(self, group_id: str) -> Bounds:
        """Min/max seq and file statistics of the group's stream."""
        return read_bounds(
            self.group_dir(group_id), write_cache=self.write_caches, limits=self.limits
        )

    def open_writers(self) -> list[StreamWriter]:
        """The writers opened so far."""
        with self._lock:
            return list(self._writers.values())

    def has_writer(self, group_id: str) -> bool:
        """True if this store has opened ``group_id``'s writer."""
        return group_id in self._writers

    def close_writer(self, group_id: str) -> None:
        """Close and forget ``group_id``'s writer, if open."""
        with self._lock:
            writer = self._writers.pop(group_id, None)
        if writer is not None:
            writer.close()

    def close(self) -> None:
        """Close every open writer."""
        with self._lock:
            writers = list(self._writers.values())
            self._writers.clear()
        for writer in writers:
            writer.close()
