"""The wire's error codes and the exceptions a client raises for an answered error.

Codes follow JSON-RPC 2.0 where the spec defines one (-32700 parse, -32600 invalid request,
-32601 method not found, -32602 invalid params, -32603 internal); degraded mode is the
reference's -32001 with ``data: {reason}``; every other application error is -32000 with its
kind prefix (``configuration error: ``, ``database error: ``, ...). ``from_wire`` turns an
error object into a ``RemoteError`` subclass that is also the matching ``lcg.errors`` class,
so ``except DegradedError`` holds on both sides of the socket::

    LcgError
    ├── RemoteError                      (any error answered by the service)
    │   ├── RemoteDegradedError          (also DegradedError)
    │   ├── RemoteMethodNotFoundError    (also MethodNotFoundError)
    │   ├── RemoteInvalidParamsError     (also InvalidParamsError)
    │   ├── RemoteConfigError            (also ConfigError)
    │   ├── RemoteProjectionError        (also ProjectionError)
    │   └── RemoteGenerationError        (also GenerationError)
    └── TransportError                   (no answer: unreachable, hung up, unreadable)

How the service words its errors (the table from ``lcg.errors`` to codes) is the server's,
in ``lcg.rpc``.
"""

from __future__ import annotations

from typing import Any

from lcg import errors as E

__all__ = [
    "APPLICATION_ERROR",
    "DEGRADED",
    "DEGRADED_MESSAGE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RemoteConfigError",
    "RemoteDegradedError",
    "RemoteError",
    "RemoteGenerationError",
    "RemoteInvalidParamsError",
    "RemoteMethodNotFoundError",
    "RemoteProjectionError",
    "TransportError",
    "from_wire",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: The reference's code for every application error.
APPLICATION_ERROR = -32000
#: The reference's code for "no usable database" (and, here, a readiness timeout).
DEGRADED = -32001
DEGRADED_MESSAGE = "DB unavailable, recovery required"


class RemoteError(E.LcgError):
    """An error answered by the service: its JSON-RPC code, message and data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        """Keep the wire fields; ``str()`` is the message."""
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class RemoteDegradedError(RemoteError, E.DegradedError):
    """The service answered -32001: it has no usable projections (or is not ready)."""


class RemoteMethodNotFoundError(RemoteError, E.MethodNotFoundError):
    """The service answered -32601: no such method."""


class RemoteInvalidParamsError(RemoteError, E.InvalidParamsError):
    """The service answered -32602, or -32600 for a malformed request."""


class RemoteConfigError(RemoteError, E.ConfigError):
    """The service answered a ``configuration error: ...``."""


class RemoteProjectionError(RemoteError, E.ProjectionError):
    """The service answered a ``database error: ...``."""


class RemoteGenerationError(RemoteError, E.GenerationError):
    """The service answered ``WAL stream generation unknown: ...``."""


class TransportError(E.LcgError):
    """The service could not be reached, hung up mid-call, or sent something unreadable."""


_PREFIX_CLASSES: tuple[tuple[str, type[RemoteError]], ...] = (
    ("configuration error: ", RemoteConfigError),
    ("database error: ", RemoteProjectionError),
    ("WAL stream generation unknown: ", RemoteGenerationError),
)


def from_wire(code: int, message: str, data: Any = None) -> RemoteError:
    """The exception a client raises for an error object (a subclass per code or prefix)."""
    if code == DEGRADED:
        return RemoteDegradedError(code, message, data)
    if code == METHOD_NOT_FOUND:
        return RemoteMethodNotFoundError(code, message, data)
    if code in (INVALID_PARAMS, INVALID_REQUEST):
        return RemoteInvalidParamsError(code, message, data)
    for prefix, cls in _PREFIX_CLASSES:
        if message.startswith(prefix):
            return cls(code, message, data)
    return RemoteError(code, message, data)
