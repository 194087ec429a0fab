"""The Python clients (sync and asyncio) against a real server with the test App."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rpc_testapp as T
from lcg import errors as E
from lcg.client import AsyncClient, Client, RemoteError, TransportError


@pytest.fixture
def served() -> Iterator[tuple[Any, Any, Path]]:
    with T.short_tmpdir() as d:
        app = T.TestApp()
        path = d / "s.sock"
        srv = T.ThreadedServer(app, path).start()
        try:
            yield app, srv, path
        finally:
            srv.stop()


@pytest.mark.parametrize(
    ("kind", "cls", "code"),
    [
        ("degraded", E.DegradedError, -32001),
        ("invalid", E.InvalidParamsError, -32602),
        ("method", E.MethodNotFoundError, -32601),
        ("config", E.ConfigError, -32000),
        ("projection", E.ProjectionError, -32000),
        ("generation", E.GenerationError, -32000),
        ("notfound", RemoteError, -32000),
        ("boom", RemoteError, -32603),
    ],
)
def test_client_maps_errors(served: tuple[Any, Any, Path], kind: str, cls: type, code: int) -> None:
    with Client(served[2]) as client:
        with pytest.raises(cls) as info:
            client.call("knowledge_fail", {"kind": kind, "message": "why"})
        err = info.value
        assert isinstance(err, RemoteError) and isinstance(err, E.LcgError)
        assert err.code == code
        assert "why" in err.message or code == -32001
        # The connection is still usable after an error answer.
        assert client.call("knowledge_echo", {"a": 1})["params"] == {"a": 1}


def test_degraded_error_keeps_the_reason(served: tuple[Any, Any, Path]) -> None:
    with Client(served[2]) as client:
        client.call("knowledge_set_state", {"state": "degraded", "reason": "migration_failed"})
        with pytest.raises(E.DegradedError) as info:
            client.call("knowledge_echo")
        assert info.value.data == {"reason": "migration_failed"}  # type: ignore[attr-defined]
        with pytest.raises(E.DegradedError):
            client.wait_ready(timeout=5)


def test_unknown_method(served: tuple[Any, Any, Path]) -> None:
    with Client(served[2]) as client, pytest.raises(E.MethodNotFoundError, match="knowledge_nope"):
        client.call("knowledge_nope")


def test_typed_wrappers_and_progress(served: tuple[Any, Any, Path]) -> None:
    frames: list[dict[str, Any]] = []
    with Client(served[2]) as client:
        assert client.health_check()["state"] == "healthy"
        assert client.status()["running"] is True
        assert client.find_entities("ada", group_ids=["g"])["query"] == "ada"
        assert client.add_episode("n", "body") == {"episode_uuid": "uuid-n", "name": "n"}
        result = client.call("knowledge_stream", {"count": 2}, on_progress=frames.append)
        assert result == {"frames": 3, "progress_enabled": True}
        assert [f["type"] for f in frames] == ["progress"] * 3
        assert frames[-1] == {"type": "progress", "message": "done"}


def test_wait_ready_fails_at_once_on_a_missing_or_dead_socket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_waiting(seconds: float) -> None:
        raise AssertionError(f"wait_ready slept {seconds} s for a socket that cannot answer")

    # Failing "at once" means before the first pause between polls.
    monkeypatch.setattr(time, "sleep", no_waiting)
    monkeypatch.setattr(asyncio, "sleep", no_waiting)
    with T.short_tmpdir() as d:
        missing = d / "missing.sock"
        with pytest.raises(TransportError, match=f"no such file: {missing}"):
            Client(missing).wait_ready(timeout=3)
        with pytest.raises(TransportError, match="no such file"):
            asyncio.run(AsyncClient(missing).wait_ready(timeout=3))
        # A file that is no socket, and a socket nobody listens on (a stopped service's).
        plain = d / "plain.sock"
        plain.write_text("")
        with pytest.raises(TransportError, match="is not a socket"):
            Client(plain).wait_ready(timeout=3)
        stale = d / "stale.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(stale))
        listener.close()  # bound, never listening: connecting is refused
        with pytest.raises(TransportError, match="nothing listens on"):
            Client(stale).wait_ready(timeout=3)


def test_wait_ready_polls_until_healthy() -> None:
    with T.short_tmpdir() as d:
        path = d / "s.sock"
        # Nothing listens yet: a short wait for a service being started times out.
        with pytest.raises(TransportError, match="not ready"):
            Client(path).wait_ready(timeout=0.05, starting=True)
        app = T.TestApp(gate=asyncio.Event())
        srv = T.ThreadedServer(app, path).start()
        try:
            client = Client(path)
            with pytest.raises(TransportError, match="not ready"):
                client.wait_ready(timeout=0.05)  # initializing
            srv.call_soon(app.gate.set)
            assert client.wait_ready(timeout=10)["state"] == "healthy"
            client.close()
        finally:
            srv.stop()


def test_client_reconnects_after_the_service_restarts() -> None:
    with T.short_tmpdir() as d:
        path = d / "s.sock"
        srv = T.ThreadedServer(T.TestApp(), path).start()
        client = Client(path)
        assert client.call("knowledge_echo")["params"] == {}
        srv.stop()
        with pytest.raises(TransportError):
            client.call("knowledge_echo")
        srv = T.ThreadedServer(T.TestApp(), path).start()
        try:
            assert client.call("knowledge_echo", {"again": True})["params"] == {"again": True}
        finally:
            client.close()
            srv.stop()


def test_reference_style_raw_client(served: tuple[Any, Any, Path]) -> None:
    """A client written as the reference's Getting Started page writes one."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(served[2]))
    reader = sock.makefile("r")

    def rpc(method: str, params: dict[str, Any], rid: int) -> Any:
        sock.sendall(
            (
                json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n"
            ).encode()
        )
        return json.loads(reader.readline())["result"]

    try:
        assert rpc("health_check", {}, 1)["healthy"] is True
        assert rpc("knowledge_find_entities", {"query": "x"}, 2)["count"] == 0
        assert rpc("knowledge_status", {}, 3)["running"] is True
    finally:
        reader.close()
        sock.close()


def test_async_client(served: tuple[Any, Any, Path]) -> None:
    async def main() -> None:
        async with AsyncClient(served[2]) as client:
            assert (await client.wait_ready(timeout=5))["state"] == "healthy"
            assert (await client.find_entities("q"))["query"] == "q"
            frames: list[dict[str, Any]] = []

            async def on_progress(frame: dict[str, Any]) -> None:
                frames.append(frame)

            result = await client.call("knowledge_stream", {"count": 1}, on_progress=on_progress)
            assert result["frames"] == 2 and len(frames) == 2
            with pytest.raises(E.InvalidParamsError):
                await client.call("knowledge_fail", {"kind": "invalid"})
            # Concurrent calls on one client are serialized, each gets its own answer.
            answers = await asyncio.gather(
                *(client.call("knowledge_echo", {"i": i}) for i in range(5))
            )
            assert [a["params"]["i"] for a in answers] == list(range(5))

    asyncio.run(main())
