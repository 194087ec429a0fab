"""The method registry served as MCP tools over stdio (reference §1.5); ``lcg mcp``'s
command line is ``lcg.cli.mcp``'s.

Tool name = method name; ``health_check`` (scope ``none``) is never a tool. ``--scope``
selects tools by scope: ``read``, ``write``, ``cypher``, ``admin``, ``all`` (default
``all`` = every scope, ``cypher`` included; no other scope implies ``cypher``). A hidden or
unknown tool is the protocol error METHOD_NOT_FOUND ``Unknown tool: '<n>'``; a schema
``required`` argument that is absent or null is a tool error ``{code: -32602, message}``;
results are structured content, errors structured tool errors ``{code, message, data?}``;
a streaming tool called with ``_meta.progressToken`` sends one progress notification per
frame (progress 1.0, 2.0, ..., the frame's ``message`` copied).

Two backends:
* standalone: hosts an ``App`` in-process behind the same ``Dispatcher`` as the socket
  server (same guard, same telemetry);
* attached (``--connect SOCK``, or standalone started beside the workspace's running
  service): forwards each call as JSON-RPC to the service, dialling it per call (a service
  started after this server is reached; initialize and tools/list never need it),
  injecting ``_progress_token: true`` for streaming tools, with a per-line idle timeout
  (``LCG_ATTACHED_CALL_TIMEOUT_MS``, re-armed by progress lines), re-dialling a broken
  connection and retrying once only when the failure happened while writing the request.
  ``knowledge_close`` is hidden unless ``--allow-remote-close``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import msgspec

from lcg.errors import ConfigError
from lcg.rpc.dispatch import App, Dispatcher
from lcg.rpc.errors import INVALID_PARAMS, METHOD_NOT_FOUND, WireError, to_wire
from lcg.rpc.mcp_attached import AttachedBackend
from lcg.rpc.progress import Frame, ProgressFn, frame_fields
from lcg.rpc.registry import MCP_SCOPES, MethodSpec, Registry, input_schema
from lcg.rpc.schema import closest

if TYPE_CHECKING:
    # The SDK is imported where it is used: it costs seconds to import, and a bad --scope
    # must fail at once.
    import mcp_types as mt
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server as MCPLowLevelServer

    from lcg.rpc.connections import Limits
    from lcg.rpc.server import Server


__all__ = [
    "OWN_TOOL_NOTE",
    "SERVER_NAME",
    "AttachedBackend",
    "Backend",
    "ProgressFn",
    "StandaloneBackend",
    "build_mcp_server",
    "default_registry",
    "parse_scopes",
    "serve_attached",
    "serve_standalone",
    "tool_description",
    "visible_tools",
]

SERVER_NAME = "liminis-context-graph"
#: What ``all`` (and no ``--scope``) stands for: every scope, ``cypher`` included, as the
#: reference's scope table says; ``read``, ``write`` and ``admin`` never imply ``cypher``.
_ALL = frozenset(MCP_SCOPES)
#: Hidden from attached MCP unless ``--allow-remote-close``.
_CLOSE = "knowledge_close"


def parse_scopes(text: str | None) -> frozenset[str]:
    """The scopes named by a ``--scope`` value; an empty or unknown token is a ConfigError."""
    if text is None:
        return _ALL
    out: set[str] = set()
    for raw in text.split(","):
        token = raw.strip().lower()
        if not token:
            raise ConfigError(
                f"--scope {text!r}: empty scope token (use read,write,cypher,admin,all)"
            )
        if token == "all":
            out |= _ALL
        elif token in MCP_SCOPES:
            out.add(token)
        else:
            raise ConfigError(
                f"--scope {text!r}: unknown scope {token!r} (use read,write,cypher,admin,all)"
            )
    return frozenset(out)


def visible_tools(
    registry: Registry, scopes: Iterable[str], hidden: Iterable[str] = ()
) -> list[MethodSpec]:
    """The methods exposed as tools for ``scopes``, minus ``hidden``, in registry order."""
    wanted = set(scopes) - {"none"}
    skip = set(hidden)
    return [s for s in registry if s.scope in wanted and s.name not in skip]


#: The words an lcg-only tool's description starts with (ADR 0214).
OWN_TOOL_NOTE = "lcg's own tool, not in the reference's scope table."


def tool_description(spec: MethodSpec) -> str | None:
    """The MCP description of ``spec``: an lcg-only tool says so first (ADR 0214)."""
    if spec.own:
        return f"{OWN_TOOL_NOTE} {spec.description}".strip()
    return spec.description or None


class Backend(Protocol):
    """Where tool calls go: an in-process App, or a running service."""

    async def call(
        self,
        spec: MethodSpec,
        args: dict[str, Any],
        progress: ProgressFn | None,
        request_id: str | int | None = None,
    ) -> Any:
        """Serve one call; raises ``LcgError`` (``RemoteError`` when forwarded)."""
        ...


class StandaloneBackend:
    """Calls the registry's handlers in-process through a ``Dispatcher``."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        """Serve calls through ``dispatcher``."""
        self.dispatcher = dispatcher

    async def call(
        self,
        spec: MethodSpec,
        args: dict[str, Any],
        progress: ProgressFn | None,
        request_id: str | int | None = None,
    ) -> Any:
        """Run the handler (guarded like the socket) and return its result."""
        sink = None
        if progress is not None:
            report = progress

            async def sink(frame: Frame) -> None:
                await report(frame_fields(frame))

        return await self.dispatcher.call(
            spec.name, args, request_id=request_id, sink=sink, is_mcp=True
        )


