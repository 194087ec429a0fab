"""The client's side of the JSON-RPC line protocol: one request line out, progress lines and
one answer line in.

A request is one JSON object and ``\\n``; a streaming call adds ``_progress_token`` to its
params and gets bare ``{"type": "progress", ...}`` lines (no ``jsonrpc`` member) before its
answer. An answer's error object becomes the ``RemoteError`` subclass ``from_wire`` picks; a
line that is no answer to the call is a ``TransportError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from lcg.client.errors import (
    DEGRADED,
    DEGRADED_MESSAGE,
    RemoteDegradedError,
    TransportError,
    from_wire,
)

__all__ = [
    "LINE_LIMIT",
    "answer",
    "decode_line",
    "health_verdict",
    "is_progress",
    "request_line",
]

#: The longest *response* line a client of the service reads (this client, attached MCP);
#: requests are bounded by the server's ``Limits.max_request_bytes`` instead.
LINE_LIMIT = 64 * 1024 * 1024

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()

#: A line's JSON value (raises ``msgspec.DecodeError`` on a line that is not JSON).
decode_line = _decoder.decode


def request_line(rid: int, method: str, params: Mapping[str, Any] | None, stream: bool) -> bytes:
    """The request line for call ``rid``; ``stream`` asks for progress lines."""
    body = dict(params or {})
    if stream:
        body.setdefault("_progress_token", True)
    return _encoder.encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": body}) + b"\n"


def is_progress(msg: Any) -> bool:
    """Whether a decoded line is a progress frame (not the answer)."""
    return isinstance(msg, dict) and msg.get("type") == "progress" and "jsonrpc" not in msg


def answer(msg: Any, rid: int) -> Any:
    """The result of the answer ``msg`` to call ``rid``; raises the error it carries."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        raise TransportError(f"unexpected line from the service: {msg!r:.200}")
    err = msg.get("error")
    # An error with id null answers what the service could not attribute to a request
    # (a line too long or unfinished, a connection given up mid-line): it answers this call too.
    if msg.get("id") != rid and not (msg.get("id") is None and err is not None):
        raise TransportError(f"answer for id {msg.get('id')!r} while waiting for id {rid}")
    if err is not None:
        if not isinstance(err, dict):
            raise TransportError(f"malformed error object: {err!r:.200}")
        raise from_wire(int(err.get("code", -32000)), str(err.get("message", "")), err.get("data"))
    return msg.get("result")


def health_verdict(result: Any) -> bool:
    """True when a ``health_check`` result says healthy; raises when degraded; False while
    the service is still initializing."""
    if not isinstance(result, dict):
        raise TransportError(f"health_check answered {result!r:.200}")
    state = result.get("state")
    if state == "healthy" or (state is None and result.get("healthy") is True):
        return True
    if state == "degraded":
        reason = result.get("reason")
        raise RemoteDegradedError(DEGRADED, DEGRADED_MESSAGE, {"reason": reason})
    return False
