"""The page's one way to the workspace: the service's read methods, over its socket.

``Reads.call`` is the only place the page's server asks the service anything, and it asks
only the methods in ``READS`` (each a read of the method table: a test holds the table to
that), so no write, admin or Cypher method is reachable from a page whatever its URL. Every
call names its bound (``num_results``, ``last_n``, a list of uuids): no page loads a group.
Connections are pooled: the server answers requests on threads, and a client is one
connection used by one thread at a time.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Final

from lcg.client import Client
from lcg.errors import LcgError

__all__ = ["READS", "ReadRefused", "Reads"]

#: The methods a page may call: reads, each bounded by its parameters.
READS: Final = frozenset(
    {
        "health_check",
        "knowledge_status",
        "knowledge_search_passages",
        "knowledge_find_entities",
        "knowledge_find_relationships",
        "knowledge_get_entity_neighbors",
        "knowledge_get_entities_neighbors",
        "knowledge_get_entities_by_uuids",
        "knowledge_get_episodes_by_uuids",
        "knowledge_get_document",
        "knowledge_get_episodes",
        "knowledge_sources",
        "knowledge_source_manifest",
    }
)
#: How long a page waits for one answer of the service.
_TIMEOUT_S: Final = 60.0
#: Idle connections kept for the next request.
_POOL: Final = 8


class ReadRefused(LcgError):
    """The page asked the service for a method that is not one of its reads."""


class Reads:
    """Calls of ``READS`` on the service at ``socket_path``."""

    def __init__(self, socket_path: Path) -> None:
        """Reads through the service listening on ``socket_path``."""
        self.socket_path = socket_path
        self._idle: list[Client] = []
        self._lock = threading.Lock()

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The result of ``method`` (one of ``READS``) with ``params``; ``ReadRefused`` for
        any other method, before anything is sent."""
        if method not in READS:
            raise ReadRefused(f"{method} is not one of the page's reads")
        client = self._take()
        try:
            result = client.call(method, params or {})
        except BaseException:
            client.close()
            raise
        self._give(client)
        return result

    def _take(self) -> Client:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return Client(self.socket_path, timeout=_TIMEOUT_S)

    def _give(self, client: Client) -> None:
        with self._lock:
            if len(self._idle) < _POOL:
                self._idle.append(client)
                return
        client.close()

    def close(self) -> None:
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for client in idle:
            client.close()
