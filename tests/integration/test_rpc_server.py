"""The JSON-RPC socket server over a real Unix socket, with the test App (rpc_testapp.py)."""

from __future__ import annotations

import io
import json
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rpc_testapp as T
from lcg import telemetry
from lcg.errors import ConfigError

_OPEN: list[Raw] = []


@pytest.fixture(autouse=True)
def _close_raw_connections() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()
    import gc

    gc.collect()


class Raw:
    """A raw client: bytes out, one decoded JSON line in (closed after each test)."""

    def __init__(self, path: Path) -> None:
        _OPEN.append(self)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rb")

    def send(self, data: bytes | dict[str, Any] | list[Any]) -> None:
        if not isinstance(data, bytes):
            data = json.dumps(data).encode() + b"\n"
        self.sock.sendall(data)

    def line(self) -> Any:
        raw = self.file.readline()
        assert raw, "connection closed"
        return json.loads(raw)

    def call(self, method: str, params: dict[str, Any] | None = None, rid: Any = 1) -> Any:
        req: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            req["params"] = params
        self.send(req)
        return self.line()

    def at_eof(self) -> bool:
        return self.file.readline() == b""

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture
def tmpdir_short() -> Iterator[Path]:
    with T.short_tmpdir() as d:
        yield d


@pytest.fixture
def served(tmpdir_short: Path) -> Iterator[tuple[Any, Any, Path]]:
    app = T.TestApp()
    path = tmpdir_short / "s.sock"
    srv = T.ThreadedServer(app, path).start()
    try:
        yield app, srv, path
    finally:
        srv.call_soon(app.release.set)
        srv.stop()


def req(method: str, rid: Any = 1, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def test_socket_is_0600(served: tuple[Any, Any, Path]) -> None:
    _, _, path = served
    mode = os.stat(path).st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


def test_parse_error_keeps_the_connection(served: tuple[Any, Any, Path]) -> None:
    raw = Raw(served[2])
    raw.send(b"{not json\n")
    err = raw.line()
    assert err["id"] is None and err["error"]["code"] == -32700
    assert err["error"]["message"].startswith("Parse error: ")
    assert raw.call("knowledge_echo", {"a": 1})["result"]["params"] == {"a": 1}


def test_blank_lines_are_ignored_and_params_may_be_omitted(served: tuple[Any, Any, Path]) -> None:
    raw = Raw(served[2])
    raw.send(b"\n   \n\t\r\n")
    answer = raw.call("knowledge_echo", None, rid="x")
    assert answer == {"jsonrpc": "2.0", "id": "x", "result": {"params": {}, "request_id": "x"}}


@pytest.mark.parametrize(
    ("line", "code", "rid"),
    [
        (b"42\n", -32600, None),
        (b'"str"\n', -32600, None),
        (b'{"id": 3, "method": "knowledge_echo"}\n', -32600, 3),
        (b'{"jsonrpc": "2.0", "id": 4}\n', -32600, 4),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "knowledge_echo"}\n', -32600, None),
        (b'{"jsonrpc": "2.0", "id": 5, "method": "knowledge_echo", "params": [1]}\n', -32602, 5),
        (b'{"jsonrpc": "2.0", "id": 6, "method": "knowledge_nope", "params": {}}\n', -32601, 6),
        (b"[]\n", -32600, None),
    ],
)
def test_invalid_requests_get_errors(
    served: tuple[Any, Any, Path], line: bytes, code: int, rid: Any
) -> None:
    raw = Raw(served[2])
    raw.send(line)
    answer = raw.line()
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] == rid
    assert answer["error"]["code"] == code
    assert "result" not in answer


def test_unknown_method_names_the_method(served: tuple[Any, Any, Path]) -> None:
    answer = Raw(served[2]).call("knowledge_nope", {})
    assert answer["error"] == {
        "code": -32601,
        "message": "IPC error: Method not found: knowledge_nope",
    }


