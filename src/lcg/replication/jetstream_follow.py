"""The JetStream transport's follower side: a puller that mirrors verified messages into a
local directory of group streams, and that directory read as the follower's ``Source``.

``JetStreamPuller`` (a ``Puller``) reads each group's JetStream stream (``replication.jetstream``
names them) with an ephemeral pull consumer and appends each message's line to
``<replica>/.lcg/nats-mirror/<prefix>/<encoded group>/`` only after checking it: its headers
name a generation and a seq, the line passes the one line check (``events.linecheck``: CRC
checksum, decode, checksum order, generation) and carries the header's seq, and that seq is the
mirror's next. Lines are fsynced before the consumer's position moves past them.

* **Where to start** is the mirror's own last line, never the server's memory of a consumer:
  the consumer is created at the stream sequence after the mirror's last message (kept as a
  hint in ``.positions/``) and re-created after any disconnection from the same place, so a
  SIGKILLed follower resumes with no gap and no duplicate (a message already held is dropped
  by its seq, never applied twice).
* **A generation change** is a reset: a message of another generation with seq 0 replaces the
  mirror's group directory with the new stream; the follower (``replication.follow``) sees the
  new generation and rebuilds the group, as for git.
* **A bad message** (checksum, decode, headers that disagree with the line) or **a gap** (a
  seq past the next, seen again from a fresh consumer) stops that group with the reason: the
  line is never written, so it is never applied, and nothing after it is skipped to. The
  ``MirrorSource`` hands the reason to the follower, which shows it in
  ``knowledge_replica_status``; the puller looks again every few seconds (a republish heals).
* **Messages the NATS client dropped** (a slow consumer: the subscription's buffer of
  ``pending_bytes`` filled faster than the mirror wrote, and the client threw messages away
  and said so through its error callback) are no gap in the stream: the group is neither
  stopped nor said to have a "seq gap"; a warning names the drop and the consumer is made
  again from the mirror's last written line, which a message already held never passes
  (ADR 0195).

The follower then applies the mirror exactly as it applies a git clone (``TreeSource``): every
rule of what is applied, reset or stopped stays the follower's. ``MirrorSource.tail`` answers
with the server's newest (seq, ts), so the lag counts what is on the server and not yet here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import msgspec
import nats
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.errors import NotFoundError

from lcg import timestamps
from lcg.events import (
    LineCheck,
    ReadLimits,
    TailDefect,
    atomic_write,
    decode_line,
    encode_group,
    fsync_dir,
    list_segments,
    read_generation,
    read_tail,
    remove_tree,
    segment_name,
    write_generation,
)
from lcg.replication.jetstream import H_GENERATION, H_SEQ, JetStreamTarget
from lcg.replication.transport import SourceTail
from lcg.replication.tree import TreeSource

__all__ = ["JetStreamPuller", "MirrorSource", "mirror_root"]

log = logging.getLogger(__name__)

#: A mirror segment is closed and a new one started past this size.
SEGMENT_BYTES = 64 * 1024 * 1024
#: Messages asked for per fetch.
BATCH = 1024
#: How often a stopped group is looked at again, and the group list refreshed.
RECHECK_S = 3.0
#: What a group's subscription may buffer before the NATS client drops messages (nats-py's
#: default for JetStream subscriptions).
PENDING_BYTES = 256 * 1024 * 1024
POSITIONS_DIR = ".positions"


def mirror_root(workspace: Path, target: JetStreamTarget) -> Path:
    """Where a replica workspace mirrors ``target``'s group streams."""
    return workspace / ".lcg" / "nats-mirror" / target.prefix


class _Position(msgspec.Struct, kw_only=True):
    """``.positions/<group>.json``: the stream sequence of the mirror's last line (a hint)."""

    generation: str
    seq: int
    stream_seq: int


class _Restart(Exception):
    """Re-create the consumer: from the hint, or from the stream's first message."""

    def __init__(self, from_start: bool) -> None:
        super().__init__("restart")
        self.from_start = from_start


