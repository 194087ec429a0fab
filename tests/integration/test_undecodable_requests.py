"""Every request line is answered, over ``lcg mcp`` stdio and over the socket (issue 23 item 8).

A lone surrogate escape (``"\\ud800"``) in a tools/call argument was never answered by
``lcg mcp``: the SDK's reader dropped the line it could not validate, and the client waited
forever. Now such a line gets -32602 with its own id and where the string is; a line that is
not JSON gets -32700, one that is not JSON-RPC -32600, and the session goes on. The socket
answers the same -32602 with the request's id (it said "-32700 Input data was truncated",
id null). Real ``lcg mcp`` and ``lcg serve`` subprocesses, raw lines.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import IO, Any

import _service_fixtures as sf

SURROGATE_CALL = (
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"knowledge_find_entities",'
    '"arguments":{"query":"\\ud800"}}}'
)
PAIR_CALL = (
    '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"knowledge_find_entities",'
    '"arguments":{"query":"\\ud83d\\ude00"}}}'
)


class _Lines:
    """The answers a subprocess writes on stdout, one JSON value per line."""

    def __init__(self, out: IO[bytes]) -> None:
        self._q: queue.Queue[bytes] = queue.Queue()
        self.thread = threading.Thread(target=self._pump, args=(out,), daemon=True)
        self.thread.start()

    def _pump(self, out: IO[bytes]) -> None:
        for line in out:
            self._q.put(line)

    def next(self) -> Any:
        return json.loads(self._q.get(timeout=120))


def test_lcg_mcp_answers_every_line() -> None:
    with sf.temp_workspace("lcg-mcp-") as ws, (ws / "mcp.log").open("wb") as log:
        proc = subprocess.Popen(
            [str(sf.LCG), "-C", str(ws), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=sf.serve_env(),
            cwd=str(ws),
        )
        assert proc.stdin is not None and proc.stdout is not None
        answers = _Lines(proc.stdout)

        def send(line: str, *, answered: bool = True) -> Any:
            assert proc.stdin is not None
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
            return answers.next() if answered else None

        try:
            init = send(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-06-18",
                            "capabilities": {},
                            "clientInfo": {"name": "test", "version": "1"},
                        },
                    }
                )
            )
            assert init["id"] == 1 and "result" in init
            send('{"jsonrpc":"2.0","method":"notifications/initialized"}', answered=False)

            lone = send(SURROGATE_CALL)
            assert lone["id"] == 2
            assert lone["error"]["code"] == -32602
            message = lone["error"]["message"]
            assert "params.arguments.query holds a lone UTF-16 surrogate" in message

            not_json = send("{not json")
            assert (not_json["id"], not_json["error"]["code"]) == (None, -32700)
            not_rpc = send('{"jsonrpc":"2.0","id":4,"method":5}')
            assert (not_rpc["id"], not_rpc["error"]["code"]) == (4, -32600)
            send("", answered=False)  # a blank line is no request: the next answer is id 5

            # The session goes on, and a proper surrogate pair is an ordinary character.
            listed = send('{"jsonrpc":"2.0","id":5,"method":"tools/list"}')
            assert listed["id"] == 5 and listed["result"]["tools"]
            pair = send(PAIR_CALL)
            assert pair["id"] == 6 and pair["result"]["isError"] is False
        finally:
            proc.stdin.close()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)
            answers.thread.join(30)  # the pipe's end reached: then it can be closed
            proc.stdout.close()


def test_the_socket_answers_a_lone_surrogate_with_its_id() -> None:
    with sf.temp_workspace("lcg-sur-") as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            with sf.RawConnection(sock) as conn:
                conn.send_line(
                    b'{"jsonrpc":"2.0","id":7,"method":"knowledge_find_entities",'
                    b'"params":{"query":"\\udc00"}}'
                )
                answer = conn.read_message()
                assert answer["id"] == 7
                assert answer["error"]["code"] == -32602
                assert "params.query holds a lone UTF-16 surrogate" in answer["error"]["message"]
                conn.send_line(b'{"jsonrpc":"2.0","id":8,"method":"knowledge_find_entities"')
                truncated = conn.read_message()
                assert (truncated["id"], truncated["error"]["code"]) == (None, -32700)
                assert conn.result("knowledge_find_entities", {"query": "\U0001f600"})
        finally:
            assert sf.stop_serve(proc, sock) == 0
