"""Commands that decide events: ingestion, assertion, merge, deletion, cross-group edges."""

from __future__ import annotations

__all__: list[str] = []
