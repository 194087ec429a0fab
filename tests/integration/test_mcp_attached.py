"""The attached backend's connection rules against small real socket servers."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg import errors as E
from lcg.rpc.errors import TransportError
from lcg.rpc.mcp_server import AttachedBackend
from lcg.rpc.registry import CallContext, MethodSpec


async def _unused(ctx: CallContext, params: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError("attached mode never calls handlers")


ECHO = MethodSpec("knowledge_echo", "read", _unused)
STREAM = MethodSpec("knowledge_stream", "admin", _unused, streaming=True)


@pytest.fixture
def sock() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="lcg-att-", dir="/tmp"))
    try:
        yield d / "s.sock"
    finally:
        shutil.rmtree(d, ignore_errors=True)


Behaviour = Callable[[asyncio.StreamReader, asyncio.StreamWriter, list[bytes]], Awaitable[None]]


async def _serve(path: Path, behaviour: Behaviour) -> tuple[asyncio.AbstractServer, list[bytes]]:
    received: list[bytes] = []

    async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await behaviour(reader, writer, received)
        finally:
            writer.close()

    return await asyncio.start_unix_server(on_conn, path=str(path)), received


async def _answer_then_close(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: list[bytes]
) -> None:
    line = await reader.readline()
    received.append(line)
    import json

    rid = json.loads(line)["id"]
    params = json.loads(line)["params"]
    writer.write(b'{"type":"progress","message":"one"}\n')
    writer.write(
        json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"params": params}}).encode() + b"\n"
    )
    await writer.drain()


async def _read_then_hang_up(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: list[bytes]
) -> None:
    received.append(await reader.readline())


async def _read_then_stay_silent(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: list[bytes]
) -> None:
    received.append(await reader.readline())
    await reader.read()  # until the client gives up and closes


def test_forwarding_injects_the_progress_token_and_redials(sock: Path) -> None:
    async def main() -> None:
        server, received = await _serve(sock, _answer_then_close)
        backend = AttachedBackend(sock, 5000)
        frames: list[dict[str, Any]] = []

        async def progress(frame: dict[str, Any]) -> None:
            frames.append(frame)

        first = await backend.call(STREAM, {"count": 1}, progress)
        assert first == {"params": {"count": 1, "_progress_token": True}}
        assert frames == [{"type": "progress", "message": "one"}]
        # The server hung up after answering: the next call notices and dials again.
        second = await backend.call(ECHO, {"a": 1}, None)
        assert second == {"params": {"a": 1}}
        assert backend.dials == 2 and len(received) == 2
        await backend.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())


def test_no_retry_once_the_request_was_written(sock: Path) -> None:
    async def main() -> None:
        server, received = await _serve(sock, _read_then_hang_up)
        backend = AttachedBackend(sock, 5000)
        with pytest.raises(TransportError, match="closed the connection before answering"):
            await backend.call(ECHO, {}, None)
        assert len(received) == 1  # sent exactly once: it may have run
        await backend.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())


def test_idle_timeout(sock: Path) -> None:
    async def main() -> None:
        server, received = await _serve(sock, _read_then_stay_silent)
        backend = AttachedBackend(sock, 50)
        with pytest.raises(TransportError, match="within 50 ms"):
            await backend.call(ECHO, {}, None)
        assert len(received) == 1
        await backend.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())


class _BrokenWriter:
    """Stands in for a connection whose peer vanished unnoticed: writing fails."""

    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        raise BrokenPipeError("peer gone")

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    async def wait_closed(self) -> None:
        pass


def test_one_retry_when_writing_fails(sock: Path) -> None:
    async def main() -> None:
        server, received = await _serve(sock, _answer_then_close)
        backend = AttachedBackend(sock, 5000)
        # A connection that looks alive but fails on write: the request cannot have run,
        # so it is sent again once on a fresh connection.
        backend._idle.append((asyncio.StreamReader(), _BrokenWriter()))  # type: ignore[arg-type]
        assert await backend.call(ECHO, {"x": 1}, None) == {"params": {"x": 1}}
        assert backend.dials == 1 and len(received) == 1
        await backend.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())


def test_errors_come_back_as_lcg_errors(sock: Path) -> None:
    async def reply_error(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: list[bytes]
    ) -> None:
        import json

        rid = json.loads(await reader.readline())["id"]
        err = {
            "code": -32001,
            "message": "DB unavailable, recovery required",
            "data": {"reason": "r"},
        }
        writer.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": err}).encode() + b"\n")
        await writer.drain()

    async def main() -> None:
        server, _ = await _serve(sock, reply_error)
        backend = AttachedBackend(sock, 5000)
        with pytest.raises(E.DegradedError):
            await backend.call(ECHO, {}, None)
        await backend.close()
        server.close()
        await server.wait_closed()
        with pytest.raises(TransportError, match="is not running"):
            await AttachedBackend(sock.with_name("none.sock"), 100).call(ECHO, {}, None)

    asyncio.run(main())


def test_concurrent_calls_use_separate_connections(sock: Path) -> None:
    async def main() -> None:
        both = asyncio.Event()
        seen: list[bytes] = []

        async def rendezvous(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: list[bytes]
        ) -> None:
            import json

            while line := await reader.readline():
                seen.append(line)
                if len(seen) == 2:
                    both.set()
                # Answers only once both calls are in: serialized calls would deadlock here.
                await asyncio.wait_for(both.wait(), 5)
                rid = json.loads(line)["id"]
                writer.write(
                    json.dumps({"jsonrpc": "2.0", "id": rid, "result": rid}).encode() + b"\n"
                )
                await writer.drain()

        server, _ = await _serve(sock, rendezvous)
        backend = AttachedBackend(sock, 5000)
        results = await asyncio.gather(backend.call(ECHO, {}, None), backend.call(ECHO, {}, None))
        assert sorted(results) == [1, 2] and backend.dials == 2
        # Both links went back to the pool: the next call reuses one.
        assert await backend.call(ECHO, {}, None) == 3 and backend.dials == 2
        await backend.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())
