"""JSON-RPC envelope parsing and encoding, and progress frames."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from lcg.rpc import _jsonrpc as J
from lcg.rpc.errors import WireError
from lcg.rpc.progress import MessageFrame, PassFrame, encode_frame, frame_fields, frame_message


@pytest.mark.parametrize(
    ("value", "code", "rid"),
    [
        (3, -32600, None),
        ("x", -32600, None),
        (None, -32600, None),
        ({"id": 1, "method": "m"}, -32600, 1),
        ({"jsonrpc": "1.0", "id": "a", "method": "m"}, -32600, "a"),
        ({"jsonrpc": "2.0", "id": 2}, -32600, 2),
        ({"jsonrpc": "2.0", "id": 2, "method": 5}, -32600, 2),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, -32600, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, -32600, None),
        ({"jsonrpc": "2.0", "id": [1], "method": "m"}, -32600, None),
        ({"jsonrpc": "2.0", "id": 7, "method": "m", "params": [1, 2]}, -32602, 7),
        ({"jsonrpc": "2.0", "id": 7, "method": "m", "params": "x"}, -32602, 7),
    ],
)
def test_invalid_requests(value: Any, code: int, rid: Any) -> None:
    parsed = J.parse_request(value)
    assert isinstance(parsed, J.Invalid)
    assert parsed.error.code == code
    assert parsed.id == rid
    assert not parsed.silent


def test_valid_requests_and_notifications() -> None:
    req = J.parse_request({"jsonrpc": "2.0", "id": "a", "method": "m", "params": {"x": 1}})
    assert isinstance(req, J.Request) and req.params == {"x": 1} and not req.is_notification
    omitted = J.parse_request({"jsonrpc": "2.0", "id": 1, "method": "m"})
    assert isinstance(omitted, J.Request) and omitted.params == {}
    null_params = J.parse_request({"jsonrpc": "2.0", "id": 1, "method": "m", "params": None})
    assert isinstance(null_params, J.Request) and null_params.params == {}
    null_id = J.parse_request({"jsonrpc": "2.0", "id": None, "method": "m"})
    assert isinstance(null_id, J.Request) and null_id.id is None and not null_id.is_notification
    # No id: answered with -32600 (the reference requires the key), never silent.
    for no_id in (
        {"jsonrpc": "2.0", "method": "m"},
        {"jsonrpc": "2.0", "method": "m", "params": [1]},
    ):
        note = J.parse_request(no_id)
        assert isinstance(note, J.Invalid) and not note.silent and note.id is None
        assert note.error.code == -32600 and '"id" is required' in note.error.message


def test_encoding() -> None:
    class R(msgspec.Struct):
        episode_uuid: str

    # As the server encodes a success (``server._item_encoder``; the line's newline is its own).
    assert json.loads(msgspec.json.encode(J.success(3, R("u")))) == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {"episode_uuid": "u"},
    }
    line = J.encode_error(None, WireError(-32700, "Parse error: x"))
    assert line.endswith(b"\n")
    assert json.loads(line) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: x"},
    }
    with_data = json.loads(J.encode_error("i", WireError(-32001, "m", {"reason": "r"})))
    assert with_data["error"]["data"] == {"reason": "r"}


def test_progress_frames() -> None:
    assert frame_fields(PassFrame(phase="scan", processed=1, total=4)) == {
        "type": "progress",
        "phase": "scan",
        "processed": 1,
        "total": 4,
        "total_mutations": 0,
    }
    assert list(frame_fields(MessageFrame(message="hi"))) == ["type", "message"]
    assert frame_fields({"type": "other", "message": "m"}) == {"type": "progress", "message": "m"}
    assert json.loads(encode_frame(MessageFrame(message="m"))) == {
        "type": "progress",
        "message": "m",
    }
    assert frame_message(MessageFrame(message="m")) == "m"
    assert frame_message(PassFrame(phase="p", processed=0, total=0)) is None
