"""The method table of the service: every method, in one registry shared by all transports.

``METHODS`` is static (module-level handlers, no app); ``build_registry(app)`` binds it to an
app, and ``build_registry(None)`` is the same table, unbound, for documentation and attached
MCP (nothing is opened or built to describe the methods).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcg.rpc.methods_admin import ADMIN_METHODS
from lcg.rpc.methods_extract import EXTRACTION_METHODS
from lcg.rpc.methods_read import READ_METHODS
from lcg.rpc.methods_sources import SOURCE_METHODS
from lcg.rpc.methods_write import WRITE_METHODS
from lcg.rpc.registry import MethodDef, Registry

if TYPE_CHECKING:
    from lcg.rpc.app import ServiceApp

__all__ = ["METHODS", "build_registry"]

#: Every method of the service, in the order MCP lists tools and ``lcg methods`` prints them.
METHODS: tuple[MethodDef, ...] = (
    *ADMIN_METHODS,
    *READ_METHODS,
    *WRITE_METHODS,
    *EXTRACTION_METHODS,
    *SOURCE_METHODS,
)


def build_registry(app: ServiceApp | None = None) -> Registry:
    """``METHODS`` bound to ``app``; with ``None``, described only (calling a handler fails)."""
    if app is None:
        return Registry(d.describe() for d in METHODS)
    return Registry(d.bind(app) for d in METHODS)
