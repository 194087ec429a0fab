"""The surface: the method registry shared by the JSON-RPC socket server and MCP, the
service application, and the Python client."""

from __future__ import annotations

from lcg.rpc.app import ServiceApp, build_app
from lcg.rpc.busy import BusyApp, busy_reason
from lcg.rpc.client import AsyncClient, Client
from lcg.rpc.dispatch import App
from lcg.rpc.errors import TransportError
from lcg.rpc.mcp_attached import dial_once, not_running, running_service
from lcg.rpc.mcp_server import default_registry, parse_scopes, serve_attached, serve_standalone
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
