"""The method registry: one table of methods shared by the socket server, MCP and ``lcg methods``.

Each method is a ``MethodSpec``: its name, MCP scope, flags (streaming, degraded-exempt,
writes), a description, its parameters (``ParamSpec``, which build the MCP input schema and
the ``lcg methods`` table) and an async handler ``(ctx, params) -> Struct | Mapping``.
Handlers are supplied by other modules; the transports only look methods up here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import msgspec

from lcg.rpc.progress import Frame

__all__ = [
    "CallContext",
    "Handler",
    "JsonType",
    "MCP_SCOPES",
    "MethodSpec",
    "ParamSpec",
    "Registry",
    "Result",
    "Scope",
    "input_schema",
]

#: MCP scope of a method; ``none`` = never exposed over MCP (``health_check``).
Scope = Literal["read", "write", "cypher", "admin", "none"]
#: JSON Schema type names a parameter may take.
JsonType = Literal["string", "integer", "number", "boolean", "object", "array", "null"]
#: The scopes that can be selected with ``lcg mcp --scope``.
MCP_SCOPES: tuple[Scope, ...] = ("read", "write", "cypher", "admin")

#: What a handler returns: a msgspec Struct, or a mapping passed through as is.
Result = msgspec.Struct | Mapping[str, Any]


class CallContext(Protocol):
    """What a handler learns about the call it serves, and how it streams progress."""

    @property
    def request_id(self) -> str | int | None:
        """The JSON-RPC id (``None`` for notifications and MCP calls without one)."""
        ...

    @property
    def is_mcp(self) -> bool:
        """True when the call came in over MCP rather than the socket."""
        ...

    @property
    def progress_enabled(self) -> bool:
        """True when the caller asked for progress frames (``_progress_token``)."""
        ...

    def progress(self, frame: Frame) -> Awaitable[None]:
        """Send one progress frame (a no-op unless enabled); raises ``ClientGone``."""
        ...

    def request_shutdown(self) -> None:
        """Ask the hosting service to shut down gracefully after this call answers."""
        ...


#: An async method implementation.
Handler = Callable[[CallContext, dict[str, Any]], Awaitable[Result]]


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One named parameter of a method."""

    name: str
    type: JsonType | tuple[JsonType, ...]
    #: Listed in the MCP schema's ``required``; the socket path does not enforce it.
    required: bool = False
    default: Any = None
    description: str = ""
    #: Element type of an array parameter, for the schema.
    items: JsonType | None = None

    def schema(self) -> dict[str, Any]:
        """This parameter's JSON Schema property."""
        out: dict[str, Any] = {
            "type": list(self.type) if isinstance(self.type, tuple) else self.type
        }
        if self.items is not None:
            out["items"] = {"type": self.items}
        if self.description:
            out["description"] = self.description
        if self.default is not None:
            out["default"] = self.default
        return out


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One method: name, scope, flags, description, parameters and handler."""

    name: str
    scope: Scope
    handler: Handler
    description: str = ""
    params: Sequence[ParamSpec] = ()
    #: Emits progress frames when the caller passes ``_progress_token``.
    streaming: bool = False
    #: Answered while degraded or initializing (reference §1.3).
    exempt: bool = False
    #: Changes state (for documentation and read-only surfaces).
    writes: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def required_params(self) -> list[str]:
        """Names of the parameters the MCP schema marks required, in declaration order."""
        return [p.name for p in self.params if p.required]


def input_schema(spec: MethodSpec) -> dict[str, Any]:
    """The MCP ``inputSchema`` of a method, built from its parameters."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p.name: p.schema() for p in spec.params},
    }
    required = spec.required_params()
    if required:
        schema["required"] = required
    return schema


class Registry:
    """An ordered set of methods, looked up by name."""

    def __init__(self, specs: Iterable[MethodSpec] = ()) -> None:
        """Start with ``specs`` (in order)."""
        self._specs: dict[str, MethodSpec] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: MethodSpec) -> None:
        """Register ``spec``; a duplicate name is a programming error."""
        if spec.name in self._specs:
            raise ValueError(f"method {spec.name!r} is already registered")
        seen: set[str] = set()
        for p in spec.params:
            if p.name in seen:
                raise ValueError(f"method {spec.name!r} declares parameter {p.name!r} twice")
            seen.add(p.name)
        self._specs[spec.name] = spec

    def get(self, name: str) -> MethodSpec | None:
        """The method called ``name``, or ``None``."""
        return self._specs.get(name)

    def names(self) -> list[str]:
        """Every method name, in registration order."""
        return list(self._specs)

    def for_scopes(self, scopes: Iterable[str]) -> list[MethodSpec]:
        """The methods whose scope is in ``scopes``, in registration order."""
        wanted = set(scopes)
        return [s for s in self._specs.values() if s.scope in wanted]

    def __iter__(self) -> Iterator[MethodSpec]:
        """Iterate over the methods in registration order."""
        return iter(self._specs.values())

    def __len__(self) -> int:
        """The number of methods."""
        return len(self._specs)

    def __contains__(self, name: object) -> bool:
        """Whether a method of that name is registered."""
        return name in self._specs
