"""The JetStream transport's publisher: each group's stream carried as one message per line.

A target is ``nats://HOST:PORT[,HOST:PORT…][/PREFIX]`` (``PREFIX`` defaults to ``lcg``). Each
group has its own JetStream stream ``PREFIX_<encoded group>`` on the one subject
``PREFIX.<encoded group>``, file storage, ``--replicas`` copies (ADR 0190: a stream per group
so a publish can name the exact stream sequence it expects). Each message is one event line,
byte for byte as in the local stream (no newline), with headers:

* ``Nats-Msg-Id`` = ``<encoded group>:<generation>:<seq>`` – a republish after a crash is
  dropped by the server as a duplicate within its window (two minutes);
* ``Nats-Expected-Last-Sequence`` – the stream sequence the server must hold last, so a
  message is stored only right after its predecessor: a lost or refused publish can never be
  followed by its successor (no hole, no reordering), whatever the window of publishes in
  flight;
* ``Lcg-Generation``, ``Lcg-Seq``, ``Lcg-Group`` – what the follower checks the line against.

Where to resume is asked of the server, never remembered: the stream's last message names the
(generation, seq) the server holds, and publishing continues after it – so a publisher killed
between its local fsync and the publish, or between the publish and the acknowledgement,
republishes exactly what is missing. A stream of another generation is refused unless
``reset``, which purges it (sequence numbers go on) and publishes the new generation from
seq 0; followers then rebuild the group.

Lines are published only once durable: the segment a line was read from is fsynced by the
publisher itself before the line leaves (an ``fsync`` on a read-only descriptor flushes the
file), so a crash of the machine can never leave JetStream holding a line the local stream
lost. Nothing here touches the write path: the publisher reads the stream files as any reader
does (``events.segments``), in its own process.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import msgspec
import nats
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext, api
from nats.js.errors import NotFoundError

from lcg.errors import ConfigError, GenerationError, StreamError
from lcg.events import LineCheck, decode_group, encode_group, list_segments, segments_from
from lcg.replication.staging import StagedGroup
from lcg.replication.transport import PublishResult

__all__ = [
    "H_GENERATION",
    "H_GROUP",
    "H_SEQ",
    "AckedPosition",
    "JetStreamPublisher",
    "JetStreamTarget",
    "LiveLines",
]

_T = TypeVar("_T")

H_GENERATION = "Lcg-Generation"
H_SEQ = "Lcg-Seq"
H_GROUP = "Lcg-Group"
#: Publishes in flight at once: enough to fill a loopback round trip many times over.
WINDOW = 512
#: How long an acknowledgement may take before the publish is retried from the server's end.
ACK_TIMEOUT_S = 10.0


class JetStreamTarget(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed ``nats://HOST:PORT[/PREFIX]`` target."""

    servers: list[str]
    prefix: str = "lcg"

    @classmethod
    def parse(cls, target: str) -> JetStreamTarget:
        """Parse ``target``; ``ConfigError`` when it is no usable NATS URL."""
        parts = urlsplit(target)
        if parts.scheme not in ("nats", "tls") or not parts.netloc:
            raise ConfigError(f"{target!r} is not a nats://HOST:PORT[/PREFIX] target")
        prefix = parts.path.strip("/") or "lcg"
        if not all(c.isalnum() or c in "_-" for c in prefix):
            raise ConfigError(
                f"{target!r}: the stream prefix {prefix!r} may hold only letters, digits, _ and -"
            )
        hosts = [f"{parts.scheme}://{h}" for h in parts.netloc.split(",") if h]
        return cls(servers=hosts, prefix=prefix)

    @property
    def label(self) -> str:
        """The target as messages name it."""
        return f"{','.join(self.servers)}/{self.prefix}"

    def stream(self, group_id: str) -> str:
        """The JetStream stream that carries ``group_id``."""
        return f"{self.prefix}_{encode_group(group_id)}"

    def subject(self, group_id: str) -> str:
        """The one subject of ``group_id``'s stream."""
        return f"{self.prefix}.{encode_group(group_id)}"

    def group_of(self, stream_name: str) -> str | None:
        """The group a stream of this prefix carries, else ``None``."""
        head = f"{self.prefix}_"
        if not stream_name.startswith(head):
            return None
        return decode_group(stream_name[len(head) :])


def msg_id(group_id: str, generation: str, seq: int) -> str:
    """The ``Nats-Msg-Id`` of one line: the same line always gets the same id."""
    return f"{encode_group(group_id)}:{generation}:{seq}"


class AckedPosition(msgspec.Struct, kw_only=True):
    """What the server acknowledged for one group: its last (generation, seq) and stream seq."""

    group_id: str
    generation: str | None = None
    seq: int | None = None
    stream_seq: int = 0


