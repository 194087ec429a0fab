"""The static method table (issue 13 item 4): handlers are module-level functions of
``(app, ctx, params)``, callable alone; ``build_registry`` binds them, and describing the
methods (``lcg methods``, attached MCP) builds no app.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest

from lcg.errors import RequestError
from lcg.rpc import app as app_module
from lcg.rpc.methods import METHODS, build_registry
from lcg.rpc.methods_admin import Closed, Health, RecoverParams, close, health_check, recover
from lcg.rpc.methods_wal import JobNotFound, JobView, RebuildStatusParams, rebuild_status
from lcg.rpc.progress import Frame
from lcg.rpc.registry import NoParams


class FakeContext:
    """A fake call context: records a shutdown request, streams nothing."""

    def __init__(self) -> None:
        self.shutdown_requested = False

    @property
    def request_id(self) -> str | int | None:
        return 1

    @property
    def is_mcp(self) -> bool:
        return False

    @property
    def progress_enabled(self) -> bool:
        return False

    async def progress(self, frame: Frame) -> None:
        raise AssertionError("no handler here streams")

    def request_shutdown(self) -> None:
        self.shutdown_requested = True


class FakeApp:
    """A fake app holding only what the handlers under test read: health and jobs."""

    def __init__(self, state: str, reason: str | None) -> None:
        self._health = (state, reason)
        self.jobs: dict[str, app_module.Job] = {}
        self.recovered: list[str] = []
        #: No workspace is open: health has no vector backlog to report (ADR 0201).
        self.workspace_or_none = None

    def health(self) -> tuple[str, str | None]:
        return self._health

    async def recover(self, strategy: str) -> int:
        self.recovered.append(strategy)
        return 0


def _run(call: Awaitable[Any]) -> Any:
    async def wait() -> Any:
        return await call

    return asyncio.run(wait())


def _fake_app(state: str, reason: str | None) -> Any:
    # Typed Any: the handlers are annotated with ServiceHost, and the fake has only a part.
    return FakeApp(state, reason)


def test_a_handler_runs_alone_with_a_fake_app() -> None:
    fake = _fake_app("degraded", "the disk is full")
    ctx = FakeContext()
    # Degraded: health_check answers from app.health() without touching a workspace.
    result = _run(health_check(fake, ctx, NoParams()))
    assert result == Health(ok=False, healthy=False, state="degraded", reason="the disk is full")
    assert _run(rebuild_status(fake, ctx, RebuildStatusParams(job_id="j1"))) == (JobNotFound())
    fake.jobs["j1"] = app_module.Job(job_id="j1", group_id="g", start_time="t")
    view = _run(rebuild_status(fake, ctx, RebuildStatusParams(job_id="j1")))
    assert isinstance(view, JobView) and view.job_id == "j1" and view.status == "running"
    assert _run(close(fake, ctx, NoParams())) == Closed()
    assert ctx.shutdown_requested


def test_an_unknown_recovery_strategy_is_refused_before_the_app_is_asked() -> None:
    fake = _fake_app("healthy", None)
    with pytest.raises(RequestError, match="Unknown strategy: nope"):
        _run(recover(fake, FakeContext(), RecoverParams(strategy="nope")))
    assert fake.recovered == []


def test_describing_the_methods_builds_no_app(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a ServiceApp was built to describe the methods")

    # Before the table was static, build_registry(None) built ServiceApp(Config.from_env()).
    monkeypatch.setattr(app_module.ServiceApp, "__init__", refuse)
    described = build_registry(None)
    assert described.names() == [d.name for d in METHODS]
    assert len(set(described.names())) == len(METHODS)
    spec = described.get("knowledge_close")
    assert spec is not None and spec.exempt and spec.scope == "admin"
    # A described method has no app to run on: calling it is a programming error, said so.
    with pytest.raises(RuntimeError, match="describes methods only"):
        _run(spec.handler(FakeContext(), NoParams()))


def test_binding_passes_the_app_to_every_handler() -> None:
    fake = _fake_app("initializing", "opening")
    bound = build_registry(fake)
    assert bound.names() == [d.name for d in METHODS]
    health = bound.get("health_check")
    assert health is not None
    result = _run(health.handler(FakeContext(), NoParams()))
    assert result == Health(ok=False, healthy=False, state="initializing", reason="opening")
    for d in METHODS:
        spec = bound.get(d.name)
        assert spec is not None
        assert (spec.scope, spec.params, spec.streaming, spec.exempt, spec.writes) == (
            d.scope,
            d.params,
            d.streaming,
            d.exempt,
            d.writes,
        )
