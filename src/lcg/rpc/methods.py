"""The method table of the service: every method, in one registry shared by all transports.

``METHODS`` is static (module-level handlers typed against ``ServiceHost``, no app);
``build_registry(app)`` binds it to an app, and ``build_registry(None)`` is the same table,
unbound, for documentation and attached MCP (nothing is opened or built to describe the
methods). The tables import nothing of the app that binds them (ADR 0183).
"""

from __future__ import annotations

from lcg.rpc.host import ServiceHost
from lcg.rpc.methods_admin import ADMIN_METHODS, RECOVERY_METHODS, STATUS_METHODS
from lcg.rpc.methods_extract import EXTRACTION_METHODS
from lcg.rpc.methods_lookup import LOOKUP_METHODS
from lcg.rpc.methods_read import READ_METHODS
from lcg.rpc.methods_sources import SOURCE_METHODS
from lcg.rpc.methods_wal import JOB_METHODS, WAL_METHODS
from lcg.rpc.methods_write import WRITE_METHODS
from lcg.rpc.registry import MethodDef, Registry

__all__ = ["METHODS", "build_registry"]

#: Every method of the service, in the order MCP lists tools and ``lcg methods`` prints them
#: (clients see this order: a new method goes at the end of its table).
METHODS: tuple[MethodDef, ...] = (
    *STATUS_METHODS,
    *JOB_METHODS,
    *ADMIN_METHODS,
    *WAL_METHODS,
    *RECOVERY_METHODS,
    *READ_METHODS,
    *WRITE_METHODS,
    *EXTRACTION_METHODS,
    *SOURCE_METHODS,
    *LOOKUP_METHODS,
)


def build_registry(app: ServiceHost | None = None) -> Registry:
    """``METHODS`` bound to ``app``; with ``None``, described only (calling a handler fails)."""
    if app is None:
        return Registry(d.describe() for d in METHODS)
    return Registry(d.bind(app) for d in METHODS)
