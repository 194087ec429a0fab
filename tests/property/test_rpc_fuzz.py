"""Fuzz the socket server: malformed lines and parameter sets against one running server.

Every generated line must get exactly the answers prescribed (one response; none for a blank
line; a request without ``id`` is answered too, as the reference requires), every answer must be a
well-formed response, and the server must keep the one connection open throughout.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rpc_testapp as T

# Methods that answer promptly whatever their params (the blocking, sleeping, streaming,
# state-changing and closing test methods are left out on purpose).
SAFE_METHODS = [
    "health_check",
    "knowledge_status",
    "knowledge_echo",
    "knowledge_find_entities",
    "knowledge_add_episode",
    "knowledge_fail",
    "knowledge_query_cypher",
    "knowledge_bad_result",
]
PARAM_NAMES = [
    "query",
    "group_ids",
    "num_results",
    "name",
    "episode_body",
    "kind",
    "message",
    "_progress_token",
    "group_id",
]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=6,
)
params = (
    st.dictionaries(st.sampled_from(PARAM_NAMES) | st.text(max_size=6), json_values, max_size=5)
    | json_values
)
ids = (
    st.integers(min_value=-(2**31), max_value=2**31) | st.text(max_size=8) | st.none() | json_values
)
methods = st.sampled_from(SAFE_METHODS) | st.text(max_size=12) | json_scalars


@st.composite
def request_objects(draw: st.DrawFn) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        obj["jsonrpc"] = "2.0" if draw(st.integers(0, 5)) else draw(json_values)
    if draw(st.integers(0, 5)):
        obj["id"] = draw(ids)
    if draw(st.integers(0, 9)):
        obj["method"] = draw(methods)
    if draw(st.integers(0, 3)):
        obj["params"] = draw(params)
    if not draw(st.integers(0, 6)):
        obj[draw(st.text(max_size=5))] = draw(json_values)
    return obj


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 9))
    if kind <= 4:
        line = _dumps(draw(request_objects()))
    elif kind == 5:
        line = _dumps(draw(st.lists(request_objects(), max_size=5)))
    elif kind == 6:
        line = _dumps(draw(json_values))
    elif kind == 7:
        whole = _dumps(draw(request_objects()))
        line = whole[: draw(st.integers(0, max(0, len(whole) - 1)))]  # truncated JSON
    elif kind == 8:
        line = draw(st.binary(max_size=40))
    else:
        line = draw(st.text(max_size=40)).encode()
    return line.replace(b"\n", b" ")


def expected_answers(line: bytes) -> int:
    """How many answer lines JSON-RPC 2.0 prescribes for one request line."""
    # Any non-blank line is answered: bad JSON, a bad request, a request without id, a batch.
    return 0 if not line.strip() else 1


def check_response(obj: Any) -> None:
    assert isinstance(obj, dict), obj
    assert obj.get("jsonrpc") == "2.0", obj
    assert "id" in obj, obj
    assert ("result" in obj) != ("error" in obj), obj
    if "error" in obj:
        err = obj["error"]
        assert isinstance(err["code"], int) and isinstance(err["message"], str), obj
        assert set(err) <= {"code", "message", "data"}, obj


class Conn:
    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rb")
        self.sentinels = 0

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture(scope="module")
def conn() -> Iterator[Conn]:
    with T.short_tmpdir() as d:
        path = d / "fuzz.sock"
        srv = T.ThreadedServer(T.TestApp(), path).start()
        c = Conn(path)
        try:
            yield c
        finally:
            c.close()
            srv.stop()


# A pool of awkward parameter values for the cheap per-example mutations below.
POOL: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63 - 1,
    1.5,
    "",
    "x" * 300,
    "\u2192",
    [],
    [1, "a"],
    {},
    {"nested": {"deep": [None]}},
    "liminis",
    ["g1", ""],
    "degraded",
    "boom",
]


def variants(obj: dict[str, Any], rnd: Any) -> list[bytes]:
    """Cheap derived lines: truncations, a flipped byte, a batch, mutated parameter sets."""
    whole = _dumps(obj)
    out = [whole]
    for _ in range(4):
        out.append(whole[: rnd.randrange(len(whole))])
    for _ in range(2):
        flipped = bytearray(whole)
        flipped[rnd.randrange(len(flipped))] = rnd.randrange(256)
        out.append(bytes(flipped))
    out.append(_dumps([obj, {"jsonrpc": "2.0", "method": "knowledge_echo"}, obj]))
    for _ in range(4):
        mutated = dict(obj)
        keys = rnd.sample(PARAM_NAMES, rnd.randrange(1, 4))
        mutated["params"] = {k: rnd.choice(POOL) for k in keys}
        if rnd.randrange(2):
            mutated.update(jsonrpc="2.0", id=rnd.randrange(10**6), method=rnd.choice(SAFE_METHODS))
        out.append(_dumps(mutated))
    return [line.replace(b"\n", b" ") for line in out]


def test_fuzzed_lines_each_get_their_answer(conn: Conn) -> None:
    sent = [0]

    @settings(
        max_examples=220,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        st.lists(request_objects(), min_size=4, max_size=4),
        st.lists(lines(), min_size=2, max_size=4),
        st.randoms(use_true_random=False),
    )
    def run(objs: list[dict[str, Any]], raw_lines: list[bytes], rnd: Any) -> None:
        batch = list(raw_lines)
        for obj in objs:
            batch.extend(variants(obj, rnd))
        conn.sentinels += 1
        sentinel = f"sentinel-{conn.sentinels}"
        payload = b"".join(line + b"\n" for line in batch)
        payload += _dumps({"jsonrpc": "2.0", "id": sentinel, "method": "health_check"}) + b"\n"
        conn.sock.sendall(payload)
        answers = 0
        while True:
            raw = conn.file.readline()
            assert raw, "the server closed the connection"
            obj = json.loads(raw)
            if isinstance(obj, dict) and obj.get("id") == sentinel:
                assert obj["result"]["state"] == "healthy"
                break
            if isinstance(obj, list):
                assert obj, "an empty batch answer"
                for item in obj:
                    check_response(item)
            else:
                check_response(obj)
            answers += 1
        assert answers == sum(expected_answers(line) for line in batch)
        sent[0] += len(batch)

    run()
    assert sent[0] >= 10_000, sent[0]
