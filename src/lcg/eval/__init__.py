"""The extraction and retrieval evaluation harness (``lcg eval``)."""

from __future__ import annotations

__all__: list[str] = []
