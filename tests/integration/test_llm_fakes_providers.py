"""The LLM extractors against FAKE providers on loopback: a fake Anthropic Messages API (the
real ``anthropic`` SDK pointed at its ``base_url``) and a fake OpenAI-compatible chat endpoint
over HTTP and over a Unix socket. Then a cassette recorded against the fakes is replayed with
the fakes stopped.

The fakes are test doubles at the LLM boundary only: real sockets, real HTTP, the real SDK.
"""

from __future__ import annotations

import io
import json
import re
import socketserver
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lcg import telemetry
from lcg.errors import CassetteError, ExtractionError
from lcg.extract.anthropic_extractor import AnthropicExtractor
from lcg.extract.cassette import RecordingExtractor, ReplayExtractor, failures_path
from lcg.extract.extractor import ExtractionOutput, Extractor, ExtractRequest
from lcg.extract.ontology import load_ontology_file
from lcg.extract.openai_extractor import OpenAICompatExtractor

APOLLO_ONTOLOGY = Path(__file__).resolve().parents[2] / "examples/apollo/ontology.yaml"

Reply = tuple[int, Any]  # (HTTP status, JSON body)
Responder = Callable[[str, dict[str, Any]], Reply]


# --- a fake "model": deterministic answers derived from the prompt --------------------------

_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b")


