"""The dispatcher the socket server and standalone MCP share, and the App it serves.

Looks methods up, applies the degraded/initializing guard (degraded: non-exempt methods
answer -32001; initializing: they wait for readiness up to ``ready_timeout_s``, then answer
-32001 with reason ``initializing``), parses parameters once for both surfaces, calls the
handler and logs the call. Split from ``lcg.rpc.server`` (ADR 0153), which re-exports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol

from lcg import telemetry
from lcg.errors import DegradedError, MethodNotFoundError
from lcg.rpc.progress import Frame
from lcg.rpc.registry import Registry

__all__ = ["App", "Dispatcher", "ProgressSink", "State"]

log = logging.getLogger("lcg.rpc")

#: Service states an App reports.
State = Literal["initializing", "healthy", "degraded"]
#: Where a streaming call's frames go.
ProgressSink = Callable[[Frame], Awaitable[None]]


class App(Protocol):
    """What the server hosts: a registry, a lifecycle and a state."""

    @property
    def registry(self) -> Registry:
        """The methods this app answers."""
        ...

    async def open(self) -> None:
        """Open the projections and catch up; runs after the socket is bound."""
        ...

    async def close(self) -> None:
        """Release everything; runs after in-flight calls drained or were cancelled."""
        ...

    def state(self) -> tuple[State, str | None]:
        """The current state and, when degraded, why."""
        ...


class _Context:
    """The ``CallContext`` handed to handlers."""

    __slots__ = ("_shutdown", "_sink", "is_mcp", "progress_enabled", "request_id")

    def __init__(
        self,
        request_id: str | int | None,
        is_mcp: bool,
        sink: ProgressSink | None,
        shutdown: Callable[[], None],
    ) -> None:
        self.request_id = request_id
        self.is_mcp = is_mcp
        self.progress_enabled = sink is not None
        self._sink = sink
        self._shutdown = shutdown

    async def progress(self, frame: Frame) -> None:
        """Send one progress frame when the caller asked for them."""
        if self._sink is not None:
            await self._sink(frame)

    def request_shutdown(self) -> None:
        """Ask the host to shut down once this call has answered."""
        self._shutdown()


class Dispatcher:
    """Looks methods up, applies the degraded/initializing guard, calls handlers, logs calls.

    Shared by the socket server and standalone MCP so both surfaces behave the same.
    """

    def __init__(
        self,
        app: App,
        *,
        ready_timeout_s: float = 300.0,
        on_shutdown: Callable[[], None] | None = None,
    ) -> None:
        """Serve ``app``; ``on_shutdown`` is what ``ctx.request_shutdown()`` calls."""
        self.app = app
        self.ready_timeout_s = ready_timeout_s
        self._on_shutdown = on_shutdown or (lambda: None)
        self._ready = asyncio.Event()
        self._open_error: str | None = None
        self._last: tuple[str, str | None] | None = None

    @property
    def registry(self) -> Registry:
        """The app's registry."""
        return self.app.registry

    def state(self) -> tuple[State, str | None]:
        """The app's state; a failed ``open()`` shows as degraded."""
        st, reason = self.app.state()
        if st == "initializing" and self._open_error is not None:
            return "degraded", self._open_error
        return st, reason

    def refresh(self) -> None:
        """Re-read the state: emit ``service_state`` on a change and wake waiting calls."""
        current = self.state()
        if current != self._last:
            self._last = current
            state, reason = current
            if state == "initializing":
                telemetry.emit(telemetry.ServiceNotice(kind="initializing", reason=reason))
            else:
                telemetry.emit(telemetry.ServiceState(state=state, reason=reason))
        if current[0] == "initializing":
            self._ready.clear()
        else:
            self._ready.set()

    async def open_app(self) -> None:
        """Run ``app.open()``; a failure leaves the service up and degraded (logged)."""
        self.refresh()
        try:
            await self.app.open()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("opening the service failed", exc_info=exc)
            self._open_error = f"open_failed: {exc}"
        self.refresh()

    async def _guard(self) -> None:
        st, reason = self.state()
        if st == "healthy":
            return
        if st == "degraded":
            raise DegradedError(reason or "degraded")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.ready_timeout_s
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise DegradedError(
                    f"initializing: not ready after {self.ready_timeout_s:g} s; poll health_check"
                )
            # The event is set by refresh(); the short cap re-reads an App whose state moved
            # on by itself (nothing called refresh()).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), min(remaining, 0.25))
            st, reason = self.state()
            if st == "healthy":
                return
            if st == "degraded":
                raise DegradedError(reason or "degraded")

    async def call(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str | int | None = None,
        sink: ProgressSink | None = None,
        is_mcp: bool = False,
    ) -> Any:
        """Serve one call; raises what the handler raised (map it with ``to_wire``)."""
        started = time.perf_counter()
        success = False
        try:
            spec = self.registry.get(method)
            if spec is None:
                raise MethodNotFoundError(_not_found(method, self.registry.names()))
            if not spec.exempt:
                await self._guard()
            # Parameters are checked once, here, for the socket and MCP alike; after the guard,
            # so a degraded service answers -32001 whatever the call carries (as the reference).
            args = spec.parse(params)
            ctx = _Context(request_id, is_mcp, sink if spec.streaming else None, self._on_shutdown)
            result = await spec.handler(ctx, args)
            success = True
            return result
        finally:
            telemetry.emit(
                telemetry.IpcCall(
                    method=method,
                    request_id=request_id,
                    duration_ms=round((time.perf_counter() - started) * 1000),
                    success=success,
                )
            )
            self.refresh()


def _not_found(method: str, names: list[str]) -> str:
    """``method``, and the closest registered name when one is near (``did you mean``)."""
    from lcg.rpc.schema import closest

    guess = closest(method, names, prefix="knowledge_", cutoff=75.0)
    return method if guess is None else f"{method} — did you mean {guess!r}?"
