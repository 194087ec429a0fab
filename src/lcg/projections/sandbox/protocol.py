"""The messages between the service and its Cypher worker, one msgpack frame each.

A frame is a 4-byte big-endian length and that many bytes of msgpack, over the worker's
stdin (requests) and stdout (replies). The worker says ``Hello`` once it has imported
everything, then waits for ``Open``: a spare worker started ahead of need is promoted by
that message, so a replacement for a killed worker costs a database open, not an interpreter
start (ADR 0152).
"""

from __future__ import annotations

import os
import struct
from typing import Final

import msgspec

__all__ = [
    "Answer",
    "Hello",
    "Open",
    "Opened",
    "Reply",
    "Request",
    "Running",
    "Target",
    "decode_reply",
    "decode_request",
    "encode",
    "read_frame",
]

_LEN: Final = struct.Struct(">I")
#: No reply is larger (``LCG_CYPHER_MAX_ROWS`` rows of strings fit well below it).
MAX_FRAME: Final = 1 << 31


class Target(msgspec.Struct, frozen=True, array_like=True):
    """What the service's graph has applied of one group: the read model must match it."""

    generation: str
    seq: int
    #: The last seq ``knowledge_clear_all`` with ``preserve_wal`` left out (-1: none).
    floor: int = -1


class Open(msgspec.Struct, tag=True):
    """Open (or create) the read model at ``db_dir``, fed from the streams at ``wal_dir``."""

    db_dir: str
    wal_dir: str
    memory_mb: int
    threads: int
    buffer_pool_mb: int


class Request(msgspec.Struct, tag=True):
    """Catch up with ``targets`` (rebuilding ``dirty`` groups), then run ``query`` if any.

    ``deadline`` is on ``time.monotonic()`` (one clock for every process on Linux); a
    request whose catch-up ends past it is answered ``expired`` without running.
    """

    id: int
    targets: dict[str, Target]
    dirty: list[str]
    query: str | None
    timeout_ms: int
    max_rows: int
    deadline: float


class Hello(msgspec.Struct, tag=True):
    """The worker is loaded and waits for ``Open``."""

    pid: int


class Opened(msgspec.Struct, tag=True):
    """The read model is open (``error`` if it could not be; the worker then exits)."""

    rss_kb: int
    error: str | None = None


class Running(msgspec.Struct, tag=True):
    """The catch-up of request ``id`` is done and its query runs now."""

    id: int


class Answer(msgspec.Struct, tag=True):
    """The end of request ``id``: rows, or the error text, or ``expired``."""

    id: int
    rows: list[list[str]] | None = None
    error: str | None = None
    expired: bool = False
    rss_kb: int = 0


Reply = Hello | Opened | Running | Answer

_encoder = msgspec.msgpack.Encoder()
_reply_decoder = msgspec.msgpack.Decoder(Reply)
_request_decoder = msgspec.msgpack.Decoder(Open | Request)


def encode(message: msgspec.Struct) -> bytes:
    """``message`` as one frame."""
    body = _encoder.encode(message)
    return _LEN.pack(len(body)) + body


def decode_reply(body: bytes) -> Reply:
    """A worker's reply."""
    reply: Reply = _reply_decoder.decode(body)
    return reply


def decode_request(body: bytes) -> Open | Request:
    """A service's request."""
    request: Open | Request = _request_decoder.decode(body)
    return request


def read_frame(fd: int) -> bytes | None:
    """One whole frame's body from a blocking ``fd``; ``None`` at end of file."""
    head = _read_exactly(fd, _LEN.size)
    if head is None:
        return None
    (size,) = _LEN.unpack(head)
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes is over the limit")
    return _read_exactly(fd, size)


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)