class _Group:
    """One followed group's mirror: its generation, next seq, open segment, verdict, lag."""

    def __init__(self, group_id: str, root: Path) -> None:
        self.group_id = group_id
        self.root = root
        self.gdir = root / encode_group(group_id)
        self.generation = read_generation(self.gdir) if self.gdir.is_dir() else None
        self.check = LineCheck(self.generation)
        self.next_seq = 0
        self.segment: Path | None = None
        segments = list_segments(self.gdir)
        if segments:
            self.segment = segments[-1].path
            tail = read_tail(self.segment)
            if tail.last_line is not None:
                seq = decode_line(tail.last_line).seq
                self.next_seq = (seq or 0) + 1
                self.check.checksummed = decode_line(tail.last_line).checksummed
        self.stream_seq = self._hint()
        self.stopped: str | None = None
        self.rechecked = False
        #: Messages the NATS client dropped (slow consumer) since the consumer was made.
        self.dropped = 0
        #: The server's newest (seq, ts) as the last fetch saw it.
        self.server_seq: int | None = None
        self.server_ts: str | None = None
        self._fh: BinaryIO | None = None

    def _position_path(self) -> Path:
        return self.root / POSITIONS_DIR / f"{encode_group(self.group_id)}.json"

    def _hint(self) -> int:
        try:
            pos = msgspec.json.decode(self._position_path().read_bytes(), type=_Position)
        except (OSError, ValueError):
            return 0
        # A hint past what the mirror holds would skip lines: trust it only when it matches.
        if pos.generation != self.generation or pos.seq != self.next_seq - 1:
            return 0
        return pos.stream_seq

    def save_hint(self) -> None:
        if self.generation is None or self.next_seq == 0:
            return
        path = self._position_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        pos = _Position(
            generation=self.generation, seq=self.next_seq - 1, stream_seq=self.stream_seq
        )
        atomic_write(path, msgspec.json.encode(pos), durable=False)

    def reset(self, generation: str) -> None:
        """Replace the mirror's group directory by an empty stream of ``generation``."""
        self.close()
        if self.gdir.exists():
            remove_tree(self.gdir)
        self.gdir.mkdir(parents=True)
        write_generation(self.gdir, generation)
        self.generation = generation
        self.check = LineCheck(generation)
        self.next_seq = 0
        self.segment = None

    def append(self, lines: list[bytes], first_seq: int) -> None:
        """Append checked lines and fsync them (a new segment past ``SEGMENT_BYTES``)."""
        if self._fh is None or self.segment is None or self.segment.stat().st_size > SEGMENT_BYTES:
            self.close()
            if self.segment is None or self.segment.stat().st_size > SEGMENT_BYTES:
                self.segment = self.gdir / segment_name(first_seq)
            self._fh = self.segment.open("ab")
            fsync_dir(self.gdir)
        self._fh.write(b"".join(line + b"\n" for line in lines))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class JetStreamPuller:
    """Mirrors a JetStream target's group streams into ``root``, checked (a ``Puller``)."""

    def __init__(
        self,
        target: str,
        root: Path,
        groups: Sequence[str] | None = None,
        *,
        timeout_s: float = 5,
        pending_bytes: int = PENDING_BYTES,
    ) -> None:
        self.target = JetStreamTarget.parse(target)
        self.root = root
        self.only = list(groups) if groups else None
        self.timeout_s = timeout_s
        self.pending_bytes = pending_bytes
        self.groups: dict[str, _Group] = {}
        #: The group each subscription subject carries (for the NATS client's error callback).
        self._by_subject: dict[str, _Group] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name="lcg-nats-pull", daemon=True)
        self.connected = False

    # ---- what the source asks ----------------------------------------------------------------

    def stopped(self, group_id: str) -> str | None:
        """Why the puller stopped ``group_id`` (``None``: it is not stopped)."""
        group = self.groups.get(group_id)
        return group.stopped if group is not None else None

    def server_tail(self, group_id: str) -> SourceTail | None:
        """The server's newest (seq, ts) for the group, as last seen (``None``: not yet)."""
        group = self.groups.get(group_id)
        if group is None or group.server_seq is None:
            return None
        return SourceTail(seq=group.server_seq, ts=group.server_ts)

    # ---- the thread --------------------------------------------------------------------------

    def start(self) -> None:
        """Pull in a background thread until ``stop``."""
        self.root.mkdir(parents=True, exist_ok=True)
        for group_id in self.only or []:
            self._group(group_id)
        self._thread.start()

    def stop(self) -> None:
        """Stop pulling and wait for the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=15)

    def _group(self, group_id: str) -> _Group:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = _Group(group_id, self.root)
        return group

    def _main(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        nc: NatsClient | None = None
        while nc is None and not self._stop.is_set():
            try:
                nc = await nats.connect(
                    servers=self.target.servers,
                    connect_timeout=self.timeout_s,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=0.25,
                    error_cb=self._on_error,
                )
            except Exception as exc:  # noqa: BLE001 - the server may come later
                log.warning("cannot reach NATS at %s (%s); retrying", self.target.label, exc)
                await asyncio.sleep(1.0)
        if nc is None:
            return
        self.connected = True
        js = nc.jetstream(timeout=self.timeout_s)
        tasks: dict[str, asyncio.Task[None]] = {}
        try:
            while not self._stop.is_set():
                for group_id in await self._list_groups(js):
                    if group_id not in tasks:
                        group = self._group(group_id)
                        tasks[group_id] = asyncio.create_task(self._follow(js, group))
                await asyncio.sleep(RECHECK_S if self.only is None else 0.5)
        finally:
            for task in tasks.values():
                task.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
            for group in self.groups.values():
                group.close()
            await nc.close()

    async def _on_error(self, exc: Exception) -> None:
        """The NATS client's error callback: a slow consumer's drop is counted on its group
        (``_take`` and ``_consume`` then resume from the last written line)."""
        if isinstance(exc, nats.errors.SlowConsumerError):
            group = self._by_subject.get(exc.subject)
            if group is not None:
                group.dropped += 1
                return
        log.debug("NATS client at %s: %r", self.target.label, exc)

    async def _list_groups(self, js: JetStreamContext) -> list[str]:
        if self.only is not None:
            return self.only
        try:
            infos = await js.streams_info()
        except Exception as exc:  # noqa: BLE001 - listed again next round
            log.debug("listing streams at %s failed: %s", self.target.label, exc)
            return list(self.groups)
        found = [self.target.group_of(i.config.name or "") for i in infos]
        return sorted({g for g in found if g is not None} | set(self.groups))

    async def _follow(self, js: JetStreamContext, group: _Group) -> None:
        from_start = group.stream_seq == 0
        while not self._stop.is_set():
            if group.stopped is not None:
                # Looked at again from a fresh consumer: a republish (--reset) heals it.
                await asyncio.sleep(RECHECK_S)
                group.rechecked = True
            try:
                await self._consume(js, group, from_start)
            except _Restart as restart:
                from_start = restart.from_start
            except NotFoundError:
                await asyncio.sleep(0.5)  # no stream for the group yet
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a server away, a consumer lost
                log.debug("consumer of %r at %s: %r; again", group.group_id, self.target.label, exc)
                await asyncio.sleep(0.25)

    async def _consume(self, js: JetStreamContext, group: _Group, from_start: bool) -> None:
        start = 1 if from_start else group.stream_seq + 1
        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start,
            ack_policy=api.AckPolicy.NONE,
            inactive_threshold=30.0,
            mem_storage=True,
            num_replicas=1,
        )
        subject = self.target.subject(group.group_id)
        self._by_subject[subject] = group
        group.dropped = 0
        sub = await js.pull_subscribe(
            subject,
            stream=self.target.stream(group.group_id),
            config=config,
            pending_bytes_limit=self.pending_bytes,
        )
        try:
            while not self._stop.is_set():
                try:
                    msgs = await sub.fetch(BATCH, timeout=1.0)
                except nats.errors.TimeoutError:
                    msgs = []
                if msgs:
                    self._take(group, msgs, from_start)
                if group.dropped:
                    # Dropped after the last message taken (the tail of a fetch): this
                    # consumer will not send them again.
                    self._resume_after_drop(group, group.next_seq)
        finally:
            try:
                await sub.unsubscribe()
            except Exception:  # noqa: BLE001 - the consumer expires by itself
                pass

    def _take(self, group: _Group, msgs: list[Msg], from_start: bool) -> None:
        """Check ``msgs`` in order and append the good prefix; stop or restart at a defect."""
        lines: list[bytes] = []
        # ``group.next_seq`` says what the mirror holds, which another thread may read: it
        # moves to ``upto`` only once the lines before it are written (``_flush``).
        first = upto = group.next_seq
        last_stream_seq = group.stream_seq
        try:
            for msg in msgs:
                meta = msg.metadata
                headers = msg.headers or {}
                where = (
                    f"stream {self.target.stream(group.group_id)} message {meta.sequence.stream}"
                )
                gen = headers.get(H_GENERATION)
                try:
                    seq = int(headers.get(H_SEQ, ""))
                except ValueError:
                    raise TailDefect(f"{where} has no {H_SEQ} header") from None
                if not gen:
                    raise TailDefect(f"{where} has no {H_GENERATION} header")
                group.server_seq = seq + meta.num_pending
                # The newest line's own ts when this is it, else when the server stored this one.
                group.server_ts = timestamps.to_text(meta.timestamp)
                if gen != group.generation:
                    if seq != 0:
                        if not from_start:
                            raise _Restart(from_start=True)
                        raise TailDefect(
                            f"{where}: generation {gen} starts at seq {seq} on the server "
                            f"(this replica holds {group.generation}); its head is missing"
                        )
                    self._flush(group, lines, first, last_stream_seq, upto)
                    lines = []
                    group.reset(gen)
                    first = upto = 0
                if seq < upto:
                    last_stream_seq = meta.sequence.stream
                    continue  # held already (a redelivery): never applied twice
                if seq > upto and group.dropped:
                    self._resume_after_drop(group, upto)
                if seq > upto:
                    if not group.rechecked:
                        group.rechecked = True
                        raise _Restart(from_start=False)
                    raise TailDefect(
                        f"seq gap in group {group.group_id!r}: {where} carries seq {seq}, the "
                        f"next is {upto}; the replica stops rather than skip"
                    )
                checked = group.check.check(msg.data)
                if checked.problem is not None or checked.event is None:
                    raise TailDefect(
                        f"{where} (seq {seq}) fails the line check: {checked.problem}: "
                        f"{checked.detail}; never applied"
                    )
                if checked.event.seq != seq:
                    raise TailDefect(
                        f"{where}: the line carries seq {checked.event.seq}, its header {seq}"
                    )
                if meta.num_pending == 0:
                    group.server_ts = checked.event.ts
                lines.append(msg.data)
                upto = seq + 1
                last_stream_seq = meta.sequence.stream
            group.rechecked = False
            group.stopped = None
        except TailDefect as defect:
            if group.stopped != str(defect):
                log.warning("JetStream follower: %s", defect)
            group.stopped = str(defect)
        finally:
            self._flush(group, lines, first, last_stream_seq, upto)
        if group.stopped is not None:
            raise _Restart(from_start=False)

    def _resume_after_drop(self, group: _Group, upto: int) -> None:
        """Messages the NATS client dropped are not a gap: say so and make the consumer again
        from the mirror's last written line (``_Restart``)."""
        dropped, group.dropped = group.dropped, 0
        log.warning(
            "JetStream follower: the NATS client dropped %d message(s) of group %r (slow "
            "consumer: its subscription buffered more than %d bytes before the mirror wrote "
            "them); not a gap in the stream: resuming from seq %d, the mirror's next. If it "
            "recurs, the replica's disk or CPU is slower than the publisher",
            dropped,
            group.group_id,
            self.pending_bytes,
            upto,
        )
        raise _Restart(from_start=False)

    def _flush(
        self, group: _Group, lines: list[bytes], first: int, stream_seq: int, upto: int
    ) -> None:
        vanished = bool(lines) and group.generation is not None and not group.gdir.is_dir()
        if vanished:
            # The mirror's directory went away under us: it starts again, empty, so what it
            # holds is not ``upto``; the next message is past it, a gap the group stops on.
            assert group.generation is not None
            group.reset(group.generation)
        if lines:
            group.append(lines, first)
        if not vanished:
            group.next_seq = upto
        group.stream_seq = stream_seq
        group.save_hint()


class MirrorSource(TreeSource):
    """The mirror read as a publication; a group the puller stopped is a defect of its own."""

    def __init__(self, puller: JetStreamPuller, *, limits: ReadLimits | None = None) -> None:
        super().__init__(puller.root, limits=limits, label=puller.target.label)
        self.puller = puller

    def generation(self, group_id: str) -> str | None:
        """The group's generation in the mirror, unless the puller stopped the group."""
        reason = self.puller.stopped(group_id)
        if reason is not None:
            raise TailDefect(reason)
        return super().generation(group_id)

    def tail(self, group_id: str) -> SourceTail:
        """The server's newest (seq, ts) for the group: the lag counts what is not here yet."""
        return self.puller.server_tail(group_id) or super().tail(group_id)