def test_a_request_without_id_is_answered(served: tuple[Any, Any, Path]) -> None:
    """The reference requires ``id`` and answers its absence (§1.1): nothing is left hanging."""
    raw = Raw(served[2])
    for value in (
        {"jsonrpc": "2.0", "method": "knowledge_echo", "params": {}},
        {"jsonrpc": "2.0", "method": "knowledge_nope"},
        {"jsonrpc": "2.0", "method": "knowledge_echo", "params": [1]},
    ):
        raw.send(value)
        answer = raw.line()
        assert answer["id"] is None and answer["error"]["code"] == -32600, answer
        assert '"id" is required' in answer["error"]["message"]
    assert raw.call("knowledge_echo", {}, rid=9)["id"] == 9


def test_batches(served: tuple[Any, Any, Path]) -> None:
    raw = Raw(served[2])
    raw.send(
        [
            req("knowledge_echo", 1, a=1),
            {"jsonrpc": "2.0", "method": "knowledge_echo"},
            req("knowledge_nope", 2),
            7,
            req("knowledge_add_episode", 3, name="n", episode_body="b"),
        ]
    )
    answers = raw.line()
    assert [a["id"] for a in answers] == [1, None, 2, None, 3]
    assert answers[0]["result"]["params"] == {"a": 1}
    assert answers[1]["error"]["code"] == -32600  # no id: answered, as the reference
    assert answers[2]["error"]["code"] == -32601
    assert answers[3]["error"]["code"] == -32600
    assert answers[4]["result"] == {"episode_uuid": "uuid-n", "name": "n"}
    raw.send([{"jsonrpc": "2.0", "method": "knowledge_echo"}] * 3)
    assert [a["error"]["code"] for a in raw.line()] == [-32600] * 3
    assert raw.call("knowledge_echo", {}, rid="after")["id"] == "after"


def test_progress_frames_come_before_the_response(served: tuple[Any, Any, Path]) -> None:
    raw = Raw(served[2])
    raw.send(req("knowledge_stream", 1, count=3, _progress_token="tok"))
    lines = [raw.line() for _ in range(5)]
    assert [ln.get("type") for ln in lines[:4]] == ["progress"] * 4
    assert all("jsonrpc" not in ln for ln in lines[:4])
    assert [ln.get("processed") for ln in lines[:3]] == [1, 2, 3]
    assert lines[3] == {"type": "progress", "message": "done"}
    assert lines[4] == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"frames": 4, "progress_enabled": True},
    }
    # No token (or a null one): no frames; the handler sees progress disabled.
    raw.send(req("knowledge_stream", 2, count=3, _progress_token=None))
    assert raw.line() == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"frames": 4, "progress_enabled": False},
    }
    # A non-streaming method ignores the token; the handler never sees it.
    raw.send(req("knowledge_echo", 3, _progress_token=True, a=1))
    assert raw.line()["result"]["params"] == {"a": 1}


def test_requests_on_one_connection_are_sequential_connections_concurrent(
    served: tuple[Any, Any, Path],
) -> None:
    app, srv, path = served
    a, b = Raw(path), Raw(path)
    # Pipelined on one connection: answered in order, the second after the first finished.
    a.send(req("knowledge_block", 1, _progress_token=True) | {})
    a.send(req("knowledge_echo", 2))
    assert a.line() == {"type": "progress", "message": "blocked"}
    # Another connection is served while `a` is blocked.
    assert b.call("knowledge_echo", {"from": "b"})["result"]["params"] == {"from": "b"}
    srv.call_soon(app.release.set)
    assert a.line() == {"type": "progress", "message": "released"}
    assert a.line()["id"] == 1
    assert a.line()["id"] == 2


def test_degraded_guard_and_exemptions(served: tuple[Any, Any, Path]) -> None:
    raw = Raw(served[2])
    assert raw.call("knowledge_set_state", {"state": "degraded", "reason": "lbug_wal_corrupt"})[
        "result"
    ]
    answer = raw.call("knowledge_echo", {})
    assert answer["error"] == {
        "code": -32001,
        "message": "DB unavailable, recovery required",
        "data": {"reason": "lbug_wal_corrupt"},
    }
    assert raw.call("health_check")["result"] == {
        "ok": False,
        "healthy": False,
        "state": "degraded",
        "reason": "lbug_wal_corrupt",
    }
    assert raw.call("knowledge_status")["result"]["state"] == "degraded"
    # Unknown methods stay -32601 even while degraded.
    assert raw.call("knowledge_nope")["error"]["code"] == -32601
    raw.call("knowledge_set_state", {"state": "healthy"})
    assert "result" in raw.call("knowledge_echo", {})


