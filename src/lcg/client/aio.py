"""``AsyncClient``: the asyncio client, one Unix-socket connection, calls serialized on it."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Awaitable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec

from lcg.client.codec import (
    LINE_LIMIT,
    answer,
    decode_line,
    health_verdict,
    is_progress,
    request_line,
)
from lcg.client.errors import TransportError
from lcg.client.shortcuts import ProgressCallback, Shortcuts
from lcg.client.sockets import check_listening, default_socket

__all__ = ["AsyncClient"]


class AsyncClient(Shortcuts[Awaitable[Any]]):
    """An asyncio client on one Unix-socket connection; calls on it are serialized."""

    def __init__(
        self, socket_path: str | os.PathLike[str] | None = None, *, timeout: float | None = 60.0
    ) -> None:
        """Talk to ``socket_path`` (default: the workspace's socket); ``timeout`` per read."""
        self.socket_path = Path(socket_path) if socket_path is not None else default_socket()
        self.timeout = timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()
        self._ids = itertools.count(1)

    async def connect(self) -> None:
        """Open the connection now (``call`` does it when needed)."""
        if self._writer is not None:
            return
        try:
            self._reader, self._writer = await asyncio.open_unix_connection(
                str(self.socket_path), limit=LINE_LIMIT
            )
        except OSError as exc:
            raise TransportError(f"cannot connect to {self.socket_path}: {exc}") from exc

    async def close(self) -> None:
        """Close the connection (the client may be used again: it reconnects)."""
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass

    async def __aenter__(self) -> AsyncClient:
        """Use as an async context manager that closes the connection."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the connection."""
        await self.close()

    async def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Call ``method``; with ``on_progress``, ask for progress frames and pass each on."""
        async with self._lock:
            if self._reader is not None and (
                self._reader.at_eof() or (self._writer is not None and self._writer.is_closing())
            ):
                await self.close()  # the service closed it while idle (ADR 0153)
            await self.connect()
            assert self._reader is not None and self._writer is not None
            rid = next(self._ids)
            try:
                self._writer.write(request_line(rid, method, params, on_progress is not None))
                await self._writer.drain()
                while True:
                    line = await asyncio.wait_for(self._reader.readline(), self.timeout)
                    if not line:
                        raise TransportError(f"the service at {self.socket_path} hung up")
                    if not line.strip():
                        continue
                    msg = decode_line(line)
                    if is_progress(msg):
                        if on_progress is not None:
                            outcome = on_progress(msg)
                            if asyncio.iscoroutine(outcome):
                                await outcome
                        continue
                    return answer(msg, rid)
            except (OSError, ValueError, msgspec.DecodeError, TimeoutError, TransportError) as exc:
                await self.close()
                if isinstance(exc, TransportError):
                    raise
                raise TransportError(
                    f"call {method} to {self.socket_path} failed: {exc!r}"
                ) from exc

    async def wait_ready(self, timeout: float = 30.0, *, starting: bool = False) -> dict[str, Any]:
        """Poll ``health_check`` until healthy (returns it); raises if degraded or on timeout.

        A socket that does not exist, or that nothing listens on, fails at once unless
        ``starting`` (the caller has just started the service, which binds it soon).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.01
        while True:
            try:
                result = await self.health_check()
                if health_verdict(result):
                    return dict(result)
            except TransportError:
                if not starting:
                    check_listening(self.socket_path)
            if loop.time() >= deadline:
                raise TransportError(
                    f"the service at {self.socket_path} is not ready after {timeout:g} s"
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)