def _header_int(headers: dict[str, str] | None, name: str) -> int | None:
    value = (headers or {}).get(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class LiveLines:
    """The complete, checked lines of one local stream past a seq, read incrementally.

    Each ``read`` continues where the last one ended (a segment and a byte offset), so a live
    publisher reads each line once. The segment is fsynced before its lines are handed out.
    """

    def __init__(self, src: Path, generation: str, after: int | None) -> None:
        self.src = src
        self.generation = generation
        self.check = LineCheck(generation)
        self.after = -1 if after is None else after
        self._segment: str | None = None
        self._offset = 0

    def read(self, limit: int = 4096) -> list[tuple[int, bytes]]:
        """Up to ``limit`` new (seq, line) pairs; ``StreamError`` at a line that fails its check."""
        out: list[tuple[int, bytes]] = []
        segments = list_segments(self.src)
        if self._segment is None:
            todo = segments_from(segments, self.after + 1)
        else:
            todo = [s for s in segments if s.path.name >= self._segment]
        for seg in todo:
            if seg.path.name != self._segment:
                self._segment, self._offset = seg.path.name, 0
            with seg.path.open("rb") as fh:
                fh.seek(self._offset)
                data = fh.read(64 * 1024 * 1024)
                end = data.rfind(b"\n") + 1
                if end:
                    # Durable before it leaves: this flushes whatever the writer has not yet.
                    os.fsync(fh.fileno())
            pos = 0
            while pos < end and len(out) < limit:
                nl = data.index(b"\n", pos)
                line = data[pos:nl]
                pos = nl + 1
                if line.strip():
                    seq = self._seq(line)
                    if seq > self.after:
                        if seq != self.after + 1:
                            raise StreamError(
                                f"the local stream of group {self.src.name!r} jumps from seq "
                                f"{self.after} to {seq}; refusing to publish past a gap"
                            )
                        out.append((seq, line))
                        self.after = seq
            self._offset += pos
            if len(out) >= limit or pos < end:
                break
        return out

    def _seq(self, line: bytes) -> int:
        checked = self.check.check(line)
        if checked.problem is not None or checked.event is None:
            raise StreamError(
                f"a line of group {self.src.name!r} (seq {checked.seq}) fails the line check "
                f"({checked.problem}: {checked.detail}); it is not published - `lcg wal "
                "verify` shows it"
            )
        return checked.event.seq


class JetStreamPublisher:
    """Publishes staged groups to JetStream (a ``Publisher``); one connection, its own loop."""

    def __init__(self, target: str, *, replicas: int = 1, timeout_s: float = 10.0) -> None:
        self.target = JetStreamTarget.parse(target)
        self.replicas = replicas
        self.timeout_s = timeout_s
        self._loop = asyncio.new_event_loop()
        self._nc: NatsClient | None = None
        #: What the server acknowledged, per group, after the last delivery.
        self.acked: dict[str, AckedPosition] = {}

    @property
    def label(self) -> str:
        """The target, as messages and results name it."""
        return self.target.label

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run a coroutine of this publisher on its loop (blocking)."""
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        """Close the connection and the loop."""
        if self._nc is not None:
            self.run(self._nc.close())
            self._nc = None
        self._loop.close()

    async def js(self) -> JetStreamContext:
        """The JetStream context (connecting first; reconnecting for ever once connected)."""
        if self._nc is None:
            try:
                self._nc = await nats.connect(
                    servers=self.target.servers,
                    connect_timeout=self.timeout_s,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=0.25,
                    allow_reconnect=True,
                )
            except Exception as exc:  # noqa: BLE001 - nats-py raises several unrelated types
                raise ConfigError(
                    f"cannot reach the NATS server at {self.label}: {exc}; start it with "
                    "`nats-server -js` (JetStream on) or fix --to"
                ) from None
        return self._nc.jetstream(timeout=self.timeout_s)

    # ---- the server's side -----------------------------------------------------------------

    async def ensure_stream(self, group_id: str) -> int:
        """Create the group's stream if missing; return the stream's last sequence."""
        js = await self.js()
        name = self.target.stream(group_id)
        try:
            info = await js.stream_info(name)
        except NotFoundError:
            config = api.StreamConfig(
                name=name,
                subjects=[self.target.subject(group_id)],
                storage=api.StorageType.FILE,
                num_replicas=self.replicas,
                duplicate_window=120.0,
                max_msg_size=-1,
                description=f"lcg group {group_id!r}: one message per event line",
            )
            info = await js.add_stream(config)
        last: int = info.state.last_seq
        return last

    async def acked_position(self, group_id: str) -> AckedPosition:
        """The (generation, seq) of the server's newest message for the group."""
        js = await self.js()
        pos = AckedPosition(group_id=group_id)
        try:
            msg = await js.get_last_msg(self.target.stream(group_id), self.target.subject(group_id))
        except NotFoundError:
            return pos
        pos.generation = (msg.headers or {}).get(H_GENERATION)
        pos.seq = _header_int(msg.headers, H_SEQ)
        pos.stream_seq = msg.seq or 0
        return pos

    async def published_groups(self) -> list[str]:
        """The groups that have a stream under this target's prefix."""
        js = await self.js()
        groups = []
        for info in await js.streams_info():
            group = self.target.group_of(info.config.name or "")
            if group is not None:
                groups.append(group)
        return sorted(groups)

    # ---- publishing ------------------------------------------------------------------------

    async def prepare(
        self, group_id: str, generation: str, *, reset: bool
    ) -> tuple[AckedPosition, int, str | None]:
        """Where publishing resumes: (acked position, the stream's last seq, the generation a
        reset replaced - ``None`` without one)."""
        last_stream_seq = await self.ensure_stream(group_id)
        acked = await self.acked_position(group_id)
        replaced: str | None = None
        if acked.generation is not None and acked.generation != generation:
            if not reset:
                raise GenerationError(
                    f"the JetStream stream of group {group_id!r} at {self.label} holds "
                    f"generation {acked.generation!r}, the stream being published has "
                    f"{generation!r} (it was dumped or replaced); pass --reset to replace the "
                    "publication - every replica will rebuild the group"
                )
            js = await self.js()
            await js.purge_stream(self.target.stream(group_id))
            replaced = acked.generation
            acked = AckedPosition(group_id=group_id, stream_seq=acked.stream_seq)
        return acked, last_stream_seq, replaced

    async def send(
        self,
        group_id: str,
        generation: str,
        lines: Iterator[tuple[int, bytes]] | list[tuple[int, bytes]],
        expected_last: int,
    ) -> tuple[int, int | None, int]:
        """Publish ``lines`` in order, ``WINDOW`` in flight; return (count, last seq, stream seq).

        Each message names the stream sequence it must follow, so when one fails every later
        one in flight fails too (``StreamError``): the caller asks the server where it stands.
        """
        js = await self.js()
        subject = self.target.subject(group_id)
        pending: list[tuple[int, asyncio.Future[api.PubAck]]] = []
        count, last_seq, stream_seq = 0, None, expected_last

        async def drain(keep: int) -> None:
            nonlocal count, last_seq, stream_seq
            while len(pending) > keep:
                seq, future = pending.pop(0)
                try:
                    ack = await asyncio.wait_for(future, ACK_TIMEOUT_S)
                except Exception as exc:  # noqa: BLE001 - timeouts and API errors alike
                    for _, rest in pending:
                        rest.cancel()
                    pending.clear()
                    raise StreamError(
                        f"JetStream did not store seq {seq} of group {group_id!r} ({exc!r})"
                    ) from None
                count += 0 if ack.duplicate else 1
                last_seq, stream_seq = seq, ack.seq

        for seq, line in lines:
            headers = {
                api.Header.MSG_ID: msg_id(group_id, generation, seq),
                api.Header.EXPECTED_LAST_SEQUENCE: str(expected_last),
                H_GENERATION: generation,
                H_SEQ: str(seq),
                H_GROUP: encode_group(group_id),
            }
            future = await js.publish_async(subject, line, headers=headers)
            pending.append((seq, future))
            expected_last += 1
            await drain(WINDOW)
        await drain(0)
        return count, last_seq, stream_seq

    async def deliver_async(self, staged: StagedGroup, *, reset: bool) -> PublishResult:
        """Publish what the server lacks of ``staged`` (the ``deliver`` of the protocol)."""
        group_id, generation = staged.group_id, staged.generation
        acked, last_stream_seq, replaced = await self.prepare(group_id, generation, reset=reset)
        result = PublishResult(
            group_id=group_id,
            repo=self.label,
            path=self.target.stream(group_id),
            generation=generation,
            previous_generation=replaced or acked.generation,
            reset=replaced is not None,
            max_seq=acked.seq,
        )
        reader = LiveLines(staged.src, generation, acked.seq)
        while True:
            batch = reader.read()
            if not batch:
                break
            count, last_seq, stream_seq = await self.send(
                group_id, generation, batch, last_stream_seq
            )
            result.files_copied += count
            result.bytes_copied += sum(len(line) for _, line in batch)
            last_stream_seq = stream_seq
            result.max_seq = last_seq
        result.committed = result.files_copied > 0
        result.commit = f"stream seq {last_stream_seq}" if result.committed else None
        self.acked[group_id] = await self.acked_position(group_id)
        return result

    def deliver(
        self, staged: StagedGroup, *, reset: bool = False, message: str | None = None
    ) -> PublishResult:
        """Carry ``staged`` to the server; refuse another generation there unless ``reset``."""
        del message  # a JetStream message per line carries no commit message
        result: PublishResult = self.run(self.deliver_async(staged, reset=reset))
        return result
