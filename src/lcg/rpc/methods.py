"""The method table of the service: every method, in one registry shared by all transports.

``METHODS`` is static (module-level handlers, no app); ``build_registry(app)`` binds it to an
app, and ``build_registry(None)`` is the same table for documentation and attached MCP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcg.rpc.methods_admin import admin_methods
from lcg.rpc.methods_extract import EXTRACTION_METHODS
from lcg.rpc.methods_read import READ_METHODS
from lcg.rpc.methods_write import WRITE_METHODS
from lcg.rpc.registry import Registry

if TYPE_CHECKING:
    from lcg.rpc.app import ServiceApp

__all__ = ["build_registry"]


def build_registry(app: ServiceApp | None = None) -> Registry:
    """The registry of ``app`` (with ``app=None``, a table for documentation only)."""
    if app is None:
        from lcg.config import Config
        from lcg.rpc.app import ServiceApp

        return ServiceApp(Config.from_env()).registry
    registry = Registry()
    for spec in [
        *admin_methods(app),
        *(d.bind(app) for d in (*READ_METHODS, *WRITE_METHODS, *EXTRACTION_METHODS)),
    ]:
        registry.add(spec)
    return registry