def _section(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    return m.group(1) if m else ""


def fake_entities(user: str) -> list[dict[str, Any]]:
    body = _section(user, "TEXT") or _section(user, "CURRENT MESSAGE") or _section(user, "JSON")
    names = list(dict.fromkeys(_NAME.findall(body)))
    return [{"name": n, "entity_type": "Person", "summary": f"{n} is named."} for n in names]


def fake_edges(user: str) -> list[dict[str, Any]]:
    names = [line[2:] for line in _section(user, "ENTITIES").splitlines() if line.startswith("- ")]
    return [
        {
            "source_name": a,
            "target_name": b,
            "fact": f"{a} works with {b}",
            "relation_type": "works with",
            "valid_at": None,
        }
        for a, b in zip(names, names[1:], strict=False)
    ]


def fake_types(user: str) -> list[str]:
    return ["Person" for line in user.splitlines() if re.match(r"\d+\. ", line)]


def fake_answer(kind: str, user: str) -> dict[str, Any]:
    if kind == "extract_entities":
        return {"entities": fake_entities(user)}
    if kind == "extract_edges":
        return {"edges": fake_edges(user)}
    return {"types": fake_types(user)}


# --- fake servers ---------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: Any
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        fake: FakeServer = self.server.fake
        status, payload = fake.handle(self.path, dict(self.headers), body)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class FakeServer:
    """FAKE LLM PROVIDER: answers from a queue of scripted replies, then from ``default``."""

    def __init__(self, default: Responder, *, uds: Path | None = None) -> None:
        self.default = default
        self.script: list[Reply | Responder] = []
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server: socketserver.BaseServer
        if uds is not None:
            self._server = _UnixHTTPServer(str(uds), _Handler)
            self.url = f"unix:{uds}"
        else:
            server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
            server.daemon_threads = True
            self._server = server
            self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def handle(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append((path, headers, body))
            step = self.script.pop(0) if self.script else None
        if step is None:
            return self.default(path, body)
        if callable(step):
            return step(path, body)
        return step

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [b for _, _, b in self.requests]


def anthropic_message(
    model: str,
    tool: str,
    tool_input: Any,
    *,
    stop_reason: str = "tool_use",
    usage: tuple[int, int] = (100, 20),
) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "tool_use", "id": "toolu_fake", "name": tool, "input": tool_input}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def anthropic_brain(path: str, body: dict[str, Any]) -> Reply:
    assert path == "/v1/messages", path
    tool = body["tool_choice"]["name"]
    kind = {"extract_entities": "extract_entities", "extract_edges": "extract_edges"}.get(
        tool, "classify"
    )
    user = body["messages"][0]["content"]
    return 200, anthropic_message(body["model"], tool, fake_answer(kind, user))


def anthropic_error(status: int, kind: str = "rate_limit_error") -> Reply:
    return status, {"type": "error", "error": {"type": kind, "message": f"fake {status}"}}


def chat_completion(content: str, *, finish_reason: str = "stop", model: str = "local") -> Reply:
    return 200, {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


def _oai_kind(system: str) -> str:
    if '{"entities"' in system:
        return "extract_entities"
    if '{"edges"' in system:
        return "extract_edges"
    return "classify"


def openai_brain(path: str, body: dict[str, Any]) -> Reply:
    assert path == "/v1/chat/completions", path
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    return chat_completion(json.dumps(fake_answer(_oai_kind(system), user)), model=body["model"])


# --- fixtures -------------------------------------------------------------------------------


class Events:
    """Telemetry records emitted during a test, decoded on demand."""

    def __init__(self, sink: io.BytesIO) -> None:
        self._sink = sink

    def of(self, kind: str) -> list[dict[str, Any]]:
        records = [json.loads(line) for line in self._sink.getvalue().splitlines()]
        return [r for r in records if r["type"] == kind]


@pytest.fixture
def events() -> Iterator[Events]:
    sink = io.BytesIO()
    telemetry.set_sink(sink, enabled=True)
    yield Events(sink)
    telemetry.set_sink(None, enabled=False)


@pytest.fixture
def anthropic_fake() -> Iterator[FakeServer]:
    server = FakeServer(anthropic_brain)
    yield server
    server.stop()


@pytest.fixture
def openai_fake() -> Iterator[FakeServer]:
    server = FakeServer(openai_brain)
    yield server
    server.stop()


@pytest.fixture
def openai_uds_fake(tmp_path: Path) -> Iterator[FakeServer]:
    server = FakeServer(openai_brain, uds=tmp_path / "llm.sock")
    yield server
    server.stop()


class SleepLog:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make_anthropic(
    fake: FakeServer, *, model: str = "claude-haiku-4-5-20251001", **kw: Any
) -> AnthropicExtractor:
    kw.setdefault("sleep", SleepLog())
    return AnthropicExtractor.from_spec(model, api_key="test-key", base_url=fake.url, **kw)


def req(body: str, **kw: Any) -> ExtractRequest:
    kw.setdefault("group_id", "g")
    kw.setdefault("reference_time", "2026-01-01T00:00:00Z")
    kw.setdefault("chunk_key", "chunk-1")
    return ExtractRequest(body=body, **kw)


# --- Anthropic ------------------------------------------------------------------------------


def test_anthropic_forced_tool_use_extracts_entities_then_edges(
    anthropic_fake: FakeServer, events: Events
) -> None:
    ex = make_anthropic(anthropic_fake)
    try:
        out = ex.extract(req("Ada Lovelace met Charles Babbage in London."))
    finally:
        ex.close()
    assert [e.name for e in out.entities] == ["Ada Lovelace", "Charles Babbage", "London"]
    assert [(e.source_name, e.target_name, e.relation_type) for e in out.edges] == [
        ("Ada Lovelace", "Charles Babbage", "WORKS_WITH"),
        ("Charles Babbage", "London", "WORKS_WITH"),
    ]
    assert out.calls == 2 and out.input_tokens == 200 and out.output_tokens == 40
    # claude-haiku-4-5 list prices: $1 / $5 per million tokens.
    assert out.cost_usd == pytest.approx((200 * 1.0 + 40 * 5.0) / 1e6)
    assert out.model == "claude-haiku-4-5-20251001"
    (_, h1, ent_req), (_, _, edge_req) = anthropic_fake.requests
    assert h1["Authorization"] == "Bearer test-key"
    assert ent_req["tool_choice"] == {"type": "tool", "name": "extract_entities"}
    assert [t["name"] for t in ent_req["tools"]] == ["extract_entities"]
    assert ent_req["max_tokens"] == 4096  # the floor, for a short body
    assert ent_req["messages"][0]["content"].startswith("<TEXT>\nAda Lovelace")
    props = edge_req["tools"][0]["input_schema"]["properties"]["edges"]["items"]["properties"]
    assert props["target_name"]["enum"] == ["Ada Lovelace", "Charles Babbage", "London"]
    assert edge_req["max_tokens"] == 4096
    usage = events.of("token_usage")
    assert len(usage) == 2 and usage[0]["role"] == "extraction"
    assert usage[0]["estimated_cost_usd"] == pytest.approx(100e-6 + 20 * 5e-6)
    assert [e["outcome"] for e in events.of("structured_output_parse")] == ["clean", "clean"]


def test_anthropic_no_entities_means_no_edges_call(anthropic_fake: FakeServer) -> None:
    ex = make_anthropic(anthropic_fake)
    out = ex.extract(req("nothing named here at all."))
    ex.close()
    assert out.entities == [] and out.edges == [] and out.calls == 1
    assert len(anthropic_fake.requests) == 1


def test_anthropic_truncation_retries_once_at_double_budget(
    anthropic_fake: FakeServer, events: Events
) -> None:
    anthropic_fake.script.append(
        (
            200,
            anthropic_message(
                "claude-haiku-4-5-20251001",
                "extract_entities",
                {"entities": []},
                stop_reason="max_tokens",
            ),
        )
    )
    ex = make_anthropic(anthropic_fake, max_tokens_ceiling=6000)
    out = ex.extract(req("Grace Hopper wrote code."))
    ex.close()
    assert [e.name for e in out.entities] == ["Grace Hopper"]
    budgets = [b["max_tokens"] for b in anthropic_fake.bodies]
    assert budgets[:2] == [4096, 6000]  # doubled, capped at the ceiling
    (trunc,) = events.of("extraction_truncated")
    assert trunc["initial_max_tokens"] == 4096 and trunc["retry_succeeded"] is True
    assert trunc["chunk_key"] == "chunk-1"


def test_anthropic_truncated_twice_is_an_error_with_a_failure_record(
    anthropic_fake: FakeServer, events: Events
) -> None:
    cut = anthropic_message(
        "claude-haiku-4-5-20251001", "extract_entities", {"entities": []}, stop_reason="max_tokens"
    )
    anthropic_fake.script.extend([(200, cut), (200, cut)])
    ex = make_anthropic(anthropic_fake)
    with pytest.raises(ExtractionError, match="cut off at its output budget twice"):
        ex.extract(req("Grace Hopper wrote code."))
    ex.close()
    assert [b["max_tokens"] for b in anthropic_fake.bodies] == [4096, 8192]
    (fail,) = events.of("extraction_failure")
    assert fail["classification"] == "truncation" and fail["max_tokens"] == 8192
    assert (
        fail["finish_reason"] == "max_tokens"
        and json.loads(fail["raw_body"])["stop_reason"] == "max_tokens"
    )
    assert events.of("extraction_truncated")[0]["retry_succeeded"] is False


def test_anthropic_429_and_529_are_retried_with_backoff(anthropic_fake: FakeServer) -> None:
    anthropic_fake.script.extend([anthropic_error(429), anthropic_error(529, "overloaded_error")])
    sleep = SleepLog()
    ex = make_anthropic(anthropic_fake, sleep=sleep)
    out = ex.extract(req("Alan Turing."))
    ex.close()
    assert [e.name for e in out.entities] == ["Alan Turing"]
    assert sleep.delays == [1.0, 2.0]  # the production schedule, slept through the fake
    assert len(anthropic_fake.requests) == 4  # three entities attempts, then the edges call


def test_anthropic_gives_up_after_three_retries(anthropic_fake: FakeServer) -> None:
    anthropic_fake.script.extend([anthropic_error(429)] * 4)
    sleep = SleepLog()
    ex = make_anthropic(anthropic_fake, sleep=sleep)
    with pytest.raises(ExtractionError, match="HTTP 429"):
        ex.extract(req("Alan Turing."))
    ex.close()
    assert sleep.delays == [1.0, 2.0, 4.0]
    assert len(anthropic_fake.requests) == 4


def test_anthropic_client_errors_are_not_retried(
    anthropic_fake: FakeServer, events: Events
) -> None:
    anthropic_fake.script.append(anthropic_error(400, "invalid_request_error"))
    sleep = SleepLog()
    ex = make_anthropic(anthropic_fake, sleep=sleep)
    with pytest.raises(ExtractionError, match="anthropic extract_entities call for chunk"):
        ex.extract(req("Alan Turing."))
    ex.close()
    assert sleep.delays == [] and len(anthropic_fake.requests) == 1
    (fail,) = events.of("extraction_failure")
    assert fail["classification"] == "http_error" and "fake 400" in fail["raw_body"]


def test_anthropic_unreachable_is_an_extraction_error(tmp_path: Path) -> None:
    server = FakeServer(anthropic_brain)
    url = server.url
    server.stop()
    ex = AnthropicExtractor(api_key="k", base_url=url, sleep=SleepLog())
    with pytest.raises(ExtractionError, match="unreachable"):
        ex.extract(req("Alan Turing."))
    ex.close()


def test_anthropic_primary_failure_switches_to_fallback_for_good(
    anthropic_fake: FakeServer, events: Events
) -> None:
    def primary_down(path: str, body: dict[str, Any]) -> Reply:
        if body["model"] == "claude-primary":
            return anthropic_error(404, "not_found_error")
        return anthropic_brain(path, body)

    anthropic_fake.default = primary_down
    ex = make_anthropic(anthropic_fake, model="claude-primary:claude-haiku-4-5")
    assert ex.model_id == "claude-primary"
    first = ex.extract(req("Ada Lovelace met Charles Babbage."))
    second = ex.extract(req("Alan Turing met Ada Lovelace."))
    ex.close()
    assert ex.model_id == "claude-haiku-4-5" and ex.fallback_active
    assert len(first.entities) == 2 and len(second.entities) == 2
    models = [b["model"] for b in anthropic_fake.bodies]
    # One primary attempt, then the fallback for every call, including the later chunk.
    assert models == ["claude-primary"] + ["claude-haiku-4-5"] * 4
    (fb,) = events.of("llm_fallback")
    assert fb["primary_model"] == "claude-primary" and fb["fallback_model"] == "claude-haiku-4-5"
    assert "404" in fb["error_reason"]


def test_anthropic_unreadable_answer_does_not_switch_to_fallback(
    anthropic_fake: FakeServer, events: Events
) -> None:
    anthropic_fake.script.append((200, b"garbage"))
    ex = make_anthropic(anthropic_fake, model="claude-primary:claude-haiku-4-5")
    with pytest.raises(ExtractionError, match="not a message"):
        ex.extract(req("Alan Turing."))
    ex.close()
    assert ex.model_id == "claude-primary" and events.of("llm_fallback") == []


def test_anthropic_salvages_partially_valid_items(
    anthropic_fake: FakeServer, events: Events
) -> None:
    model = "claude-haiku-4-5-20251001"
    anthropic_fake.script.append(
        (
            200,
            anthropic_message(
                model,
                "extract_entities",
                {
                    "entities": [
                        {
                            "name": "Ada Lovelace",
                            "entity_type": "Person",
                            "summary": "A mathematician.",
                        },
                        {"name": "Analytical Engine", "entity_type": "Product", "summary": None},
                        {"name": "   ", "entity_type": "Person", "summary": "blank"},
                        {"entity_type": "Person", "summary": "no name"},
                        {"name": 42, "entity_type": "Person", "summary": "not a string"},
                        "not an object",
                    ]
                },
            ),
        )
    )
    anthropic_fake.script.append(
        (
            200,
            anthropic_message(
                model,
                "extract_edges",
                {
                    "edges": [
                        {
                            "source_name": "Ada Lovelace",
                            "target_name": "Analytical Engine",
                            "fact": "Ada Lovelace wrote programs for the Analytical Engine",
                            "relation_type": "wroteProgramsFor",
                            "valid_at": "1843-01-01T00:00:00Z",
                        },
                        {
                            "source_name": "Ada Lovelace",
                            "target_name": "Analytical Engine",
                            "fact": "Ada Lovelace described the engine in notes",
                            "relation_type": "",
                        },
                        {"source_name": "Ada Lovelace", "target_name": "", "fact": "dangling"},
                        {
                            "source_name": "Ada Lovelace",
                            "target_name": "Analytical Engine",
                            "fact": "  ",
                        },
                        {"source_name": "Ada Lovelace", "target_name": "Analytical Engine"},
                    ]
                },
            ),
        )
    )
    ex = make_anthropic(anthropic_fake)
    out = ex.extract(req("Ada Lovelace and the Analytical Engine."))
    ex.close()
    assert [(e.name, e.summary) for e in out.entities] == [
        ("Ada Lovelace", "A mathematician."),
        ("Analytical Engine", ""),
    ]
    assert out.entities_dropped_malformed == 4
    assert [e.relation_type for e in out.edges] == [
        "WROTE_PROGRAMS_FOR",
        "ADA_LOVELACE_DESCRIBED_THE",
    ]
    assert out.edges[0].valid_at == "1843-01-01T00:00:00Z" and out.edges[1].valid_at is None
    assert out.edges_dropped_malformed == 3
    outcomes = [e["outcome"] for e in events.of("structured_output_parse")]
    assert outcomes == ["salvaged", "salvaged"]


def test_anthropic_answer_without_the_array_is_schema_invalid(
    anthropic_fake: FakeServer, events: Events
) -> None:
    anthropic_fake.script.append(
        (200, anthropic_message("claude-haiku-4-5", "extract_entities", {"items": []}))
    )
    ex = make_anthropic(anthropic_fake)
    with pytest.raises(ExtractionError, match="without a 'entities' array"):
        ex.extract(req("Alan Turing."))
    ex.close()
    assert events.of("structured_output_parse")[0]["outcome"] == "schema_invalid"
    assert events.of("extraction_failure")[0]["classification"] == "schema_invalid"


@pytest.mark.parametrize(
    "body", [b"not json", {"weird": 1}, {"type": "message", "content": "x"}, [1]]
)
def test_anthropic_unreadable_200_is_a_malformed_failure(
    anthropic_fake: FakeServer, events: Events, body: Any
) -> None:
    anthropic_fake.script.append((200, body))
    ex = make_anthropic(anthropic_fake)
    with pytest.raises(ExtractionError, match="sent a response that is not a message"):
        ex.extract(req("Alan Turing."))
    ex.close()
    (fail,) = events.of("extraction_failure")
    assert fail["classification"] == "malformed"
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    assert fail["raw_body"].encode() == raw  # the complete body, as sent


@pytest.mark.parametrize("body", [b"<html>oops</html>", {"choices": []}, {"id": 1}])
def test_openai_unreadable_200_is_a_malformed_failure(
    openai_fake: FakeServer, events: Events, body: Any
) -> None:
    openai_fake.script.append((200, body))
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=SleepLog())
    with pytest.raises(ExtractionError, match="not a chat completion|no choices"):
        ex.extract(req("Alan Turing."))
    ex.close()
    assert events.of("extraction_failure")[0]["classification"] == "malformed"


def test_anthropic_text_answer_instead_of_tool_is_parsed_tolerantly(
    anthropic_fake: FakeServer,
) -> None:
    message = anthropic_message("claude-haiku-4-5", "x", {})
    message["content"] = [
        {
            "type": "text",
            "text": 'Sure:\n```json\n{"entities": [{"name": "Alan Turing", '
            '"entity_type": "Person", "summary": "s"}]}\n```',
        }
    ]
    message["stop_reason"] = "end_turn"
    anthropic_fake.script.append((200, message))
    ex = make_anthropic(anthropic_fake)
    out = ex.extract(req("Alan Turing."))
    ex.close()
    assert [e.name for e in out.entities] == ["Alan Turing"]


def test_anthropic_classification_calls(anthropic_fake: FakeServer) -> None:
    model = "claude-haiku-4-5"
    anthropic_fake.script.append(
        (200, anthropic_message(model, "classify", {"types": ["person", "Spaceship", ""]}))
    )
    anthropic_fake.script.append(
        (200, anthropic_message(model, "classify", {"types": ["launched by", "MADE_UP"]}))
    )
    ex = make_anthropic(anthropic_fake)
    ents = ex.classify_entities(
        [("Ada", "a person"), ("Apollo 11", "a mission"), ("x", ""), ("y", "")],
        ["Person", "Project"],
    )
    rels = ex.classify_relations(
        [("Saturn V launched Apollo 11", ""), ("A knows B", "KNOWS")],
        [("LAUNCHED_BY", "launch"), ("KNOWS", None)],
    )
    ex.close()
    assert ents == ["Person", "", "", ""]  # off-list → "", padded to the input length
    assert rels == ["LAUNCHED_BY", ""]
    cls_ent, cls_rel = anthropic_fake.bodies
    assert cls_ent["max_tokens"] == 512 and cls_rel["max_tokens"] == 1024
    assert cls_ent["tool_choice"]["name"] == "classify"
    assert "1. Ada — a person" in cls_ent["messages"][0]["content"]
    assert "- LAUNCHED_BY: launch" in cls_rel["system"]


def test_anthropic_strict_ontology_is_in_the_prompts(anthropic_fake: FakeServer) -> None:
    onto = load_ontology_file(APOLLO_ONTOLOGY)
    assert onto is not None
    ex = make_anthropic(anthropic_fake)
    ex.extract(req("Neil Armstrong flew Apollo Eleven.", ontology=onto))
    ex.close()
    ent_req, edge_req = anthropic_fake.bodies
    assert "<ENTITY_TYPES>\n- Product: A manufactured artifact" in ent_req["system"]
    assert "exactly one of the ENTITY_TYPES" in ent_req["system"]
    assert "- LAUNCHED (Entity → Entity): A launch relationship" in edge_req["system"]
    assert "also called: LAUNCHED_BY" in edge_req["system"]


# --- OpenAI-compatible ----------------------------------------------------------------------


def test_openai_json_mode_over_http(openai_fake: FakeServer, events: Events) -> None:
    ex = OpenAICompatExtractor(url=openai_fake.url, model="qwen-test", sleep=SleepLog())
    out = ex.extract(req("Ada Lovelace met Charles Babbage."))
    ex.close()
    assert [e.name for e in out.entities] == ["Ada Lovelace", "Charles Babbage"]
    assert [e.fact for e in out.edges] == ["Ada Lovelace works with Charles Babbage"]
    assert out.calls == 2 and out.input_tokens == 100 and out.output_tokens == 20
    assert out.cost_usd is None  # a local model has no price
    first = openai_fake.bodies[0]
    assert first["model"] == "qwen-test" and first["response_format"] == {"type": "json_object"}
    assert first["max_tokens"] == 4096
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert (
        first["messages"][0]["content"]
        .rstrip()
        .endswith('{"entities": [{"name": "...", "entity_type": "...", "summary": "..."}]}')
    )
    assert [e["outcome"] for e in events.of("structured_output_parse")] == ["clean", "clean"]


def test_openai_over_a_unix_socket(openai_uds_fake: FakeServer) -> None:
    uds = openai_uds_fake.url.removeprefix("unix:")
    ex = OpenAICompatExtractor(uds=uds, sleep=SleepLog())
    out = ex.extract(req("Grace Hopper joined Harvard."))
    labels = ex.classify_entities([("Grace Hopper", "")], None)
    ex.close()
    assert [e.name for e in out.entities] == ["Grace Hopper", "Harvard"]
    assert labels == ["Person"]
    assert [p for p, _, _ in openai_uds_fake.requests] == ["/v1/chat/completions"] * 3


def test_openai_uds_survives_a_server_restart(tmp_path: Path) -> None:
    sock = tmp_path / "llm.sock"
    first = FakeServer(openai_brain, uds=sock)
    ex = OpenAICompatExtractor(uds=str(sock), sleep=SleepLog())
    try:
        assert len(ex.extract(req("Alan Turing.")).entities) == 1
        first.stop()
        sock.unlink()
        second = FakeServer(openai_brain, uds=sock)
        try:
            # The pooled connection is dead; the call re-dials the new server.
            assert len(ex.extract(req("Grace Hopper.")).entities) == 1
        finally:
            second.stop()
    finally:
        ex.close()


def test_openai_fences_and_surrounding_text_are_recovered(
    openai_fake: FakeServer, events: Events
) -> None:
    fenced = (
        'Here you go!\n```json\n{"entities": [{"name": "Alan Turing", "entity_type": "Person"}]}'
        "\n```\nHope that helps."
    )
    openai_fake.script.append(chat_completion(fenced))
    ex = OpenAICompatExtractor(url=openai_fake.url + "/v1", sleep=SleepLog())
    out = ex.extract(req("Alan Turing."))
    ex.close()
    assert [(e.name, e.summary) for e in out.entities] == [("Alan Turing", "")]
    assert events.of("structured_output_parse")[0]["outcome"] == "recovered"
    (missing,) = events.of("entities_missing_summary")
    assert missing["missing_summary"] == 1 and missing["entities_extracted"] == 1


def test_openai_length_finish_retries_at_double(openai_fake: FakeServer, events: Events) -> None:
    openai_fake.script.append(chat_completion('{"entities": [', finish_reason="length"))
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=SleepLog())
    out = ex.extract(req("Alan Turing."))
    ex.close()
    assert [e.name for e in out.entities] == ["Alan Turing"]
    assert [b["max_tokens"] for b in openai_fake.bodies][:2] == [4096, 8192]
    assert events.of("extraction_truncated")[0]["retry_succeeded"] is True


