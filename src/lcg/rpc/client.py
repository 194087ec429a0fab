"""Python clients for the service: ``Client`` (blocking) and ``AsyncClient`` (asyncio).

Both speak what any client of the reference speaks: one JSON-RPC line per request on the Unix
socket, bare progress lines before the answer of a streaming call. Errors come back as
``RemoteError`` subclasses that are also the matching ``lcg.errors`` classes
(``DegradedError``, ``MethodNotFoundError``, ``InvalidParamsError``, ...); a socket that
cannot be reached or hangs up raises ``TransportError``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import select
import socket
import stat
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, TypeVar

import msgspec

from lcg.rpc.errors import (
    DEGRADED,
    DEGRADED_MESSAGE,
    RemoteDegradedError,
    TransportError,
    from_wire,
)

__all__ = [
    "LINE_LIMIT",
    "AsyncClient",
    "Client",
    "ProgressCallback",
    "check_socket",
    "probe_service",
]

#: Called with each progress frame (a dict with ``type: "progress"``).
ProgressCallback = Callable[[dict[str, Any]], Any]

R = TypeVar("R")

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
#: The longest *response* line a client of the service reads (this client, attached MCP);
#: requests are bounded by the server's ``Limits.max_request_bytes`` instead.
LINE_LIMIT = 64 * 1024 * 1024


def _default_socket() -> Path:
    from lcg.config import Config

    return Config.from_env().socket_path


def _request_line(rid: int, method: str, params: Mapping[str, Any] | None, stream: bool) -> bytes:
    body = dict(params or {})
    if stream:
        body.setdefault("_progress_token", True)
    return _encoder.encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": body}) + b"\n"


def _is_progress(msg: Any) -> bool:
    return isinstance(msg, dict) and msg.get("type") == "progress" and "jsonrpc" not in msg


def _answer(msg: Any, rid: int) -> Any:
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        raise TransportError(f"unexpected line from the service: {msg!r:.200}")
    err = msg.get("error")
    # An error with id null answers what the service could not attribute to a request
    # (a line too long or unfinished, a connection given up mid-line): it answers this call too.
    if msg.get("id") != rid and not (msg.get("id") is None and err is not None):
        raise TransportError(f"answer for id {msg.get('id')!r} while waiting for id {rid}")
    if err is not None:
        if not isinstance(err, dict):
            raise TransportError(f"malformed error object: {err!r:.200}")
        raise from_wire(int(err.get("code", -32000)), str(err.get("message", "")), err.get("data"))
    return msg.get("result")


def _health_verdict(result: Any) -> bool:
    """True when healthy; raises when degraded; False while initializing."""
    if not isinstance(result, dict):
        raise TransportError(f"health_check answered {result!r:.200}")
    state = result.get("state")
    if state == "healthy" or (state is None and result.get("healthy") is True):
        return True
    if state == "degraded":
        reason = result.get("reason")
        raise RemoteDegradedError(DEGRADED, DEGRADED_MESSAGE, {"reason": reason})
    return False


def check_socket(path: Path) -> None:
    """Raise ``TransportError`` saying why ``path`` is no service socket (nothing if it is one).

    Only the path's kind is examined (no connection is made): missing → "no such file", not a
    socket → "not a socket". Callers use it to fail at once instead of waiting for a service
    that cannot be there.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise TransportError(
            f"no such file: {path} (no service socket there; start one with `lcg serve` in "
            "its workspace, or pass the socket of a running one)"
        ) from None
    except OSError as exc:
        raise TransportError(f"cannot reach {path}: {exc.strerror or exc}") from None
    if not stat.S_ISSOCK(mode):
        raise TransportError(f"{path} is not a socket (a service socket is .lcg/service.sock)")


def probe_service(path: Path, timeout: float = 10.0) -> dict[str, Any]:
    """The ``health_check`` answer of the service on ``path``; ``TransportError`` saying why
    there is none (no such file, not a socket, nothing listening, no answer)."""
    _check_listening(path)
    with Client(path, timeout=timeout) as client:
        result = client.health_check()
    if not isinstance(result, dict):
        raise TransportError(f"{path} answered health_check with {result!r:.200}")
    return result


def _check_listening(path: Path) -> None:
    """Raise at once when ``path`` cannot be a service: missing, no socket, or nobody listens."""
    check_socket(path)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except ConnectionRefusedError:
        raise TransportError(
            f"nothing listens on {path} (a service that stopped left it; start `lcg serve`)"
        ) from None
    except OSError:
        pass  # busy or slow: keep polling until the timeout
    finally:
        probe.close()


