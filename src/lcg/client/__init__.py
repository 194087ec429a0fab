"""The Python client of an lcg service, light enough for any process to import.

``Client`` (blocking) and ``AsyncClient`` (asyncio) speak what any client of the reference
speaks: one JSON-RPC line per request on the workspace's Unix socket, bare progress lines
before the answer of a streaming call. An answered error is a ``RemoteError`` subclass that is
also the matching ``lcg.errors`` class (``DegradedError``, ``InvalidParamsError``, ...); a
socket that cannot be reached or hangs up is a ``TransportError``.

This package imports nothing of the engine (no graph, vectors, numbers or HTTP libraries, no
other lcg package: only ``lcg.errors`` and, for the default socket, ``lcg.config``), so a
script, an agent's tool or ``lcg --help`` pays only for what it uses (ADR 0218).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lcg.client.blocking import Client, probe_service
from lcg.client.codec import (
    LINE_LIMIT,
    answer,
    decode_line,
    health_verdict,
    is_progress,
    request_line,
)
from lcg.client.errors import (
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
from lcg.client.shortcuts import SHORTCUTS, ProgressCallback
from lcg.client.sockets import check_listening, check_socket

if TYPE_CHECKING:
    from lcg.client.aio import AsyncClient

__all__ = [
    "APPLICATION_ERROR",
    "DEGRADED",
    "DEGRADED_MESSAGE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LINE_LIMIT",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SHORTCUTS",
    "AsyncClient",
    "Client",
    "ProgressCallback",
    "RemoteConfigError",
    "RemoteDegradedError",
    "RemoteError",
    "RemoteGenerationError",
    "RemoteInvalidParamsError",
    "RemoteMethodNotFoundError",
    "RemoteProjectionError",
    "TransportError",
    "answer",
    "check_listening",
    "check_socket",
    "decode_line",
    "from_wire",
    "health_verdict",
    "is_progress",
    "probe_service",
    "request_line",
]


def __getattr__(name: str) -> Any:
    """Import ``AsyncClient`` when first asked for: ``asyncio`` is most of this package's
    import time, and a blocking caller never needs it."""
    if name == "AsyncClient":
        from lcg.client.aio import AsyncClient

        return AsyncClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