def test_openai_malformed_answer_fails_and_lands_in_the_failure_sidecar(
    openai_fake: FakeServer, tmp_path: Path
) -> None:
    openai_fake.script.append(chat_completion("I cannot answer that in JSON, sorry."))
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=SleepLog())
    rec = RecordingExtractor(ex, tmp_path / "c.jsonl")
    with pytest.raises(ExtractionError, match="unparseable JSON"):
        rec.extract(req("Alan Turing."))
    rec.close()
    (line,) = failures_path(tmp_path / "c.jsonl").read_text().splitlines()
    fail = json.loads(line)
    assert fail["classification"] == "malformed" and fail["call_type"] == "entities"
    assert "I cannot answer that" in fail["raw_body"] and fail["chunk_key"] == "chunk-1"
    assert fail["max_tokens"] == 4096 and fail["model"] == "local"
    assert not (tmp_path / "c.jsonl").exists()  # a failed call records nothing


def test_openai_retries_429_and_503(openai_fake: FakeServer) -> None:
    openai_fake.script.extend([(429, {"error": "slow down"}), (503, {"error": "loading"})])
    sleep = SleepLog()
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=sleep)
    out = ex.extract(req("Alan Turing."))
    ex.close()
    assert len(out.entities) == 1 and sleep.delays == [1.0, 2.0]