def test_initializing_waits_for_readiness(tmpdir_short: Path) -> None:
    path = tmpdir_short / "s.sock"
    app = T.TestApp(gate=__import__("asyncio").Event())
    srv = T.ThreadedServer(app, path).start()
    try:
        # Bound before open(): exempt methods answer at once.
        probe = Raw(path)
        assert probe.call("health_check")["result"]["state"] == "initializing"
        waiting = Raw(path)
        waiting.send(req("knowledge_echo", 5, a=1))
        assert probe.call("health_check")["result"]["state"] == "initializing"
        srv.call_soon(app.gate.set)
        assert waiting.line()["result"]["params"] == {"a": 1}
        assert probe.call("health_check")["result"]["state"] == "healthy"
    finally:
        srv.stop()


def test_initializing_times_out_with_degraded(tmpdir_short: Path) -> None:
    path = tmpdir_short / "s.sock"
    app = T.TestApp(gate=__import__("asyncio").Event())
    srv = T.ThreadedServer(app, path, ready_timeout_s=0.05).start()
    try:
        answer = Raw(path).call("knowledge_echo", {})
        assert answer["error"]["code"] == -32001
        assert answer["error"]["data"]["reason"].startswith("initializing")
    finally:
        srv.stop()


def test_failed_open_degrades(tmpdir_short: Path) -> None:
    path = tmpdir_short / "s.sock"
    srv = T.ThreadedServer(T.TestApp(fail_open=True), path).start()
    try:
        raw = Raw(path)
        answer = raw.call("knowledge_echo", {})
        assert answer["error"]["code"] == -32001
        assert "test projections are broken" in answer["error"]["data"]["reason"]
    finally:
        srv.stop()


def test_unencodable_result_is_an_internal_error(served: tuple[Any, Any, Path]) -> None:
    raw = Raw(served[2])
    answer = raw.call("knowledge_bad_result", {})
    assert answer["error"]["code"] == -32603
    assert raw.call("knowledge_echo", {})["result"]["params"] == {}


def test_client_gone_mid_stream_aborts_the_call_only(served: tuple[Any, Any, Path]) -> None:
    app, srv, path = served
    gone = Raw(path)
    gone.send(req("knowledge_block", 1, _progress_token=True))
    assert gone.line()["message"] == "blocked"
    gone.close()
    srv.call_soon(app.release.set)
    other = Raw(path)
    assert "result" in other.call("knowledge_echo", {})
    assert other.call("health_check")["result"]["state"] == "healthy"


def test_stale_socket_is_replaced_and_a_live_one_refused(tmpdir_short: Path) -> None:
    path = tmpdir_short / "s.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays: a stale socket
    assert path.exists()
    srv = T.ThreadedServer(T.TestApp(), path).start()
    try:
        assert Raw(path).call("health_check")["result"]["state"] == "healthy"
        with pytest.raises(ConfigError, match="already listening"):
            T.ThreadedServer(T.TestApp(), path).start()
        # The refused server's probe was a connection too: a later round trip means the live
        # server has taken it in, so stopping now does not race its accept.
        assert Raw(path).call("health_check")["result"]["state"] == "healthy"
    finally:
        srv.stop()
    assert not path.exists()


def test_the_socket_file_appears_already_listening(tmpdir_short: Path) -> None:
    from lcg.rpc.server import _listening_socket

    path = tmpdir_short / "s.sock"
    sock = _listening_socket(path)
    try:
        # Bound elsewhere, listening, then linked: a connect succeeds before any accept, and
        # no temporary name is left beside it.
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(path))
        client.close()
        assert sorted(p.name for p in tmpdir_short.iterdir()) == ["s.sock"]
        # A file someone else put there first is never replaced.
        with pytest.raises(FileExistsError):
            _listening_socket(path)
        assert sorted(p.name for p in tmpdir_short.iterdir()) == ["s.sock"]
    finally:
        sock.close()


