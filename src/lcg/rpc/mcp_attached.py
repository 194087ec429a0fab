"""Attached MCP's backend: each tool call forwarded as JSON-RPC to a running service.

The socket is dialled when a call finds no open connection, so an MCP server started before
its service (editors launch them at login) answers ``initialize`` and ``tools/list`` from the
static method table, fails each call with what to start, and reaches the service once it is
up. Lines are read with an idle timeout (``LCG_ATTACHED_CALL_TIMEOUT_MS``, re-armed by
progress lines); a request is retried once, only when writing it failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from lcg.client import LINE_LIMIT, RemoteError, TransportError, from_wire, probe_service
from lcg.errors import LcgError
from lcg.rpc.progress import ProgressFn

if TYPE_CHECKING:
    from lcg.rpc.registry import MethodSpec

__all__ = ["AttachedBackend", "dial_once", "not_running", "running_service"]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


_Link = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _close_link(link: _Link) -> None:
    link[1].close()
    with contextlib.suppress(OSError, RuntimeError):
        await link[1].wait_closed()


def not_running(socket_path: Path, exc: OSError) -> str:
    """Why nothing serves on ``socket_path``, and how to start the service."""
    if isinstance(exc, FileNotFoundError):
        why = "no socket file there"
    elif isinstance(exc, ConnectionRefusedError):
        why = "nothing listens on it"
    else:
        why = str(exc.strerror or exc)
    return (
        f"the service at {socket_path} is not running ({why}); start it with `lcg serve` "
        "(or `liminis-context-graph`) in its workspace; the next call connects to it"
    )


def dial_once(socket_path: Path) -> OSError | None:
    """``None`` when something accepts a connection on ``socket_path``, else the error."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(socket_path))
    except OSError as exc:
        return exc
    finally:
        probe.close()
    return None


def running_service(socket_path: Path) -> bool:
    """Whether a service answers ``health_check`` on ``socket_path`` (briefly asked)."""
    if dial_once(socket_path) is not None:
        return False
    try:
        probe_service(socket_path, timeout=2.0)
    except LcgError:
        return False
    return True


class AttachedBackend:
    """Forwards calls as JSON-RPC lines to a running service's socket.

    Connections are pooled: a call takes an idle one (or dials), and gives it back only
    after a complete answer, so concurrent tool calls run concurrently on the service and a
    connection in an unknown state (timeout, cancellation, broken) is never reused.
    """

    def __init__(self, socket_path: str | os.PathLike[str], timeout_ms: int) -> None:
        """Forward to ``socket_path``; ``timeout_ms`` is the idle limit for each line read."""
        self.socket_path = Path(socket_path)
        self.timeout_ms = timeout_ms
        self._idle: list[_Link] = []
        self._ids = itertools.count(1)
        #: How many connections were opened (tests read it).
        self.dials = 0

    async def _checkout(self) -> _Link:
        while self._idle:
            link = self._idle.pop()
            if not link[0].at_eof() and not link[1].is_closing():
                return link
            # The service hung up since the last call (restarted, or shut down).
            await _close_link(link)
        try:
            link = await asyncio.open_unix_connection(str(self.socket_path), limit=LINE_LIMIT)
        except OSError as exc:
            # Dialled on every call that finds no open link: a service started after this
            # MCP server (editors launch it at login) is reached by the next call.
            raise TransportError(not_running(self.socket_path, exc)) from exc
        self.dials += 1
        return link

    async def close(self) -> None:
        """Close every idle connection."""
        while self._idle:
            await _close_link(self._idle.pop())

    async def call(
        self,
        spec: MethodSpec,
        args: dict[str, Any],
        progress: ProgressFn | None,
        request_id: str | int | None = None,
    ) -> Any:
        """Forward one call and return the service's result (its error re-raised)."""
        params = dict(args)
        if spec.streaming:
            params["_progress_token"] = True
        rid = next(self._ids)
        request = {"jsonrpc": "2.0", "id": rid, "method": spec.name, "params": params}
        link = await self._send(_encoder.encode(request) + b"\n")
        try:
            result = await self._receive(link[0], rid, progress)
        except RemoteError:
            self._idle.append(link)  # a complete (error) answer: the link is in a known state
            raise
        except BaseException:
            await _close_link(link)
            raise
        self._idle.append(link)
        return result

    async def _send(self, line: bytes) -> _Link:
        # Retry once, and only here: a request that failed to be written cannot have run.
        for attempt in (1, 2):
            link = await self._checkout()
            try:
                link[1].write(line)
                await link[1].drain()
                return link
            except (ConnectionError, OSError, RuntimeError) as exc:
                await _close_link(link)
                if attempt == 2:
                    raise TransportError(
                        f"cannot send the request to {self.socket_path}: {exc}"
                    ) from exc
        raise AssertionError("unreachable")

    async def _receive(
        self, reader: asyncio.StreamReader, rid: int, progress: ProgressFn | None
    ) -> Any:
        idle = self.timeout_ms / 1000
        while True:
            try:
                raw = await asyncio.wait_for(reader.readline(), idle)
            except TimeoutError:
                raise TransportError(
                    f"no answer from the service at {self.socket_path} within "
                    f"{self.timeout_ms} ms (LCG_ATTACHED_CALL_TIMEOUT_MS): it is busy, hung or "
                    "still starting; `lcg status` in its workspace says which"
                ) from None
            except (ConnectionError, ValueError) as exc:
                raise TransportError(
                    f"the connection to the service at {self.socket_path} broke: {exc}"
                ) from exc
            if not raw:
                raise TransportError(
                    f"the service at {self.socket_path} closed the connection before answering"
                )
            if not raw.strip():
                continue
            try:
                msg = _decoder.decode(raw)
            except msgspec.DecodeError as exc:
                raise TransportError(f"unreadable line from the service: {exc}") from exc
            if isinstance(msg, dict) and msg.get("type") == "progress" and "jsonrpc" not in msg:
                if progress is not None:
                    await progress(msg)
                continue
            if not isinstance(msg, dict) or msg.get("id") != rid:
                raise TransportError(f"unexpected answer from the service: {msg!r:.200}")
            err = msg.get("error")
            if isinstance(err, dict):
                raise from_wire(
                    int(err.get("code", -32000)), str(err.get("message", "")), err.get("data")
                )
            return msg.get("result")
