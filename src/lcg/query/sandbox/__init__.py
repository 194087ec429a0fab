"""Clients' Cypher in a process of its own, on a disposable read model of the graph
(ADR 0152): a crash, an allocation without bound or a query past its timeout costs the
worker, never the service."""

from __future__ import annotations

from lcg.query.sandbox.client import CypherSandbox, SandboxLimits
from lcg.query.sandbox.protocol import Target

__all__ = ["CypherSandbox", "SandboxLimits", "Target"]
