"""Derived state: the graph (Kuzu), vector (hnswlib) and text (BM25) projections, the
projector that feeds them from the streams, digests, search and the workspace write path."""

from __future__ import annotations

__all__: list[str] = []
