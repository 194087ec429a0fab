"""The method registry: one table of methods shared by the socket server, MCP and ``lcg methods``.

Each method is a ``MethodSpec``: its name, MCP scope, flags (streaming, degraded-exempt,
writes), a description, its parameters (one ``Params`` Struct, from which the MCP input
schema and ``lcg methods`` are built and against which ``parse`` checks every call) and an
async handler ``(ctx, parsed params) -> Struct | Mapping``.
Handlers are supplied by other modules; the transports only look methods up here.

The service's methods are written as a static table of ``MethodDef`` (module-level handlers
``(app, ctx, params)``, the app a ``ServiceHost``). Both are a ``Method``, the one definition
of a method's fields, over their handler type; ``MethodDef.bind(app)`` makes the
``MethodSpec`` a transport calls, and ``MethodDef.describe()`` the app-less one that
documentation and attached MCP read.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

from lcg.rpc.progress import Frame
from lcg.rpc.schema import NoParams, Params, json_schema, parse, required_names

__all__ = [
    "CallContext",
    "AppHandler",
    "Handler",
    "MCP_SCOPES",
    "Method",
    "MethodDef",
    "MethodSpec",
    "NoParams",
    "Params",
    "Registry",
    "Result",
    "Scope",
    "input_schema",
]

#: MCP scope of a method; ``none`` = never exposed over MCP (``health_check``).
Scope = Literal["read", "write", "cypher", "admin", "none"]
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


#: An async method implementation: it receives its method's parsed ``Params`` Struct (or the
#: raw mapping for a free-form method, ``params=None``).
Handler = Callable[[CallContext, Any], Awaitable[Result]]


#: The handler type of a method entry: ``Handler`` once served, ``AppHandler`` in a table.
H = TypeVar("H")


@dataclass(frozen=True, slots=True)
class Method(Generic[H]):
    """What a method is, whatever its handler: name, scope, flags, description, parameters."""

    name: str
    scope: Scope
    handler: H
    description: str = ""
    #: The method's parameters, one Struct (``lcg.rpc.schema``). ``None`` = free-form: the
    #: handler gets the request's mapping minus ``_progress_token`` (transport tests only;
    #: every lcg method is typed, which a test of the registry checks).
    params: type[Params] | None = NoParams
    #: Emits progress frames when the caller passes ``_progress_token``.
    streaming: bool = False
    #: Answered while degraded or initializing (reference §1.3).
    exempt: bool = False
    #: Changes state (for documentation and read-only surfaces).
    writes: bool = False
    #: lcg's own method, not in the reference's method and scope tables: its MCP tool
    #: description says so (ADR 0214).
    own: bool = False


@dataclass(frozen=True, slots=True)
class MethodSpec(Method[Handler]):
    """One method as a transport serves it: its handler takes ``(ctx, params)``."""

    def required_params(self) -> list[str]:
        """Names of the required parameters, in declaration order."""
        return [] if self.params is None else required_names(self.params)

    def parse(self, params: Mapping[str, Any]) -> Any:
        """``params`` checked against this method's Struct (``InvalidParamsError`` if not)."""
        if self.params is None:
            return {k: v for k, v in params.items() if k != "_progress_token"}
        return parse(self.name, self.params, params)


#: A method written once for every app: ``(app, ctx, parsed params) -> result``. The app is
#: ``Any`` here because the registry sits below the protocol the handlers are typed against
#: (``lcg.rpc.host.ServiceHost``, which imports the dispatcher that imports this module).
AppHandler = Callable[[Any, CallContext, Any], Awaitable[Result]]


@dataclass(frozen=True, slots=True)
class MethodDef(Method[AppHandler]):
    """One entry of a static method table: a method whose handler also takes the app."""

    def bind(self, app: Any) -> MethodSpec:
        """The method served by ``app``: the handler with the app as its first argument."""
        return self._spec(functools.partial(self.handler, app))

    def describe(self) -> MethodSpec:
        """The method without an app (docs, attached MCP); calling its handler is refused."""
        return self._spec(functools.partial(_unbound, self.name))

    def serve_with(self, handler: Handler) -> MethodSpec:
        """The method answered by ``handler`` (``(ctx, params)``) instead of its own (a busy
        holder refusing it, ``lcg.rpc.busy``)."""
        return self._spec(handler)

    def _spec(self, handler: Handler) -> MethodSpec:
        same = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "handler"}
        return MethodSpec(handler=handler, **same)


async def _unbound(name: str, ctx: CallContext, params: Any) -> Result:
    # Only a programming error gets here: a metadata table was handed to a dispatcher.
    raise RuntimeError(
        f"{name}: this method table describes methods only; serve build_registry(app)"
    )


def input_schema(spec: MethodSpec) -> dict[str, Any]:
    """The MCP ``inputSchema`` of a method, built from its parameter Struct."""
    if spec.params is None:
        return {"type": "object"}
    return json_schema(spec.params)


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
        self._specs[spec.name] = spec

    def get(self, name: str) -> MethodSpec | None:
        """The method called ``name``, or ``None``."""
        return self._specs.get(name)

    def names(self) -> list[str]:
        """Every method name, in registration order."""
        return list(self._specs)

    def __iter__(self) -> Iterator[MethodSpec]:
        """Iterate over the methods in registration order."""
        return iter(self._specs.values())

    def __len__(self) -> int:
        """The number of methods."""
        return len(self._specs)

    def __contains__(self, name: object) -> bool:
        """Whether a method of that name is registered."""
        return name in self._specs
