"""Named shortcuts for the main methods, shared by both clients.

A shortcut names only its method's required parameters; every other parameter passes through
as a keyword, as the method takes it (``lcg methods NAME`` lists them). So the service's
parameter Structs stay the one declaration of what a method takes: a parameter added there is
usable here at once, and a test checks each shortcut's required names against them.
``None`` means "not sent" (the service's default).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["SHORTCUTS", "ProgressCallback", "Shortcuts"]

#: Called with each progress frame (a dict with ``type: "progress"``).
ProgressCallback = Callable[[dict[str, Any]], Any]

R = TypeVar("R")

#: Shortcut → the method it calls (its required parameters are the shortcut's positional ones).
SHORTCUTS: dict[str, str] = {
    "health_check": "health_check",
    "status": "knowledge_status",
    "process_chunk": "knowledge_process_chunk",
    "add_episode": "knowledge_add_episode",
    "assert_entity": "knowledge_assert_entity",
    "assert_relationship": "knowledge_assert_relationship",
    "find_entities": "knowledge_find_entities",
    "find_relationships": "knowledge_find_relationships",
    "search_passages": "knowledge_search_passages",
}


def _params(**kw: Any) -> dict[str, Any]:
    """The params object: ``None`` left out, other mappings sent as JSON objects."""
    return {k: dict(v) if isinstance(v, Mapping) else v for k, v in kw.items() if v is not None}


class Shortcuts(ABC, Generic[R]):
    """The shortcuts over ``call``; ``R`` is what ``call`` returns (a value, or an awaitable)."""

    @abstractmethod
    def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> R:
        """Call ``method`` with ``params``; the result, or a ``RemoteError``."""

    def health_check(self) -> R:
        """``health_check``: ``{ok, healthy, state, reason?}``."""
        return self.call(SHORTCUTS["health_check"])

    def status(self) -> R:
        """``knowledge_status``: the service and stream status."""
        return self.call(SHORTCUTS["status"])

    def process_chunk(self, chunk_text: str, chunk_id: str, source_file: str, **params: Any) -> R:
        """``knowledge_process_chunk``: ingest one chunk of a source file."""
        return self.call(
            SHORTCUTS["process_chunk"],
            _params(chunk_text=chunk_text, chunk_id=chunk_id, source_file=source_file, **params),
        )

    def add_episode(self, name: str, episode_body: str, **params: Any) -> R:
        """``knowledge_add_episode``: ingest one episode."""
        return self.call(
            SHORTCUTS["add_episode"], _params(name=name, episode_body=episode_body, **params)
        )

    def assert_entity(self, name: str, **params: Any) -> R:
        """``knowledge_assert_entity``: create or update an entity by name or uuid."""
        return self.call(SHORTCUTS["assert_entity"], _params(name=name, **params))

    def assert_relationship(
        self, source_name: str, target_name: str, predicate: str, **params: Any
    ) -> R:
        """``knowledge_assert_relationship``: upsert an edge between two named entities."""
        return self.call(
            SHORTCUTS["assert_relationship"],
            _params(
                source_name=source_name, target_name=target_name, predicate=predicate, **params
            ),
        )

    def find_entities(self, query: str, **params: Any) -> R:
        """``knowledge_find_entities``: ``{nodes, count}``."""
        return self.call(SHORTCUTS["find_entities"], _params(query=query, **params))

    def find_relationships(self, query: str, **params: Any) -> R:
        """``knowledge_find_relationships``: ``{facts, count}``."""
        return self.call(SHORTCUTS["find_relationships"], _params(query=query, **params))

    def search_passages(self, query: str, **params: Any) -> R:
        """``knowledge_search_passages``: ``{passages, count}``."""
        return self.call(SHORTCUTS["search_passages"], _params(query=query, **params))