def test_openai_http_error_and_unreachable(openai_fake: FakeServer, tmp_path: Path) -> None:
    openai_fake.script.append((500, {"error": "boom"}))
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=SleepLog())
    with pytest.raises(ExtractionError, match="HTTP 500"):
        ex.extract(req("Alan Turing."))
    ex.close()
    gone = OpenAICompatExtractor(uds=str(tmp_path / "nobody.sock"), sleep=SleepLog())
    with pytest.raises(ExtractionError, match="unreachable"):
        gone.extract(req("Alan Turing."))
    gone.close()


def test_openai_classify_relations(openai_fake: FakeServer) -> None:
    openai_fake.script.append(chat_completion('{"types": ["FLEW", "LANDED_ON", "EXTRA"]}'))
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=SleepLog())
    out = ex.classify_relations(
        [("Armstrong flew Apollo 11", ""), ("Eagle landed on the Moon", "")],
        [("FLEW_ON", "flew aboard"), ("LANDED_ON", None)],
    )
    ex.close()
    assert out == ["", "LANDED_ON"]  # FLEW is not allowed; the extra answer is cut
    assert '{"types"' in openai_fake.bodies[0]["messages"][0]["content"]


# --- cassettes: record against the fakes, replay with them stopped --------------------------


BODIES = [
    "Ada Lovelace met Charles Babbage in London.",
    "Grace Hopper worked with Howard Aiken at Harvard.",
    "nothing named here",
]