def _params(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


class _Surface(ABC, Generic[R]):
    """Typed wrappers for the main methods, shared by both clients."""

    @abstractmethod
    def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> R:
        """Call ``method`` with ``params``; the result, or a ``RemoteError``."""

    def health_check(self) -> R:
        """``health_check``: ``{ok, healthy, state, reason?}``."""
        return self.call("health_check")

    def status(self) -> R:
        """``knowledge_status``: the service and stream status."""
        return self.call("knowledge_status")

    def process_chunk(
        self,
        chunk_text: str,
        chunk_id: str,
        source_file: str,
        *,
        group_id: str | None = None,
        reference_time: str | None = None,
    ) -> R:
        """``knowledge_process_chunk``: ingest one chunk of a source file."""
        return self.call(
            "knowledge_process_chunk",
            _params(
                chunk_text=chunk_text,
                chunk_id=chunk_id,
                source_file=source_file,
                group_id=group_id,
                reference_time=reference_time,
            ),
        )

    def add_episode(
        self,
        name: str,
        episode_body: str,
        *,
        source: str | None = None,
        source_description: str | None = None,
        reference_time: str | None = None,
        group_id: str | None = None,
    ) -> R:
        """``knowledge_add_episode``: ingest one episode."""
        return self.call(
            "knowledge_add_episode",
            _params(
                name=name,
                episode_body=episode_body,
                source=source,
                source_description=source_description,
                reference_time=reference_time,
                group_id=group_id,
            ),
        )

    def assert_entity(
        self,
        name: str,
        *,
        entity_uuid: str | None = None,
        group_id: str | None = None,
        labels: list[str] | None = None,
        summary: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> R:
        """``knowledge_assert_entity``: create or update an entity by name or uuid."""
        return self.call(
            "knowledge_assert_entity",
            _params(
                name=name,
                entity_uuid=entity_uuid,
                group_id=group_id,
                labels=labels,
                summary=summary,
                attributes=dict(attributes) if attributes is not None else None,
            ),
        )

    def assert_relationship(
        self,
        source_name: str,
        target_name: str,
        predicate: str,
        *,
        group_id: str | None = None,
        fact: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        relation_type: str | None = None,
        valid_at: str | None = None,
    ) -> R:
        """``knowledge_assert_relationship``: upsert an edge between two named entities."""
        return self.call(
            "knowledge_assert_relationship",
            _params(
                source_name=source_name,
                target_name=target_name,
                predicate=predicate,
                group_id=group_id,
                fact=fact,
                attributes=dict(attributes) if attributes is not None else None,
                relation_type=relation_type,
                valid_at=valid_at,
            ),
        )

    def find_entities(
        self, query: str, *, group_ids: list[str] | None = None, num_results: int | None = None
    ) -> R:
        """``knowledge_find_entities``: ``{nodes, count}``."""
        return self.call(
            "knowledge_find_entities",
            _params(query=query, group_ids=group_ids, num_results=num_results),
        )

    def find_relationships(
        self, query: str, *, group_ids: list[str] | None = None, num_results: int | None = None
    ) -> R:
        """``knowledge_find_relationships``: ``{facts, count}``."""
        return self.call(
            "knowledge_find_relationships",
            _params(query=query, group_ids=group_ids, num_results=num_results),
        )

    def search_passages(
        self,
        query: str,
        *,
        group_ids: list[str] | None = None,
        num_results: int | None = None,
        min_score: float | None = None,
        fusion: str | None = None,
        as_of: str | None = None,
        valid_after: str | None = None,
        valid_before: str | None = None,
        recency_half_life_days: float | None = None,
    ) -> R:
        """``knowledge_search_passages``: ``{passages, count}`` (unset: the service's default)."""
        return self.call(
            "knowledge_search_passages",
            _params(
                query=query,
                group_ids=group_ids,
                num_results=num_results,
                min_score=min_score,
                fusion=fusion,
                as_of=as_of,
                valid_after=valid_after,
                valid_before=valid_before,
                recency_half_life_days=recency_half_life_days,
            ),
        )


class Client(_Surface[Any]):
    """A blocking client on one Unix-socket connection (opened on first use, re-opened after
    a failure)."""

    def __init__(
        self, socket_path: str | os.PathLike[str] | None = None, *, timeout: float | None = 60.0
    ) -> None:
        """Talk to ``socket_path`` (default: the workspace's socket); ``timeout`` per read."""
        self.socket_path = Path(socket_path) if socket_path is not None else _default_socket()
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._file: Any = None
        self._ids = itertools.count(1)

    def connect(self) -> None:
        """Open the connection now (``call`` does it when needed)."""
        if self._sock is not None:
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.socket_path))
        except OSError as exc:
            sock.close()
            raise TransportError(f"cannot connect to {self.socket_path}: {exc}") from exc
        self._sock = sock
        self._file = sock.makefile("rb")

    def _drop_if_hung_up(self) -> None:
        """Forget a connection the service has closed since the last answer (an idle one may
        be closed, ADR 0153): with no request outstanding, anything to read is a hang-up."""
        if self._sock is None:
            return
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (OSError, ValueError):
            readable = [self._sock]
        if readable:
            self.close()

    def close(self) -> None:
        """Close the connection (the client may be used again: it reconnects)."""
        if self._file is not None:
            self._file.close()
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._file = None

    def __enter__(self) -> Client:
        """Use as a context manager that closes the connection."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the connection."""
        self.close()

    def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Call ``method``; with ``on_progress``, ask for progress frames and pass each on."""
        self._drop_if_hung_up()
        rid = next(self._ids)
        request = _request_line(rid, method, params, on_progress is not None)
        try:
            for attempt in (1, 2):
                self.connect()
                assert self._sock is not None
                try:
                    self._sock.sendall(request)
                    break
                except (BrokenPipeError, ConnectionResetError):
                    # The service hung up before reading the request; its last line, when
                    # there is one, says why. Without one it closed the connection as idle
                    # just now: the request cannot have run, so it is sent again, once.
                    last = self._file.readline(LINE_LIMIT)
                    if last.strip():
                        return _answer(_decoder.decode(last), rid)
                    self.close()
                    if attempt == 2:
                        raise
            assert self._sock is not None
            while True:
                line = self._file.readline(LINE_LIMIT)
                if not line:
                    raise TransportError(f"the service at {self.socket_path} hung up")
                if not line.strip():
                    continue
                msg = _decoder.decode(line)
                if _is_progress(msg):
                    if on_progress is not None:
                        on_progress(msg)
                    continue
                return _answer(msg, rid)
        except (OSError, msgspec.DecodeError, TransportError) as exc:
            # The connection's state is unknown after a failure: start afresh next time.
            self.close()
            if isinstance(exc, TransportError):
                raise
            raise TransportError(f"call {method} to {self.socket_path} failed: {exc}") from exc

    def wait_ready(self, timeout: float = 30.0, *, starting: bool = False) -> dict[str, Any]:
        """Poll ``health_check`` until healthy (returns it); raises if degraded or on timeout.

        A socket that does not exist, or that nothing listens on, fails at once unless
        ``starting`` (the caller has just started the service, which binds it soon).
        """
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            try:
                result = self.health_check()
                if _health_verdict(result):
                    return dict(result)
            except TransportError:
                if not starting:
                    _check_listening(self.socket_path)
            if time.monotonic() >= deadline:
                raise TransportError(
                    f"the service at {self.socket_path} is not ready after {timeout:g} s"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


class AsyncClient(_Surface[Awaitable[Any]]):
    """An asyncio client on one Unix-socket connection; calls on it are serialized."""

    def __init__(
        self, socket_path: str | os.PathLike[str] | None = None, *, timeout: float | None = 60.0
    ) -> None:
        """Talk to ``socket_path`` (default: the workspace's socket); ``timeout`` per read."""
        self.socket_path = Path(socket_path) if socket_path is not None else _default_socket()
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
                self._writer.write(_request_line(rid, method, params, on_progress is not None))
                await self._writer.drain()
                while True:
                    line = await asyncio.wait_for(self._reader.readline(), self.timeout)
                    if not line:
                        raise TransportError(f"the service at {self.socket_path} hung up")
                    if not line.strip():
                        continue
                    msg = _decoder.decode(line)
                    if _is_progress(msg):
                        if on_progress is not None:
                            outcome = on_progress(msg)
                            if asyncio.iscoroutine(outcome):
                                await outcome
                        continue
                    return _answer(msg, rid)
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
                if _health_verdict(result):
                    return dict(result)
            except TransportError:
                if not starting:
                    _check_listening(self.socket_path)
            if loop.time() >= deadline:
                raise TransportError(
                    f"the service at {self.socket_path} is not ready after {timeout:g} s"
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)
