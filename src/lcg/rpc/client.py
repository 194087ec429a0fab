"""The Python clients, under the name they had before ``lcg.client`` held them (ADR 0218).

Scripts and the README's examples import ``lcg.rpc.client``; it names the same objects as
``lcg.client`` and, like it, imports nothing of the engine (``lcg.rpc``'s face is lazy).
"""

from __future__ import annotations

from lcg.client import (
    LINE_LIMIT,
    AsyncClient,
    Client,
    ProgressCallback,
    RemoteError,
    TransportError,
    check_socket,
    probe_service,
)

__all__ = [
    "LINE_LIMIT",
    "AsyncClient",
    "Client",
    "ProgressCallback",
    "RemoteError",
    "TransportError",
    "check_socket",
    "probe_service",
]