def _run_all(ex: Any, ontology: Any) -> tuple[list[ExtractionOutput], list[list[str]]]:
    outs = [ex.extract(req(b, chunk_key=f"c{i}", ontology=ontology)) for i, b in enumerate(BODIES)]
    outs.append(ex.extract(req(BODIES[0], source_type="Message", group_id="other")))
    labels = [
        ex.classify_entities([("Ada Lovelace", "x"), ("London", "y")], ["Person", "Location"]),
        ex.classify_entities([("Ada Lovelace", "x")], None),
        ex.classify_relations([("Ada works with Charles", "")], [("PERSON", None)]),
    ]
    return outs, labels


@pytest.mark.parametrize("provider", ["anthropic", "openai-http", "openai-uds"])
def test_record_then_replay_with_the_fakes_stopped(provider: str, tmp_path: Path) -> None:
    onto = load_ontology_file(APOLLO_ONTOLOGY)
    cassette = tmp_path / "cassette.jsonl"
    if provider == "anthropic":
        server = FakeServer(anthropic_brain)
        inner: Any = make_anthropic(server)
    elif provider == "openai-http":
        server = FakeServer(openai_brain)
        inner = OpenAICompatExtractor(url=server.url, sleep=SleepLog())
    else:
        server = FakeServer(openai_brain, uds=tmp_path / "llm.sock")
        inner = OpenAICompatExtractor(uds=server.url.removeprefix("unix:"), sleep=SleepLog())
    recorder = RecordingExtractor(inner, cassette)
    assert failures_path(cassette).exists()  # created eagerly
    try:
        recorded = _run_all(recorder, onto)
    finally:
        recorder.close()
        server.stop()
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [r["call_type"] for r in lines] == ["extract"] * 4 + ["classify_entities"] * 2 + [
        "classify_relations"
    ]
    assert {r["provider"] for r in lines} == {"anthropic" if provider == "anthropic" else "local"}
    assert set(lines[0]) == {
        "key",
        "call_type",
        "provider",
        "model",
        "timestamp",
        "request",
        "response",
    }
    assert list(lines[0]["request"]) == [
        "call_type",
        "source_type",
        "group_id",
        "reference_time",
        "custom_instructions",
        "episode_body",
        "entity_system_prompt",
        "entity_user_prompt",
        "edge_system_prompt",
    ]
    replay = ReplayExtractor(cassette)
    assert len(replay) == 7
    assert replay.model_id == inner.model_id
    replayed = _run_all(replay, onto)
    assert msgspec.json.encode(replayed) == msgspec.json.encode(recorded)
    # A prompt change (here: another ontology) is a miss, never a stale answer.
    with pytest.raises(CassetteError, match="cassette miss: no cassette record for extract call"):
        replay.extract(req(BODIES[0], chunk_key="c0", ontology=None))


