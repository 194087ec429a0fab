"""Progress frames: the bare ``{"type": "progress", ...}`` lines a streaming call writes.

A handler builds a frame (a msgspec ``Struct``, or a plain mapping) and awaits
``ctx.progress(frame)``; the transport turns it into a socket line or an MCP progress
notification. Frames never carry a JSON-RPC envelope: a client tells them from the final
response by ``"type": "progress"`` and the absence of ``"jsonrpc"``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

__all__ = [
    "ClientGone",
    "Frame",
    "MessageFrame",
    "PassFrame",
    "ProgressFn",
    "encode_frame",
    "frame_fields",
    "frame_message",
]


#: Receives one progress frame (as a JSON object) of a streaming call (MCP's backends).
ProgressFn = Callable[[dict[str, Any]], Awaitable[None]]


class ClientGone(Exception):
    """The client disconnected while a call was streaming; the call is aborted unanswered."""


class MessageFrame(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A free-text progress frame (the reference's rebuild frames)."""

    message: str
    mutations_replayed: int | None = None
    wal_files_processed: int | None = None
    wal_files_total: int | None = None


class PassFrame(msgspec.Struct, kw_only=True):
    """A counted progress frame of a long pass (canonicalize, backfill, reprocess)."""

    phase: str
    processed: int
    total: int
    total_mutations: int = 0


#: What a handler may hand to ``ctx.progress``.
Frame = msgspec.Struct | Mapping[str, Any]

_encoder = msgspec.json.Encoder()


def frame_fields(frame: Frame) -> dict[str, Any]:
    """The frame as a JSON object whose first key is ``type: "progress"``."""
    body = msgspec.to_builtins(frame) if isinstance(frame, msgspec.Struct) else dict(frame)
    if not isinstance(body, dict):
        raise TypeError(f"a progress frame must encode to an object, not {type(body).__name__}")
    body.pop("type", None)
    return {"type": "progress", **body}


def encode_frame(frame: Frame) -> bytes:
    """One progress line, newline included."""
    return _encoder.encode(frame_fields(frame)) + b"\n"


def frame_message(frame: Frame) -> str | None:
    """The frame's ``message`` when it has a string one (copied into MCP notifications)."""
    value = frame_fields(frame).get("message")
    return value if isinstance(value, str) else None
