"""The surface: the method registry shared by the JSON-RPC socket server and MCP, the
service application, and the Python client."""

from __future__ import annotations

__all__: list[str] = []
