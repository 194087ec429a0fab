"""The messages between the service and its Cypher worker: one msgpack message per
``send_bytes`` on their pipe. The worker says ``Hello`` once it has started, then waits for
``Open``; each ``Request`` is answered by ``Answer``, after ``CatchingUp`` and ``Running``
when the read model had to apply events first (a query already caught up costs one message
each way).
"""

from __future__ import annotations

import msgspec

__all__ = [
    "Answer",
    "CatchingUp",
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
]


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
    #: The result's bytes of values at most (``LCG_CYPHER_MAX_BYTES``), counted as it is built.
    max_bytes: int
    deadline: float


class Hello(msgspec.Struct, tag=True):
    """The worker is loaded and waits for ``Open``."""

    pid: int


class Opened(msgspec.Struct, tag=True):
    """The read model is open (``error`` if it could not be; the worker then exits)."""

    rss_kb: int
    error: str | None = None


class CatchingUp(msgspec.Struct, tag=True):
    """Request ``id`` has to apply events (or rebuild groups) before its query runs."""

    id: int


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


Reply = Hello | Opened | CatchingUp | Running | Answer

_encoder = msgspec.msgpack.Encoder()
_reply_decoder = msgspec.msgpack.Decoder(Reply)
_request_decoder = msgspec.msgpack.Decoder(Open | Request)


def encode(message: msgspec.Struct) -> bytes:
    """``message`` as bytes."""
    return _encoder.encode(message)


def decode_reply(body: bytes) -> Reply:
    """A worker's reply."""
    reply: Reply = _reply_decoder.decode(body)
    return reply


def decode_request(body: bytes) -> Open | Request:
    """A service's request."""
    request: Open | Request = _request_decoder.decode(body)
    return request
