"""One table from lcg's errors to JSON-RPC error objects (``lcg.client`` reads them back).

Codes follow JSON-RPC 2.0 where the spec defines one (-32700 parse, -32600 invalid request,
-32601 method not found, -32602 invalid params, -32603 internal); degraded mode is the
reference's -32001 with ``data: {reason}``; every other ``LcgError`` is the reference's
-32000 with its kind prefix (``IPC error: ``, ``database error: ``, ...). A unit test fails
when a class of ``lcg.errors`` has no row here. The codes and the client's exceptions
(``RemoteError``, ``TransportError``, ``from_wire``) live in the light ``lcg.client`` and are
named here too, for the server's modules.
"""

from __future__ import annotations

import errno
import logging
import os
from dataclasses import dataclass
from typing import Any

from lcg import errors as E
from lcg.client import (
    APPLICATION_ERROR,
    DEGRADED,
    DEGRADED_MESSAGE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RemoteConfigError,
    RemoteDegradedError,
    RemoteError,
    RemoteGenerationError,
    RemoteInvalidParamsError,
    RemoteMethodNotFoundError,
    RemoteProjectionError,
    TransportError,
    from_wire,
)

__all__ = [
    "APPLICATION_ERROR",
    "DEGRADED",
    "DEGRADED_MESSAGE",
    "ERROR_TABLE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "ErrorRule",
    "RemoteConfigError",
    "RemoteDegradedError",
    "RemoteError",
    "RemoteGenerationError",
    "RemoteInvalidParamsError",
    "RemoteMethodNotFoundError",
    "RemoteProjectionError",
    "TransportError",
    "WireError",
    "from_wire",
    "invalid_request",
    "os_error_message",
    "parse_error",
    "to_wire",
]

log = logging.getLogger("lcg.rpc")


@dataclass(frozen=True, slots=True)
class WireError:
    """A JSON-RPC error object: code, message and optional data."""

    code: int
    message: str
    data: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The error as the JSON object sent on the wire (``data`` only when set)."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


@dataclass(frozen=True, slots=True)
class ErrorRule:
    """How one error class is answered: its code and the prefix put before its text."""

    code: int
    prefix: str = ""


#: Every class of ``lcg.errors`` (and nothing else) → its rule. Lookup walks the MRO, so a
#: subclass added elsewhere inherits its parent's rule; the completeness test keeps this
#: table exact for the classes defined in ``lcg.errors``.
ERROR_TABLE: dict[type[E.LcgError], ErrorRule] = {
    E.LcgError: ErrorRule(APPLICATION_ERROR, "IPC error: "),
    E.ConfigError: ErrorRule(APPLICATION_ERROR, "configuration error: "),
    E.StreamError: ErrorRule(APPLICATION_ERROR, "WAL error: "),
    E.StreamLockedError: ErrorRule(APPLICATION_ERROR, "WAL error: "),
    E.GroupNameError: ErrorRule(APPLICATION_ERROR, "IPC error: "),
    E.GenerationError: ErrorRule(APPLICATION_ERROR, "WAL stream generation unknown: "),
    E.CorruptFileError: ErrorRule(APPLICATION_ERROR, "WAL error: "),
    # Mark errors carry their own complete text (the reference's `checkpoint "x" not found`).
    E.MarkError: ErrorRule(APPLICATION_ERROR, ""),
    E.ProjectionError: ErrorRule(APPLICATION_ERROR, "database error: "),
    E.ProjectionIOError: ErrorRule(APPLICATION_ERROR, "database error: "),
    E.RebuildRefusedError: ErrorRule(APPLICATION_ERROR, "IPC error: "),
    E.EmbedderError: ErrorRule(APPLICATION_ERROR, "embedding error: "),
    E.ExtractionError: ErrorRule(APPLICATION_ERROR, "LLM error: "),
    E.CassetteError: ErrorRule(APPLICATION_ERROR, "cassette error: "),
    E.RequestError: ErrorRule(APPLICATION_ERROR, "IPC error: "),
    # Validation text is sent as the reference words it, unprefixed.
    E.InvalidParamsError: ErrorRule(INVALID_PARAMS, ""),
    E.MethodNotFoundError: ErrorRule(METHOD_NOT_FOUND, "IPC error: Method not found: "),
    E.NotFoundError: ErrorRule(APPLICATION_ERROR, "IPC error: "),
    E.ReadOnlyError: ErrorRule(APPLICATION_ERROR, "IPC error: "),
    E.DegradedError: ErrorRule(DEGRADED, ""),
}


def _rule(exc: E.LcgError) -> ErrorRule:
    for cls in type(exc).__mro__:
        rule = ERROR_TABLE.get(cls)
        if rule is not None:
            return rule
    return ERROR_TABLE[E.LcgError]


def to_wire(exc: BaseException) -> WireError:
    """The JSON-RPC error object that answers ``exc`` (unexpected ones are logged)."""
    if isinstance(exc, RemoteError):
        # A forwarded answer (attached MCP) keeps what the service said.
        return WireError(exc.code, exc.message, exc.data)
    if isinstance(exc, E.DegradedError):
        reason = str(exc) or "degraded"
        return WireError(DEGRADED, DEGRADED_MESSAGE, {"reason": reason})
    if isinstance(exc, E.LcgError):
        rule = _rule(exc)
        text = str(exc)
        # Idempotent: a message that already carries its prefix is not prefixed twice.
        message = text if text.startswith(rule.prefix) else rule.prefix + text
        return WireError(rule.code, message)
    if isinstance(exc, OSError) and exc.errno is not None:
        # The file system refused (permissions, read-only mount, full disk): not a bug of
        # lcg but a state of the machine the caller can fix, so name the path and the fix.
        log.warning("a call failed on the file system", exc_info=exc)
        return WireError(APPLICATION_ERROR, os_error_message(exc))
    log.error("internal error while serving a call", exc_info=exc)
    return WireError(INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")


#: What to do about an ``OSError``, by errno.
_OS_REMEDIES: dict[int, str] = {
    errno.EACCES: "make it writable by the user lcg runs as (uid {uid}), e.g. `chmod u+w` "
    "on it or `chown` it to that user, then retry",
    errno.EPERM: "make it writable by the user lcg runs as (uid {uid}), e.g. `chmod u+w` "
    "on it or `chown` it to that user, then retry",
    errno.EROFS: "its file system is mounted read-only: remount it read-write or move the "
    "workspace (LCG_WAL_DIR, LCG_DB_PATH) to a writable disk, then retry",
    errno.ENOSPC: "its disk is full: free space on it, then retry",
    errno.EDQUOT: "the disk quota is exhausted: free space or raise the quota, then retry",
}


def os_error_message(exc: OSError) -> str:
    """``I/O error: <what> at <path>: <remedy>`` for an ``OSError`` met while serving."""
    what = exc.strerror or type(exc).__name__
    where = f" at {exc.filename}" if exc.filename is not None else ""
    if exc.filename2 is not None:
        where += f" and {exc.filename2}"
    remedy = _OS_REMEDIES.get(exc.errno or 0, "check that path, then retry")
    return f"I/O error: {what}{where}: {remedy.format(uid=os.getuid())}"


def parse_error(detail: str) -> WireError:
    """The answer to a line that is not JSON."""
    return WireError(PARSE_ERROR, f"Parse error: {detail}")


def invalid_request(detail: str) -> WireError:
    """The answer to a JSON value that is not a valid JSON-RPC 2.0 request."""
    return WireError(INVALID_REQUEST, f"Invalid Request: {detail}")