def test_a_non_socket_file_is_not_removed(tmpdir_short: Path) -> None:
    path = tmpdir_short / "s.sock"
    path.write_text("keep me")
    with pytest.raises(ConfigError, match="not a socket"):
        T.ThreadedServer(T.TestApp(), path).start()
    assert path.read_text() == "keep me"


def test_close_answers_then_stops_and_telemetry(tmpdir_short: Path) -> None:
    sink = io.BytesIO()
    telemetry.set_sink(sink)
    path = tmpdir_short / "s.sock"
    app = T.TestApp()
    srv = T.ThreadedServer(app, path).start()
    raw = Raw(path)
    assert raw.call("knowledge_echo", {}, rid=11)["result"]
    assert raw.call("knowledge_fail", {"kind": "invalid"}, rid=12)["error"]["code"] == -32602
    assert raw.call("knowledge_close", {}, rid=13)["result"] == {"status": "closed"}
    assert raw.at_eof()
    srv.stop()
    assert app.closed and not path.exists()
    records = [json.loads(x) for x in sink.getvalue().splitlines()]
    calls = [
        (r["method"], r["request_id"], r["success"]) for r in records if r["type"] == "ipc_call"
    ]
    assert calls == [
        ("knowledge_echo", 11, True),
        ("knowledge_fail", 12, False),
        ("knowledge_close", 13, True),
    ]
    # As the reference's telemetry (lcg-api.md §8.2): duration_ms an integer; service_state
    # only its documented states, an absent reason or detail absent rather than null.
    assert all(type(r["duration_ms"]) is int for r in records if r["type"] == "ipc_call")
    states = [(r["state"], r.get("detail")) for r in records if r["type"] == "service_state"]
    assert [st for st, _ in states] == ["healthy", "shutting_down", "stopped"]
    for r in records:
        if r["type"] == "service_state":
            assert r["state"] in {"degraded", "healthy", "shutting_down", "stopped"}, r
            assert None not in r.values(), r
    notices = [r["kind"] for r in records if r["type"] == "service_notice"]
    assert notices == ["initializing"]
    # The close call itself may still be in flight when the drain starts, or already done.
    assert states[-1][1] in ({"drained": 0, "cancelled": 0}, {"drained": 1, "cancelled": 0})


def test_shutdown_drains_an_in_flight_call(tmpdir_short: Path) -> None:
    path = tmpdir_short / "s.sock"
    app = T.TestApp()
    srv = T.ThreadedServer(app, path).start()
    busy, idle = Raw(path), Raw(path)
    assert "result" in idle.call("knowledge_echo", {})
    busy.send(req("knowledge_block", 1, _progress_token=True))
    assert busy.line()["message"] == "blocked"
    srv.call_soon(srv.server.request_shutdown)
    assert idle.at_eof()  # idle connections are closed at once
    srv.call_soon(app.release.set)
    assert busy.line()["message"] == "released"
    assert busy.line() == {"jsonrpc": "2.0", "id": 1, "result": {"released": True}}
    assert busy.at_eof()
    srv.stop()
    assert (srv.result.drained, srv.result.cancelled) == (1, 0)
    assert app.closed and not path.exists()


def test_shutdown_cancels_calls_past_the_timeout(tmpdir_short: Path) -> None:
    path = tmpdir_short / "s.sock"
    app = T.TestApp()
    srv = T.ThreadedServer(app, path, shutdown_timeout_ms=50).start()
    busy = Raw(path)
    busy.send(req("knowledge_block", 1, _progress_token=True))
    assert busy.line()["message"] == "blocked"
    srv.call_soon(srv.server.request_shutdown)
    assert busy.at_eof()  # cancelled: no answer
    srv.stop()
    assert (srv.result.drained, srv.result.cancelled) == (0, 1)
    assert app.block_finished == 0 and app.closed
