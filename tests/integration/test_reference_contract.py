"""Conformance of the reference's smaller contract points (issue 12 item 8), written from
lcg-api.md §1.1, §3.2, §3.7, §3.9 (dump), §3.11, §8.2 and §9.

Everything is real (Kuzu, hnswlib, the socket, the streams); the embedder is the hash test
double and the extractor the scripted one, both named as such.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import _service_fixtures as sf
from lcg import telemetry
from lcg.config import Config
from lcg.extract.extractor import ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest.extraction import ExtractionService
from lcg.rpc.app import ServiceApp


@pytest.fixture
def telemetry_lines() -> Iterator[io.BytesIO]:
    """Telemetry of the in-process service, captured (restored to stderr afterwards)."""
    buf = io.BytesIO()
    telemetry.set_sink(buf)
    try:
        yield buf
    finally:
        telemetry.set_sink(None, enabled=False)


def records(buf: io.BytesIO, kind: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]
    return [r for r in lines if r["type"] == kind]


def test_dump_of_one_group_writes_its_stream_directly_into_target_dir() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        c.result("knowledge_assert_entity", {"name": "Kepler", "group_id": "astro"})
        c.result("knowledge_assert_entity", {"name": "Tycho", "group_id": "astro"})
        c.result("knowledge_assert_entity", {"name": "Other", "group_id": "elsewhere"})
        target = svc.workspace / "astro-dump"
        result = c.result("knowledge_dump_wal", {"group_id": "astro", "target_dir": str(target)})
        assert result["success"] is True and result["target_dir"] == str(target)
        assert result["nodes_dumped"] == 2 and result["files_written"] == 1
        # §5.6: a fresh writer in target_dir: the segments and the generation are right there.
        segments = sorted(target.glob("*.jsonl"))
        assert len(segments) == 1
        assert (target / ".wal-generation.json").is_file()
        assert not [p for p in target.iterdir() if p.is_dir() and not p.name.startswith(".")]
        lines = [json.loads(x) for x in segments[0].read_text().splitlines()]
        assert {line["group_id"] for line in lines} == {"astro"}
        assert [line["seq"] for line in lines] == [0, 1]
        # The staging directory beside the target is gone.
        assert sorted(p.name for p in svc.workspace.iterdir() if "astro-dump" in p.name) == [
            "astro-dump"
        ]
        # A non-empty target is refused, as before.
        err = c.error("knowledge_dump_wal", {"group_id": "astro", "target_dir": str(target)})
        assert "not empty" in err["message"]


def test_process_chunk_of_a_json_file_keeps_source_text_and_uses_the_json_prompt(
    telemetry_lines: io.BytesIO,
) -> None:
    extractor = ScriptedExtractor(default=ExtractionOutput())  # TEST DOUBLE

    def prepare(app: ServiceApp) -> None:
        app.extraction = ExtractionService(extractor)

    with (
        sf.in_process_service(prepare=prepare) as svc,
        sf.RawConnection(svc.socket_path) as c,
    ):
        c.result(
            "knowledge_process_chunk",
            {
                "chunk_text": '{"name": "Kepler"}',
                "chunk_id": "c1",
                "source_file": "data/Stars.JSON",
            },
        )
        c.result(
            "knowledge_process_chunk",
            {"chunk_text": "Tycho observed.", "chunk_id": "c2", "source_file": "notes.txt"},
        )
        episodes = c.result("knowledge_get_episodes", {"last_n": 10})["episodes"]
        assert {e["name"]: e["source"] for e in episodes} == {"c1": "text", "c2": "text"}
        kinds = {r.chunk_key: r.source_type for r in extractor.requests}
        assert kinds == {"c1": "Json", "c2": "Text"}
        assert records(telemetry_lines, "chunk_text_oversized") == []


def test_oversized_chunk_emits_the_telemetry_event(telemetry_lines: io.BytesIO) -> None:
    env = {"LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS": "10"}
    with sf.in_process_service(env=env) as svc, sf.RawConnection(svc.socket_path) as c:
        chunk = {"chunk_text": "x" * 11, "chunk_id": "big", "source_file": "f.txt"}
        assert c.result("knowledge_process_chunk", chunk)["warning"]["chunk_text_chars"] == 11
    events = records(telemetry_lines, "chunk_text_oversized")
    assert len(events) == 1
    event = events[0]
    assert isinstance(event.pop("ts_ms"), int)
    assert event == {
        "type": "chunk_text_oversized",
        "chunk_id": "big",
        "source_file": "f.txt",
        "chunk_text_chars": 11,
        "threshold_chars": 10,
    }


@pytest.mark.parametrize("raw", ["0", "-5", "lots"])
def test_invalid_advisory_maximum_warns_and_uses_the_default(
    raw: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="lcg.config"):
        config = Config.from_env(Path("/tmp"), env={"LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS": raw})
    assert config.chunk_text_advisory_max_chars == 8000
    assert "LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS" in caplog.text and "8000" in caplog.text


def test_graphiti_aliases_are_honoured_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    env = {"GRAPHITI_WAL_DIR": "streams", "GRAPHITI_EMBEDDING_MODEL": "m", "LCG_EMBEDDING_URL": "x"}
    with caplog.at_level(logging.WARNING, logger="lcg.config"):
        config = Config.from_env(Path("/tmp/ws"), env={**env, "GRAPHITI_EMBEDDING_URL": "old"})
    assert config.wal_dir == Path("/tmp/ws/streams")
    assert config.embedding_model == "m"
    assert config.embedder_url == "x"  # the LCG_ name wins over its alias
    assert "GRAPHITI_WAL_DIR is deprecated" in caplog.text
    assert "GRAPHITI_EMBEDDING_URL" not in caplog.text


@pytest.mark.parametrize(
    "method",
    [
        "knowledge_validate_corrections",
        "knowledge_apply_corrections",
        "knowledge_reprocess_entity_types",
    ],
)
def test_workspace_root_methods_without_the_root_are_a_32000_error(method: str) -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        err = c.error(method, {})
        assert err["code"] == -32000
        assert err["message"].startswith("configuration error: LIMINIS_WORKSPACE_ROOT not set")


def test_state_errors_are_32000_and_parameter_errors_32602() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        a = c.result("knowledge_assert_entity", {"name": "Ada"})
        c.result("knowledge_assert_entity", {"name": "Grace"})
        clash = c.error(
            "knowledge_assert_entity", {"name": "Grace", "entity_uuid": a["entity_uuid"]}
        )
        assert clash["code"] == -32000 and "cannot rename entity" in clash["message"]
        unknown = c.error("knowledge_recover", {"strategy": "nope"})
        assert unknown["code"] == -32000 and unknown["message"].endswith("Unknown strategy: nope")
        missing = c.error("knowledge_recover", {})
        assert missing["code"] == -32602


def test_a_request_without_id_gets_an_error_reply() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        c.send_line(b'{"jsonrpc": "2.0", "method": "health_check", "params": {}}')
        answer = c.read_message()
        assert answer["id"] is None and answer["error"]["code"] == -32600
        assert c.result("health_check")["healthy"] is True  # the connection stays usable
