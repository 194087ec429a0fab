"""lcg: a local-first, event-sourced context graph engine."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
