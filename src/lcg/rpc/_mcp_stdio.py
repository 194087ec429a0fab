"""MCP over stdio where every request line is answered.

The SDK's stdio reader validates each line with pydantic and, when that fails, hands the
exception to the session, which logs it and answers nothing: a client that sent a lone
surrogate escape (``"\\ud800"`` in a tool argument), a line that is not JSON, or an envelope
that is not JSON-RPC waited forever. ``AnsweringStdin`` sits between stdin and that reader:
a line the reader would drop is answered here, on the server's own write stream, with
-32602 (a lone surrogate: the request's id, where the string is), -32700 (not JSON) or
-32600 (not a JSON-RPC message; the id when it can be read, else null, as JSON-RPC 2.0
says). Blank lines are skipped; the lines the SDK can read pass through unchanged.
"""

from __future__ import annotations

import io
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from lcg.rpc import _jsonrpc as J
from lcg.rpc.errors import WireError, invalid_request

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

__all__ = ["AnsweringStdin"]


class _BorrowedText(io.TextIOWrapper):
    """A text layer over stdin's buffer that never closes it (the process's own)."""

    def close(self) -> None:
        try:
            self.detach()
        except ValueError:
            pass  # already detached


class AnsweringStdin:
    """The stdin lines for ``mcp.server.stdio.stdio_server(stdin=...)``; the lines it would
    leave unanswered are answered on the stream given to ``answer_on``."""

    def __init__(self) -> None:
        text = _BorrowedText(sys.stdin.buffer, encoding="utf-8", errors="replace")
        self._lines = anyio.wrap_file(text)
        self._write: MemoryObjectSendStream[SessionMessage] | None = None

    def answer_on(self, write: MemoryObjectSendStream[SessionMessage]) -> None:
        """The server's write stream (known once ``stdio_server`` has opened it)."""
        self._write = write

    def __aiter__(self) -> AsyncIterator[str]:
        return self._gate()

    async def _gate(self) -> AsyncIterator[str]:
        import mcp_types as mt

        async for line in self._lines:
            if not line.strip():
                continue  # blank lines are no requests (as on the socket)
            try:
                mt.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except Exception as exc:  # noqa: BLE001 - whatever the SDK would drop is answered
                await self._answer(line, exc)
                continue
            yield line

    async def _answer(self, line: str, exc: Exception) -> None:
        import mcp_types as mt
        from mcp.shared.message import SessionMessage

        rid, error = _refusal(line, exc)
        if self._write is None:  # not serving yet: nothing to answer on
            print(f"lcg mcp: {error.message}", file=sys.stderr)
            return
        message = mt.JSONRPCError(
            jsonrpc="2.0", id=rid, error=mt.ErrorData(code=error.code, message=error.message)
        )
        try:
            await self._write.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the server is closing: nobody reads answers any more


def _refusal(line: str, exc: Exception) -> tuple[J.Id, WireError]:
    """The id and error that answer a line the SDK refused (``exc``)."""
    data = line.encode("utf-8", "surrogatepass")
    try:
        value: Any = J.decode_line(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as decode_exc:
        return J.undecodable(data, decode_exc)
    if not isinstance(value, dict):
        return None, invalid_request("expected a JSON-RPC 2.0 message (an object)")
    raw_id = value.get("id")
    rid = raw_id if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return rid, invalid_request(f"not a JSON-RPC 2.0 message ({ascii(detail)[1:-1]})")
