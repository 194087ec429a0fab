"""A test App for the transport tests (test-only; not a fake of lcg's engine).

Its registry exercises every transport feature: exempt and guarded methods, every MCP scope,
a streaming method, a slow method, error kinds, a result that cannot be encoded, and
``knowledge_close``. Also a script, so tests can run real subprocesses:

    python rpc_testapp.py serve SOCKET [--shutdown-timeout-ms N]
    python rpc_testapp.py mcp [lcg mcp options...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from lcg import errors as E
from lcg.rpc.progress import MessageFrame, PassFrame
from lcg.rpc.registry import CallContext, MethodSpec, NoParams, Params, Registry
from lcg.rpc.server import Limits, Server, State, serve


class EpisodeResult(msgspec.Struct):
    """A Struct result, to check Structs encode like mappings."""

    episode_uuid: str
    name: str


_ERRORS: dict[str, type[Exception]] = {
    "degraded": E.DegradedError,
    "invalid": E.InvalidParamsError,
    "method": E.MethodNotFoundError,
    "notfound": E.NotFoundError,
    "config": E.ConfigError,
    "projection": E.ProjectionError,
    "generation": E.GenerationError,
    "mark": E.MarkError,
    "boom": RuntimeError,
}


class TestApp:
    """An App whose ``open()`` can be held on a gate and whose state tests can set."""

    __test__ = False  # not a pytest test class

    def __init__(self, *, gate: asyncio.Event | None = None, fail_open: bool = False) -> None:
        self.registry = build_registry(self)
        self.gate = gate
        self.fail_open = fail_open
        self._state: State = "initializing"
        self._reason: str | None = None
        self.opened = False
        self.closed = False
        self.slow_finished = 0
        #: knowledge_block waits on this; tests set it from their thread with call_soon.
        self.release = asyncio.Event()
        self.block_finished = 0
        self.closed_marker: str | None = None

    async def open(self) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_open:
            raise E.ProjectionError("test projections are broken")
        self.opened = True
        self._state = "healthy"

    async def close(self) -> None:
        self.closed = True
        if self.closed_marker is not None:
            # Lets a test see, from outside, that a subprocess closed its App.
            Path(self.closed_marker).write_text("closed")

    def state(self) -> tuple[State, str | None]:
        return self._state, self._reason

    def set_state(self, state: State, reason: str | None) -> None:
        self._state, self._reason = state, reason


class FindParams(Params):
    query: Annotated[str, Meta(description="search text")]
    group_ids: list[Any] | str | None = None
    num_results: int = 10


class EpisodeParams(Params):
    name: str
    episode_body: str
    group_id: str = "liminis"


class SlowParams(Params):
    seconds: float = 0.5


class TicksParams(Params):
    count: int = 3
    interval: float = 0.1


class CountParams(Params):
    count: int = 3


class FailParams(Params):
    kind: str = "boom"
    message: str | None = None


class StateParams(Params):
    state: str
    reason: str | None = None


class CypherParams(Params):
    query: str = ""


def build_registry(app: TestApp) -> Registry:
    """The test methods, bound to ``app``."""

    async def health_check(ctx: CallContext, p: NoParams) -> dict[str, Any]:
        st, reason = app.state()
        out: dict[str, Any] = {"ok": st == "healthy", "healthy": st == "healthy", "state": st}
        if reason is not None:
            out["reason"] = reason
        return out

    async def status(ctx: CallContext, p: NoParams) -> dict[str, Any]:
        st, reason = app.state()
        return {"running": True, "state": st, "reason": reason, "is_mcp": ctx.is_mcp}

    async def echo(ctx: CallContext, p: dict[str, Any]) -> dict[str, Any]:
        return {"params": p, "request_id": ctx.request_id}

    async def find_entities(ctx: CallContext, p: FindParams) -> dict[str, Any]:
        return {"nodes": [], "count": 0, "query": p.query}

    async def add_episode(ctx: CallContext, p: EpisodeParams) -> EpisodeResult:
        return EpisodeResult(episode_uuid="uuid-" + p.name, name=p.name)

    async def slow(ctx: CallContext, p: SlowParams) -> dict[str, Any]:
        await ctx.progress(MessageFrame(message="started"))
        await asyncio.sleep(p.seconds)
        app.slow_finished += 1
        return {"slept": p.seconds}

    async def block(ctx: CallContext, p: NoParams) -> dict[str, Any]:
        await ctx.progress(MessageFrame(message="blocked"))
        await app.release.wait()
        await ctx.progress(MessageFrame(message="released"))
        app.block_finished += 1
        return {"released": True}

    async def ticks(ctx: CallContext, p: TicksParams) -> dict[str, Any]:
        count = p.count
        for i in range(count):
            await asyncio.sleep(p.interval)
            await ctx.progress(PassFrame(phase="tick", processed=i + 1, total=count))
        return {"ticks": count}

    async def stream(ctx: CallContext, p: CountParams) -> dict[str, Any]:
        count = p.count
        for i in range(count):
            await ctx.progress(PassFrame(phase="scan", processed=i + 1, total=count))
        await ctx.progress(MessageFrame(message="done"))
        return {"frames": count + 1, "progress_enabled": ctx.progress_enabled}

    async def fail(ctx: CallContext, p: FailParams) -> dict[str, Any]:
        kind = p.kind
        raise _ERRORS.get(kind, RuntimeError)(p.message or f"failure of kind {kind}")

    async def cypher(ctx: CallContext, p: CypherParams) -> dict[str, Any]:
        return {"rows": []}

    async def close(ctx: CallContext, p: NoParams) -> dict[str, Any]:
        ctx.request_shutdown()
        return {"status": "closed"}

    async def set_state(ctx: CallContext, p: StateParams) -> dict[str, Any]:
        app.set_state(p.state, p.reason)  # type: ignore[arg-type]
        return {"state": p.state}

    async def bad_result(ctx: CallContext, p: NoParams) -> dict[str, Any]:
        return {"value": object()}

    return Registry(
        [
            MethodSpec("health_check", "none", health_check, "Readiness probe.", exempt=True),
            MethodSpec("knowledge_status", "read", status, "Service status.", exempt=True),
            MethodSpec("knowledge_echo", "read", echo, "Echo the params.", params=None),
            MethodSpec(
                "knowledge_find_entities",
                "read",
                find_entities,
                "Find entities.",
                params=FindParams,
            ),
            MethodSpec(
                "knowledge_add_episode",
                "write",
                add_episode,
                "Add an episode.",
                params=EpisodeParams,
                writes=True,
            ),
            MethodSpec(
                "knowledge_slow",
                "write",
                slow,
                "Sleep, after one progress frame.",
                params=SlowParams,
                streaming=True,
            ),
            MethodSpec(
                "knowledge_block",
                "write",
                block,
                "Wait until the test releases it.",
                streaming=True,
            ),
            MethodSpec(
                "knowledge_ticks",
                "admin",
                ticks,
                "Emit a progress frame every interval seconds.",
                params=TicksParams,
                streaming=True,
            ),
            MethodSpec(
                "knowledge_stream",
                "admin",
                stream,
                "Emit progress frames.",
                params=CountParams,
                streaming=True,
            ),
            MethodSpec(
                "knowledge_fail",
                "read",
                fail,
                "Raise an error of a kind.",
                params=FailParams,
            ),
            MethodSpec(
                "knowledge_query_cypher", "cypher", cypher, "Read-only Cypher.", params=CypherParams
            ),
            MethodSpec("knowledge_close", "admin", close, "Shut the service down.", exempt=True),
            MethodSpec(
                "knowledge_set_state",
                "admin",
                set_state,
                "Set the test state.",
                params=StateParams,
                exempt=True,
            ),
            MethodSpec("knowledge_bad_result", "read", bad_result, "Return an unencodable value."),
        ]
    )


class ThreadedServer:
    """A real server on a real socket, run on an event loop in a background thread."""

    def __init__(
        self,
        app: TestApp,
        socket_path: Path,
        shutdown_timeout_ms: int = 5000,
        ready_timeout_s: float = 30.0,
        limits: Limits | None = None,
    ) -> None:
        self.limits = limits
        self.ready_timeout_s = ready_timeout_s
        self.app = app
        self.socket_path = socket_path
        self.shutdown_timeout_ms = shutdown_timeout_ms
        self.loop: asyncio.AbstractEventLoop | None = None
        self.server: Server | None = None
        self.result: Server | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self.loop = asyncio.get_running_loop()

            def started(server: Server) -> None:
                self.server = server
                self._started.set()

            self.result = await serve(
                self.app,
                self.socket_path,
                self.shutdown_timeout_ms,
                ready_timeout_s=self.ready_timeout_s,
                started=started,
                limits=self.limits,
            )

        try:
            asyncio.run(main())
        except BaseException as exc:  # surfaced by start()/stop()
            self._error = exc
            self._started.set()

    def start(self) -> ThreadedServer:
        self._thread.start()
        self._started.wait(30)
        if self._error is not None:
            raise self._error
        return self

    def call_soon(self, fn: Any, *args: Any) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        if self.server is not None and self._thread.is_alive():
            try:
                self.call_soon(self.server.request_shutdown)
            except RuntimeError:
                pass  # the loop closed between the check and the call: it is stopping anyway
        self._thread.join(30)
        assert not self._thread.is_alive(), "server thread did not stop"
        if self._error is not None:
            raise self._error


@contextlib.contextmanager
def short_tmpdir() -> Iterator[Path]:
    """A short temporary directory (Unix socket paths are limited to 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="lcg-rpc-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="rpc_testapp")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_serve = sub.add_parser("serve")
    p_serve.add_argument("socket")
    p_serve.add_argument("--shutdown-timeout-ms", type=int, default=5000)
    sub.add_parser("mcp", add_help=False)
    args, rest = parser.parse_known_args(argv)
    if args.cmd == "serve":
        from lcg import telemetry
        from lcg.cli.serve import run_server

        telemetry.set_sink(None)
        return run_server(TestApp(), args.socket, args.shutdown_timeout_ms)
    from lcg.cli.mcp import main as mcp_main

    app = TestApp()
    app.closed_marker = os.environ.get("RPC_TESTAPP_CLOSED_MARKER")
    return mcp_main(rest, registry=app.registry, app_factory=lambda: app)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
