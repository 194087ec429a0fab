"""``lcg publish --to nats://… --live``: publish each group's new lines as they become durable.

A process of its own beside ``lcg serve`` (ADR 0190), not a part of the service: it tails the
local stream files as any reader does (``jetstream.LiveLines``, which fsyncs a segment before
its lines leave), so the write path never waits on it and a slow or absent NATS server cannot
slow or fail a local write. The local stream is the source of truth and JetStream a copy:
whenever a publish fails (the server away, an acknowledgement late, a stream sequence not the
expected one) the group's state is dropped and rebuilt from the server's last message, so the
publisher catches up from the local stream when the server returns, with nothing published
twice and nothing skipped. ``status`` is what the server acknowledged per group.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from lcg.errors import LcgError
from lcg.events import effective_generation, encode_group, list_groups
from lcg.replication.jetstream import AckedPosition, JetStreamPublisher, LiveLines

__all__ = ["LivePublisher", "LiveStatus"]

log = logging.getLogger(__name__)


class LiveStatus(msgspec.Struct, kw_only=True):
    """One group of a live publisher: what the server acknowledged, and the last failure."""

    group_id: str
    acked: AckedPosition
    published: int = 0
    error: str | None = None
    #: The publisher's wall clock at the last acknowledgement (``time.time()``).
    acked_at: float | None = None


class _Group:
    def __init__(self, reader: LiveLines, expected_last: int) -> None:
        self.reader = reader
        self.expected_last = expected_last


class LivePublisher:
    """Publishes the groups of ``stream_root`` (or ``groups``) to a JetStream target, live."""

    def __init__(
        self,
        stream_root: Path,
        target: str,
        groups: Sequence[str] | None = None,
        *,
        reset: bool = False,
        replicas: int = 1,
        poll_s: float = 0.02,
        on_error: Callable[[str, str], None] | None = None,
    ) -> None:
        self.stream_root = stream_root
        self.publisher = JetStreamPublisher(target, replicas=replicas)
        self.only = list(groups) if groups else None
        self.reset = reset
        self.poll_s = poll_s
        self.on_error = on_error
        self.status: dict[str, LiveStatus] = {}
        self._groups: dict[str, _Group] = {}

    def run(self, stop: threading.Event) -> None:
        """Publish until ``stop`` is set (blocking)."""
        try:
            self.publisher.run(self._run(stop))
        finally:
            self.publisher.close()

    async def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            moved = 0
            for group_id in self.only or list_groups(self.stream_root):
                moved += await self._step(group_id)
            if not moved:
                await asyncio.sleep(self.poll_s)

    async def _step(self, group_id: str) -> int:
        status = self.status.setdefault(
            group_id, LiveStatus(group_id=group_id, acked=AckedPosition(group_id=group_id))
        )
        try:
            state = self._groups.get(group_id)
            if state is None:
                state = await self._prepare(group_id)
                if state is None:
                    return 0
            batch = state.reader.read()
            if not batch:
                return 0
            pub = self.publisher
            generation = state.reader.generation
            count, last_seq, stream_seq = await pub.send(
                group_id, generation, batch, state.expected_last
            )
        except (LcgError, OSError, Exception) as exc:  # noqa: BLE001 - the server may be away
            self._groups.pop(group_id, None)
            self._fail(status, f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(0.25)
            return 0
        state.expected_last = stream_seq
        status.acked = AckedPosition(
            group_id=group_id, generation=generation, seq=last_seq, stream_seq=stream_seq
        )
        status.published += count
        status.acked_at = time.time()
        status.error = None
        return len(batch)

    async def _prepare(self, group_id: str) -> _Group | None:
        src = self.stream_root / encode_group(group_id)
        generation = effective_generation(src)
        if generation is None:
            return None  # nothing written yet
        acked, last_stream_seq, _ = await self.publisher.prepare(
            group_id, generation, reset=self.reset
        )
        self.status[group_id].acked = acked
        state = _Group(LiveLines(src, generation, acked.seq), last_stream_seq)
        self._groups[group_id] = state
        return state

    def _fail(self, status: LiveStatus, error: str) -> None:
        if error != status.error:
            log.warning("publishing group %r: %s", status.group_id, error)
            if self.on_error is not None:
                self.on_error(status.group_id, error)
        status.error = error