_encoder = msgspec.json.Encoder()


def _text(obj: Any) -> list[mt.ContentBlock]:
    import mcp_types as mt

    return [mt.TextContent(type="text", text=_encoder.encode(obj).decode())]


def _tool_error(error: WireError) -> mt.CallToolResult:
    import mcp_types as mt

    body = error.to_dict()
    return mt.CallToolResult(content=_text(body), structured_content=body, is_error=True)


def _tool_result(result: Any) -> mt.CallToolResult:
    import mcp_types as mt

    try:
        data = msgspec.to_builtins(result)
    except (TypeError, msgspec.EncodeError) as exc:
        return _tool_error(to_wire(exc))
    # Structured content must be an object on the protocol versions clients speak today.
    structured = data if isinstance(data, dict) else {"result": data}
    return mt.CallToolResult(content=_text(data), structured_content=structured)


def build_mcp_server(
    registry: Registry,
    scopes: Iterable[str],
    backend: Backend,
    *,
    hidden: Iterable[str] = (),
) -> MCPLowLevelServer[Any]:
    """An MCP server whose tools are the visible methods, served by ``backend``."""
    import mcp_types as mt
    from mcp.server.lowlevel import Server as MCPLowLevelServer
    from mcp.shared.exceptions import MCPError

    tools = {s.name: s for s in visible_tools(registry, scopes, hidden)}
    listing = [
        mt.Tool(
            name=s.name,
            description=tool_description(s),
            input_schema=input_schema(s),
            annotations=mt.ToolAnnotations(read_only_hint=not s.writes and s.scope == "read"),
        )
        for s in tools.values()
    ]

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=listing)

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        spec = tools.get(params.name)
        if spec is None:
            # The reference's text, then the closest visible tool (never a hidden one).
            guess = closest(params.name, list(tools), prefix="knowledge_", cutoff=75.0)
            hint = f" — did you mean '{guess}'?" if guess else ""
            raise MCPError(METHOD_NOT_FOUND, f"Unknown tool: '{params.name}'{hint}")
        args = dict(params.arguments or {})
        missing = [n for n in spec.required_params() if args.get(n) is None]
        if missing:
            return _tool_error(
                WireError(
                    INVALID_PARAMS,
                    f"Missing required argument(s) for '{spec.name}': {', '.join(missing)}",
                )
            )
        token = (ctx.meta or {}).get("progress_token")
        progress: ProgressFn | None = None
        if spec.streaming and token is not None:
            counter = itertools.count(1)
            session = ctx.session

            async def progress(frame: dict[str, Any]) -> None:
                message = frame.get("message")
                await session.report_progress(
                    float(next(counter)), None, message if isinstance(message, str) else None
                )

        try:
            result = await backend.call(spec, args, progress, ctx.request_id)
        except Exception as exc:
            return _tool_error(to_wire(exc))
        return _tool_result(result)

    return MCPLowLevelServer(
        SERVER_NAME,
        version=_version(),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def _version() -> str:
    from lcg import __version__

    return __version__


async def _serve_stdio(server: MCPLowLevelServer[Any]) -> None:
    from mcp.server.stdio import stdio_server

    from lcg.rpc._mcp_stdio import AnsweringStdin

    # The SDK drops a line it cannot validate unanswered (a lone surrogate): answer it here.
    stdin = AnsweringStdin()
    async with stdio_server(stdin=cast(Any, stdin)) as (read, write):
        stdin.answer_on(write)
        await server.run(read, write, server.create_initialization_options())


async def _standalone(app: App, scopes: frozenset[str], socket: _Socket | None) -> bool:
    """Serve until stdin closes (False), or ``knowledge_close`` or a signal stops it (True).

    With ``socket``, the workspace's socket is served beside stdio from the same app and
    dispatcher, so every other command and client goes through this process (ADR 0199)."""
    stop = asyncio.Event()
    host: Server | None = None
    if socket is None:
        dispatcher = Dispatcher(app, on_shutdown=stop.set)
        opener: asyncio.Task[None] | None = asyncio.create_task(dispatcher.open_app())
        stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        on_signal = stop.set
    else:
        from lcg.rpc.server import Server

        host = Server(
            app,
            socket.path,
            shutdown_timeout_ms=socket.shutdown_timeout_ms,
            limits=socket.limits,
        )
        await host.start()  # binds, then opens the app behind the socket
        dispatcher, opener = host.dispatcher, None
        stopped = asyncio.ensure_future(host.wait_for_shutdown_request())
        on_signal = host.request_shutdown
    server = build_mcp_server(app.registry, scopes, StandaloneBackend(dispatcher))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # SIGTERM/SIGINT close the workspace cleanly, like knowledge_close.
        with contextlib.suppress(RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal)
    serving = asyncio.create_task(_serve_stdio(server))
    try:
        await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if serving.done():
            serving.result()
            return False
        # knowledge_close: its answer is queued once the handler returns; give the stdout
        # writer a moment to flush it. The stdin reader is a thread blocked in read() that
        # nothing can cancel, so the caller ends the process instead of unwinding it.
        await asyncio.sleep(0.2)
        return True
    finally:
        stopped.cancel()
        if opener is not None and not opener.done():
            opener.cancel()
        await asyncio.gather(*(t for t in (opener, stopped) if t), return_exceptions=True)
        if host is not None:
            await host.shutdown()  # drains the socket's calls, closes the app, unbinds
        else:
            await app.close()


async def _attached(
    registry: Registry, scopes: frozenset[str], socket_path: str, timeout_ms: int, allow_close: bool
) -> None:
    backend = AttachedBackend(socket_path, timeout_ms)
    hidden = () if allow_close else (_CLOSE,)
    server = build_mcp_server(registry, scopes, backend, hidden=hidden)
    try:
        await _serve_stdio(server)
    finally:
        await backend.close()


@dataclass(frozen=True)
class _Socket:
    """Where a standalone MCP server also serves the workspace's socket, and how."""

    path: Path
    shutdown_timeout_ms: int = 5000
    limits: Limits | None = None


def serve_standalone(
    app: App,
    scopes: frozenset[str],
    socket_path: Path | None = None,
    *,
    shutdown_timeout_ms: int = 5000,
    limits: Limits | None = None,
) -> bool:
    """Serve ``app``'s tools on stdio until stdin closes (False), or ``knowledge_close`` or a
    signal stops it (True: the caller ends the process, see ``_standalone``). With
    ``socket_path`` the app is served on that socket too, for as long (ADR 0199)."""
    socket = None if socket_path is None else _Socket(socket_path, shutdown_timeout_ms, limits)
    loop = asyncio.new_event_loop()
    # Not asyncio.run(): after knowledge_close the loop is left as is (see _standalone).
    closed = loop.run_until_complete(_standalone(app, scopes, socket))
    if not closed:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
    return closed


def serve_attached(
    registry: Registry, scopes: frozenset[str], socket_path: str, timeout_ms: int, allow_close: bool
) -> None:
    """Serve ``registry``'s tools on stdio, forwarding each call to the service on
    ``socket_path``, until stdin closes (``knowledge_close`` only if ``allow_close``)."""
    asyncio.run(_attached(registry, scopes, socket_path, timeout_ms, allow_close))


def default_registry() -> Registry:
    """The service's method table, for metadata only (attached MCP, ``lcg methods``)."""
    from lcg.rpc.methods import build_registry

    return build_registry(None)
