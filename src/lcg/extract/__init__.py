"""Ports to the outside world: embedders and extractors (LLM providers, cassettes)."""

from __future__ import annotations

__all__: list[str] = []
