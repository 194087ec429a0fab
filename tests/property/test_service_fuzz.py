"""Fuzz the REAL service (real app, real socket, real Kuzu; hash test embedder) over one
connection with 6,000 generated lines (10,000 under ``make test-deep``): malformed bytes,
non-request JSON, broken envelopes, unknown methods and random parameter sets for the
registered methods.

Properties: the server never dies; every line gets exactly one JSON-RPC answer (a sentinel
request after each line proves nothing extra was sent), echoing the id when it was a valid
one; and a call answered with an error appended no event (the stream's bytes are compared
before and after each such call — a random call can be a legitimately valid write, so only
error answers are held to "nothing appended").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _service_fixtures as sf
from _hypothesis_profiles import examples

LINES_PER_EXAMPLE = 20
#: 10,000 lines under the deep profile (``make test-deep``), 6,000 under ``make test``.
EXAMPLES = examples(500)

#: Not fuzzed here (covered by the conformance tests): they stop, reopen or replay the whole
#: workspace, write outside the stream root, or take no parameters and are slow.
EXCLUDED = {
    "knowledge_close", "knowledge_recover", "knowledge_recover_full",
    "knowledge_rebuild_from_wal", "knowledge_dump_wal", "knowledge_verify",
    "knowledge_clear_all", "knowledge_status", "knowledge_build_indices",
}  # fmt: skip


class Fuzzed:
    """The service under fuzz and its one connection."""

    def __init__(self, svc: sf.InProcessService, conn: sf.RawConnection) -> None:
        self.svc = svc
        self.conn = conn
        self.lines = 0
        self.errors_checked = 0
        self.successes = 0
        self.sentinels = 0
        self.ok_by_method: dict[str, int] = {}


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[Fuzzed]:
    from lcg import telemetry

    telemetry.set_sink(None, enabled=False)
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path, timeout=300) as conn:
        for name in ("Alpha", "Beta"):
            conn.result("knowledge_assert_entity", {"name": name})
        conn.result(
            "knowledge_assert_relationship",
            {"source_name": "Alpha", "target_name": "Beta", "predicate": "P"},
        )
        f = Fuzzed(svc, conn)
        yield f
        # the server is alive and well after everything
        assert svc.thread.is_alive()
        assert conn.result("health_check", {})["healthy"] is True
        print(
            f"\nfuzz: {f.lines} lines, {f.errors_checked} error answers checked for appends, "
            f"{f.successes} successful calls"
        )
        print("successful calls by method:", dict(sorted(f.ok_by_method.items())))


def _methods() -> tuple[list[str], dict[str, list[str]]]:
    from lcg.rpc.methods import build_registry
    from lcg.rpc.schema import field_docs

    names: list[str] = []
    params: dict[str, list[str]] = {}
    for spec in build_registry():
        if spec.name in EXCLUDED:
            continue
        names.append(spec.name)
        params[spec.name] = [doc.name for doc in field_docs(spec.params)]
    return names, params


METHODS, PARAMS = _methods()
#: add_episode has no required parameter, so nearly every random call is a valid (slow) write;
#: it is drawn a fifth as often as the others.
WEIGHTED = [m for m in METHODS for _ in range(1 if m == "knowledge_add_episode" else 5)]

#: Values parameters take: a fixed pool of awkward ones (drawing from a pool keeps generation
#: fast enough for 10,000 lines), plus short random text.
VALUE_POOL: list[Any] = [
    None, True, False, 0, 1, -1, 7, 2**31, -(2**63), 2**70, 0.5, -3.25, 1e300, "", " ", "\t",
    "x", "liminis", "g2", "Alpha", "Beta", "P", "0", "true", "null", "2024-01-01T00:00:00Z",
    "2024-01-01 00:00:00", "not a time", "\u0000", "\u00e9t\u00e9", "\ud83d\ude80", "a" * 300,
    "MATCH (e:Entity) RETURN e.name", "CREATE (:Entity {uuid: 'x'})", "../../etc", "%2F",
    [], [None], [1, 2], ["liminis"], ["", "x"], ["liminis", 3], [[1]], [{}], {}, {"uuid": "x"},
    {"source_group_id": "g2", "endpoint_name": "Beta"}, {"uuid": 1}, {"a": {"b": [1]}},
]  # fmt: skip
scalars = st.one_of(st.sampled_from(VALUE_POOL), st.text(max_size=8))
values = scalars
valid_ids = st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(max_size=6))
bad_ids = st.sampled_from([0.5, -1.25, True, False, [1], {"a": 1}, 2.5])


@st.composite
def param_sets(draw: st.DrawFn) -> dict[str, Any]:
    """A request for a registered method with random parameters."""
    method = draw(st.sampled_from(WEIGHTED))
    names = PARAMS[method] + ["_progress_token", "group_ids", "group_id"]
    keys = draw(st.lists(st.sampled_from(names) | st.text(max_size=6), max_size=5, unique=True))
    params: Any = {k: draw(values) for k in keys}
    if draw(st.integers(0, 19)) == 0:
        params = draw(values)  # params that are not an object
    return {"jsonrpc": "2.0", "id": draw(valid_ids), "method": method, "params": params}


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    """An object with a valid id and some broken or random envelope."""
    msg: dict[str, Any] = {"id": draw(valid_ids)}
    jsonrpc = draw(st.one_of(st.just("2.0"), st.just("1.0"), values))
    if draw(st.booleans()):
        msg["jsonrpc"] = jsonrpc
    if draw(st.booleans()):
        msg["method"] = draw(
            st.one_of(
                st.text(max_size=20), values, st.sampled_from(["knowledge_", "health_check "])
            )
        )
    if draw(st.booleans()):
        msg["params"] = draw(values)
    return msg


@st.composite
def lines(draw: st.DrawFn) -> tuple[bytes, Any]:
    """One line to send and the id its answer must carry (``...`` = any id)."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        raw = draw(st.binary(min_size=1, max_size=40))
        raw = raw.replace(b"\n", b" ")
        if not raw.strip():
            raw = b"x" + raw
        if raw.lstrip()[:1] in (b"{", b"["):
            raw = b"?" + raw  # keep it unparseable (a valid object could be a notification)
        return raw, None
    if kind == 1:
        text = draw(st.text(max_size=30)).replace("\n", " ")
        return ("{" + text).encode("utf-8", "surrogatepass"), None
    if kind == 2:
        value = draw(st.one_of(scalars, st.lists(scalars, max_size=4)))
        if isinstance(value, dict):
            value = [value]  # an object here could be a notification; keep it answerable
        return json.dumps(value).encode(), None
    if kind == 3:
        msg = {"jsonrpc": "2.0", "id": draw(bad_ids), "method": "health_check", "params": {}}
        return json.dumps(msg).encode(), None
    if kind == 4:
        msg = draw(envelopes())
        return json.dumps(msg).encode(), msg["id"]
    if kind == 5:
        msg = {"jsonrpc": "2.0", "id": draw(valid_ids),
               "method": draw(st.text(max_size=30)), "params": draw(values)}  # fmt: skip
        return json.dumps(msg).encode(), msg["id"]
    msg = draw(param_sets())
    return json.dumps(msg).encode(), msg["id"]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],  # fmt: skip
)
@given(batch=st.lists(lines(), min_size=LINES_PER_EXAMPLE, max_size=LINES_PER_EXAMPLE))
def test_fuzz_real_service(fuzzed: Fuzzed, batch: list[tuple[bytes, Any]]) -> None:
    conn, wal = fuzzed.conn, fuzzed.svc.config.wal_dir
    for line, want_id in batch:
        before = sf.stream_bytes(wal)
        conn.send_line(line)
        fuzzed.sentinels += 1
        sentinel = f"sentinel-{fuzzed.sentinels}"
        conn.send_line(json.dumps(
            {"jsonrpc": "2.0", "id": sentinel, "method": "lcg_fuzz_sentinel", "params": {}}
        ).encode())  # fmt: skip
        answers = []
        while True:
            msg = conn.read_message()
            if isinstance(msg, dict) and msg.get("type") == "progress":
                continue  # progress frames are not answers
            if isinstance(msg, dict) and msg.get("id") == sentinel:
                assert msg["error"]["code"] == -32601, msg
                break
            answers.append(msg)
        assert len(answers) == 1, (line, answers)
        answer = answers[0]
        fuzzed.lines += 1
        items = answer if isinstance(answer, list) else [answer]
        for item in items:
            assert item.get("jsonrpc") == "2.0", (line, item)
            assert ("result" in item) != ("error" in item), (line, item)
            if "error" in item:
                err = item["error"]
                assert isinstance(err["code"], int) and isinstance(err["message"], str), item
                assert err["code"] != -32603, (line, item)  # no internal errors
        if not isinstance(answer, list):
            if want_id is not None:
                assert answer["id"] == want_id, (line, answer)
            if "error" in answer:
                fuzzed.errors_checked += 1
                assert sf.stream_bytes(wal) == before, (
                    f"an event was appended by a rejected call: {line!r} -> {answer}"
                )
            else:
                fuzzed.successes += 1
                method = str(json.loads(line).get("method"))
                fuzzed.ok_by_method[method] = fuzzed.ok_by_method.get(method, 0) + 1
