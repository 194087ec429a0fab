"""The surface: the method registry shared by the JSON-RPC socket server and MCP, the
service application, and the Python client.

The face is lazy (ADR 0218): each name is imported from its module on first use (module
``__getattr__``), so ``from lcg.rpc import Client`` loads the light ``lcg.client`` and not the
service application, the engine under it, or the MCP server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcg.lazy import lazy_face

if TYPE_CHECKING:
    from lcg.client import AsyncClient, Client, TransportError
    from lcg.rpc.app import ServiceApp, build_app
    from lcg.rpc.busy import BusyApp, busy_reason
    from lcg.rpc.dispatch import App
    from lcg.rpc.mcp_attached import dial_once, not_running, running_service
    from lcg.rpc.mcp_server import (
        default_registry,
        parse_scopes,
        serve_attached,
        serve_standalone,
    )
    from lcg.rpc.methods import build_registry
    from lcg.rpc.problems import ComponentProblems
    from lcg.rpc.registry import MethodSpec, Params, Registry, input_schema
    from lcg.rpc.replica import ReplicaApp
    from lcg.rpc.schema import closest, example_params, field_docs
    from lcg.rpc.server import Limits, Server, serve

__all__ = [
    "App",
    "AsyncClient",
    "BusyApp",
    "Client",
    "ComponentProblems",
    "Limits",
    "MethodSpec",
    "Params",
    "Registry",
    "ReplicaApp",
    "Server",
    "ServiceApp",
    "TransportError",
    "build_app",
    "build_registry",
    "busy_reason",
    "closest",
    "default_registry",
    "dial_once",
    "example_params",
    "field_docs",
    "input_schema",
    "not_running",
    "parse_scopes",
    "running_service",
    "serve",
    "serve_attached",
    "serve_standalone",
]

#: Module holding each name of the face (the client's names are the light ``lcg.client``'s).
_HOMES: dict[str, str] = {
    "App": "lcg.rpc.dispatch",
    "AsyncClient": "lcg.client",
    "BusyApp": "lcg.rpc.busy",
    "Client": "lcg.client",
    "ComponentProblems": "lcg.rpc.problems",
    "Limits": "lcg.rpc.server",
    "MethodSpec": "lcg.rpc.registry",
    "Params": "lcg.rpc.registry",
    "Registry": "lcg.rpc.registry",
    "ReplicaApp": "lcg.rpc.replica",
    "Server": "lcg.rpc.server",
    "ServiceApp": "lcg.rpc.app",
    "TransportError": "lcg.client",
    "build_app": "lcg.rpc.app",
    "build_registry": "lcg.rpc.methods",
    "busy_reason": "lcg.rpc.busy",
    "closest": "lcg.rpc.schema",
    "default_registry": "lcg.rpc.mcp_server",
    "dial_once": "lcg.rpc.mcp_attached",
    "example_params": "lcg.rpc.schema",
    "field_docs": "lcg.rpc.schema",
    "input_schema": "lcg.rpc.registry",
    "not_running": "lcg.rpc.mcp_attached",
    "parse_scopes": "lcg.rpc.mcp_server",
    "running_service": "lcg.rpc.mcp_attached",
    "serve": "lcg.rpc.server",
    "serve_attached": "lcg.rpc.mcp_server",
    "serve_standalone": "lcg.rpc.mcp_server",
}


__getattr__, __dir__ = lazy_face(__name__, _HOMES, __all__)
