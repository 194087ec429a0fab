"""lcg: a local-first, event-sourced context graph engine."""

from __future__ import annotations

__all__ = ["REFERENCE_VERSION", "__version__"]

__version__ = "0.1.0"
#: The liminis-context-graph release whose client surface (methods, MCP tools, flags, WAL
#: lines) this build implements; launchers that gate on the reference's version read it.
REFERENCE_VERSION = "0.13.3"
