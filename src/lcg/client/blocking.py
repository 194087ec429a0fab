"""``Client``: the blocking client, one Unix-socket connection, and ``probe_service``."""

from __future__ import annotations

import itertools
import os
import select
import socket
import time
from collections.abc import Mapping
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

__all__ = ["Client", "probe_service"]


class Client(Shortcuts[Any]):
    """A blocking client on one Unix-socket connection (opened on first use, re-opened after
    a failure)."""

    def __init__(
        self, socket_path: str | os.PathLike[str] | None = None, *, timeout: float | None = 60.0
    ) -> None:
        """Talk to ``socket_path`` (default: the workspace's socket); ``timeout`` per read."""
        self.socket_path = Path(socket_path) if socket_path is not None else default_socket()
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
        request = request_line(rid, method, params, on_progress is not None)
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
                        return answer(decode_line(last), rid)
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
                msg = decode_line(line)
                if is_progress(msg):
                    if on_progress is not None:
                        on_progress(msg)
                    continue
                return answer(msg, rid)
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
                if health_verdict(result):
                    return dict(result)
            except TransportError:
                if not starting:
                    check_listening(self.socket_path)
            if time.monotonic() >= deadline:
                raise TransportError(
                    f"the service at {self.socket_path} is not ready after {timeout:g} s"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def probe_service(path: Path, timeout: float = 10.0) -> dict[str, Any]:
    """The ``health_check`` answer of the service on ``path``; ``TransportError`` saying why
    there is none (no such file, not a socket, nothing listening, no answer)."""
    check_listening(path)
    with Client(path, timeout=timeout) as client:
        result = client.health_check()
    if not isinstance(result, dict):
        raise TransportError(f"{path} answered health_check with {result!r:.200}")
    return result
