"""JSON-RPC 2.0 envelopes: parse one request value, encode responses.

Parsing is deliberately hand-checked rather than a typed msgspec decode: every way a value
can fail to be a request has its own -32600 text, and the id must be echoed whenever it is
readable. Responses are msgspec Structs, so results (Structs or mappings) encode in one pass.

A line that does not decode is still answered (``undecodable``): JSON whose only fault is a
lone UTF-16 surrogate escape (``"\\ud800"``: no UTF-8 text holds one) gets -32602 with the
request's own id and where the string is; anything else -32700 with ``id: null``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgspec

from lcg.rpc.errors import INVALID_PARAMS, WireError, invalid_request, parse_error

__all__ = [
    "NO_ID",
    "ErrorBody",
    "ErrorResponse",
    "Invalid",
    "Request",
    "SuccessResponse",
    "decode_line",
    "encode_error",
    "failure",
    "lone_surrogate_at",
    "parse_request",
    "success",
    "undecodable",
]

#: Marker for "the request had no ``id`` member" (a notification), unlike ``id: null``.
NO_ID: Any = msgspec.UNSET

Id = str | int | None


class ErrorBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The ``error`` member of a response."""

    code: int
    message: str
    data: Any = msgspec.UNSET


class SuccessResponse(msgspec.Struct, kw_only=True):
    """``{"jsonrpc": "2.0", "id": ..., "result": ...}``."""

    jsonrpc: str = "2.0"
    id: Id
    result: Any


class ErrorResponse(msgspec.Struct, kw_only=True):
    """``{"jsonrpc": "2.0", "id": ..., "error": {...}}``."""

    jsonrpc: str = "2.0"
    id: Id
    error: ErrorBody


@dataclass(frozen=True, slots=True)
class Request:
    """A well-formed request; ``id`` is ``NO_ID`` for a notification."""

    method: str
    params: dict[str, Any]
    id: Any

    @property
    def is_notification(self) -> bool:
        """True when the request has no ``id`` member and so gets no response."""
        return self.id is NO_ID


@dataclass(frozen=True, slots=True)
class Invalid:
    """A value that is not a valid request: the error to answer, and the id to answer with."""

    error: WireError
    id: Id
    #: A notification-shaped value whose params are bad gets no answer either.
    silent: bool = False


_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


def decode_line(line: bytes) -> Any:
    """Decode one line of JSON; raises ``msgspec.DecodeError``."""
    return _decoder.decode(line)


def _has_lone_surrogate(text: str) -> bool:
    # Decoded JSON holds a surrogate code point only where an escape stood alone; a pair
    # decodes to one astral character.
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def lone_surrogate_at(value: Any, path: str = "") -> str | None:
    """Where in a decoded value a string (or key) holds a lone surrogate, as ``a.b[2]``;
    ``None`` if none does."""
    if isinstance(value, str):
        return path or "the value" if _has_lone_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if _has_lone_surrogate(str(key)):
                return ascii(where)[1:-1] + " (a key)"
            found = lone_surrogate_at(item, where)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = lone_surrogate_at(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def undecodable(line: bytes | str, exc: Exception) -> tuple[Id, WireError]:
    """The id and error that answer a line msgspec could not decode (raising ``exc``).

    msgspec refuses a lone surrogate escape, with a misleading "truncated"; Python's own
    parser reads it, so the request's id can be echoed and the string named. A line that is
    not JSON for any other reason is -32700 with ``id: null``.
    """
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None, parse_error(str(exc))
    where = lone_surrogate_at(value)
    if where is None:  # JSON only to Python's parser (NaN, Infinity): not JSON
        return None, parse_error(str(exc))
    rid = value.get("id") if isinstance(value, dict) else None
    return (
        rid if _valid_id(rid) else None,
        WireError(
            INVALID_PARAMS,
            f"Invalid params: {where} holds a lone UTF-16 surrogate escape (\\ud800-\\udfff "
            "without its pair), which is not Unicode text; escape a character outside the "
            "BMP as a pair, or send it as UTF-8",
        ),
    )


def _valid_id(value: Any) -> bool:
    # bool is an int in Python but not a JSON-RPC id; fractional numbers are refused too.
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int) and not isinstance(value, bool))
    )


def parse_request(value: Any) -> Request | Invalid:
    """Check one decoded value against the JSON-RPC 2.0 request rules."""
    if not isinstance(value, dict):
        return Invalid(invalid_request(f"expected an object, got {_kind(value)}"), None)
    has_id = "id" in value
    if not has_id:
        # The reference's parser requires ``id`` (§1.1) and answers its absence; a silent
        # notification would leave a client written for it waiting forever.
        return Invalid(
            invalid_request('"id" is required: every request is answered (no notifications)'),
            None,
        )
    raw_id = value.get("id")
    if not _valid_id(raw_id):
        return Invalid(invalid_request("id must be a string, an integer or null"), None)
    rid: Id = raw_id if has_id else None
    if value.get("jsonrpc") != "2.0":
        return Invalid(invalid_request('"jsonrpc" must be exactly "2.0"'), rid)
    method = value.get("method")
    if not isinstance(method, str):
        return Invalid(invalid_request('"method" must be a string'), rid)
    params = value.get("params")
    if params is None:
        # Omitted (or null) params mean {}: more lenient than the reference, which needs them.
        params = {}
    elif not isinstance(params, dict):
        err = WireError(-32602, "params must be an object (by-name parameters only)")
        return Invalid(err, rid, silent=not has_id)
    return Request(method=method, params=params, id=raw_id if has_id else NO_ID)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def encode_error(rid: Id, error: WireError) -> bytes:
    """An error response line, newline included."""
    return _encoder.encode(_error_response(rid, error)) + b"\n"


def _error_response(rid: Id, error: WireError) -> ErrorResponse:
    data = msgspec.UNSET if error.data is None else error.data
    return ErrorResponse(id=rid, error=ErrorBody(code=error.code, message=error.message, data=data))


def success(rid: Id, result: Any) -> SuccessResponse:
    """A success response Struct."""
    return SuccessResponse(id=rid, result=result)


def failure(rid: Id, error: WireError) -> ErrorResponse:
    """An error response Struct."""
    return _error_response(rid, error)