# --- the contract every extractor keeps -----------------------------------------------------


@pytest.fixture(params=["anthropic", "openai-http", "openai-uds", "recording", "replay"])
def any_extractor(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Each implementation of the port, backed by the fakes (replay: by a cassette)."""
    kind = request.param
    server = FakeServer(
        anthropic_brain if kind in ("anthropic", "recording", "replay") else openai_brain,
        uds=tmp_path / "llm.sock" if kind == "openai-uds" else None,
    )
    if kind == "openai-http":
        ex: Any = OpenAICompatExtractor(url=server.url, sleep=SleepLog())
    elif kind == "openai-uds":
        ex = OpenAICompatExtractor(uds=server.url.removeprefix("unix:"), sleep=SleepLog())
    else:
        ex = make_anthropic(server)
    if kind in ("recording", "replay"):
        ex = RecordingExtractor(ex, tmp_path / "contract.jsonl")
    if kind == "replay":
        _contract_calls(ex)  # record every call the contract makes, then replay them
        ex.close()
        server.stop()
        yield ReplayExtractor(tmp_path / "contract.jsonl")
        return
    yield ex
    ex.close()
    server.stop()


def _contract_calls(ex: Any) -> tuple[ExtractionOutput, ExtractionOutput, list[str], list[str]]:
    full = ex.extract(req("Ada Lovelace met Charles Babbage.", chunk_key="contract"))
    empty = ex.extract(req("nothing named here", chunk_key="contract"))
    ents = ex.classify_entities([("Ada Lovelace", "x"), ("Zed", "")], ["Person"])
    rels = ex.classify_relations([("Ada works with Charles", "")], [("WORKS_WITH", None)])
    return full, empty, ents, rels


def test_extractor_contract(any_extractor: Any) -> None:
    assert isinstance(any_extractor, Extractor) and any_extractor.model_id
    full, empty, ents, rels = _contract_calls(any_extractor)
    names = {e.name for e in full.entities}
    assert names == {"Ada Lovelace", "Charles Babbage"}
    assert all(e.source_name in names and e.target_name in names for e in full.edges)
    assert all(e.relation_type for e in full.edges) and full.calls == 2
    assert empty.entities == [] and empty.edges == [] and empty.calls == 1
    assert len(ents) == 2 and all(t in ("Person", "") for t in ents)
    assert len(rels) == 1 and rels[0] in ("WORKS_WITH", "")
    assert any_extractor.classify_entities([], None) == []
    assert any_extractor.classify_relations([], []) == []


# --- documented telemetry and sidecar values (issue 30 item 3, ADR 0213) -----------------
# The reference lines below are copied by hand from the reference's telemetry documentation.

DOC_PARSE = {
    "type": "structured_output_parse", "ts_ms": 1716100000060, "model": "qwen3.6-27b",
    "call_type": "edges", "outcome": "recovered",
}  # fmt: skip
DOC_MISSING = {
    "type": "entities_missing_summary", "ts_ms": 1716100000058, "model": "qwen3.6-27b",
    "chunk_key": "notes-0001", "entities_extracted": 6, "missing_summary": 1,
}  # fmt: skip
DOC_SIDECAR_FIELDS = {
    "ts_ms", "model", "call_type", "chunk_key", "classification", "raw_body", "finish_reason",
    "completion_tokens", "max_tokens",
}  # fmt: skip


def test_documented_call_type_values_in_parse_records(
    openai_fake: FakeServer, events: Events
) -> None:
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=SleepLog())
    ex.extract(req("Alan Turing met Grace Hopper."))
    ex.close()
    parses = events.of("structured_output_parse")
    # The documented call types, entities call first, and the documented fields only.
    assert [p["call_type"] for p in parses] == ["entities", "edges"]
    assert all(set(p) == set(DOC_PARSE) for p in parses)


def test_entities_missing_summary_counts_absent_null_and_empty(
    openai_fake: FakeServer, events: Events
) -> None:
    answer = {
        "entities": [
            {"name": "Ada Lovelace", "entity_type": "Person", "summary": "A mathematician."},
            {"name": "Alan Turing", "entity_type": "Person"},
            {"name": "Grace Hopper", "entity_type": "Person", "summary": None},
            {"name": "Analytical Engine", "entity_type": "Machine", "summary": ""},
        ]
    }
    openai_fake.script.append(chat_completion(json.dumps(answer)))
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=SleepLog())
    ex.extract(req("Ada Lovelace, Alan Turing, Grace Hopper, Analytical Engine."))
    ex.close()
    (missing,) = events.of("entities_missing_summary")
    assert set(missing) == set(DOC_MISSING)
    assert missing["entities_extracted"] == 4 and missing["missing_summary"] == 3
    assert missing["chunk_key"] == "chunk-1"


def test_entities_missing_summary_is_emitted_on_every_parse_with_an_entity(
    openai_fake: FakeServer, events: Events
) -> None:
    # Every entity has a summary: the record still comes, counting zero.
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=SleepLog())
    ex.extract(req("Alan Turing met Grace Hopper."))
    # No entity at all: no record.
    openai_fake.script.append(chat_completion('{"entities": []}'))
    ex.extract(req("nothing to see here."))
    ex.close()
    (missing,) = events.of("entities_missing_summary")
    assert missing["entities_extracted"] == 2 and missing["missing_summary"] == 0


def test_failure_sidecar_and_telemetry_carry_documented_call_types(
    openai_fake: FakeServer, events: Events, tmp_path: Path
) -> None:
    # The entities call answers; the edges call answers garbage: an "edges" failure that
    # reports the entities already extracted.
    one = {"entities": [{"name": "Alan Turing", "entity_type": "Person", "summary": ""}]}
    openai_fake.script.append(chat_completion(json.dumps(one)))
    openai_fake.script.append(chat_completion("no JSON here"))
    # Then an entities call that answers garbage.
    openai_fake.script.append(chat_completion("no JSON here either"))
    ex = OpenAICompatExtractor(url=openai_fake.url, sleep=SleepLog())
    rec = RecordingExtractor(ex, tmp_path / "c.jsonl")
    with pytest.raises(ExtractionError):
        rec.extract(req("Alan Turing."))
    with pytest.raises(ExtractionError):
        rec.extract(req("Alan Turing."))
    rec.close()
    lines = [json.loads(x) for x in failures_path(tmp_path / "c.jsonl").read_text().splitlines()]
    assert [r["call_type"] for r in lines] == ["edges", "entities"]
    assert all(DOC_SIDECAR_FIELDS <= set(r) for r in lines)
    assert lines[0]["entities_extracted"] == 1 and lines[1]["entities_extracted"] is None
    assert [f["call_type"] for f in events.of("extraction_failure")] == ["edges", "entities"]
