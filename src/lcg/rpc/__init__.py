"""The surface: the method registry shared by the JSON-RPC socket server and MCP, the
service application, and the Python client."""

from __future__ import annotations

from lcg.rpc.app import ServiceApp, build_app
from lcg.rpc.client import AsyncClient, Client
from lcg.rpc.methods import build_registry
from lcg.rpc.registry import MethodSpec, Params, Registry
from lcg.rpc.server import serve

__all__ = [
    "AsyncClient",
    "Client",
    "MethodSpec",
    "Params",
    "Registry",
    "ServiceApp",
    "build_app",
    "build_registry",
    "serve",
]
