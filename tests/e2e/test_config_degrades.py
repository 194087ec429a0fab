"""Configuration that degrades instead of refusing (issue 19 item 4), as the reference documents.

Written from the seed's configuration, ontology and cassette pages (lcg-api.md §5.11, §6.1,
§8.1, §9): an invalid ``LCG_EXTRACTION_MAX_TOKENS_CEILING`` (non-numeric, or under the 4096
floor) logs a warning to stderr and falls back to 32768; ``{workspace}/.lcg/ontology.yaml`` is
the workspace's ontology; a deprecated ``GRAPHITI_*`` name logs ``DEPRECATED: env var <old> is
deprecated; rename to <new>``; the startup reports ``extractor: provider=..., transport=...,
endpoint=...``; an extraction-dependent call without a provider fails naming what to configure
and the service keeps serving; recording (``LCG_RECORD_LLM``) creates
``<cassette-path>.failures.jsonl`` eagerly. A real ``lcg serve`` subprocess each time (hash
embedder; the extraction endpoint is never called).
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import _service_fixtures as sf
from lcg.config import Config

ONTOLOGY = (
    "mode: open\n"
    "entity_types:\n  - name: Person\n  - name: Organization\n"
    "relation_types:\n  - name: WORKS_AT\n"
)


def _free_url() -> str:
    """An http URL on a local port nothing listens on (never called: no startup probe)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/chat/completions"


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, "lcg serve exited"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_a_misconfigured_start_warns_and_serves() -> None:
    with sf.temp_workspace("lcg-cfg-") as ws:
        (ws / ".lcg").mkdir()
        (ws / ".lcg" / "ontology.yaml").write_text(ONTOLOGY)
        url = _free_url()
        env = {
            "LCG_EXTRACTION_MAX_TOKENS_CEILING": "lots",
            "GRAPHITI_WAL_DIR": "streams",
            "LCG_EXTRACTION_URL": url,
            "LCG_RECORD_LLM": "tapes/rec.jsonl",
            "LCG_TELEMETRY": "off",
        }
        proc = sf.spawn_serve(ws, env=env)
        sock = ws / ".lcg" / "service.sock"
        try:
            _wait_for(sock, proc)
            # Recording: the failure sidecar exists from the start, before any call.
            assert (ws / "tapes" / "rec.jsonl.failures.jsonl").is_file()
            sf.wait_healthy(sock, proc)
            with sf.RawConnection(sock) as c:
                onto = c.result("knowledge_status")["ontology"]
                c.result("knowledge_assert_entity", {"name": "Ada Lovelace"})
            # {workspace}/.lcg/ontology.yaml, no LIMINIS_WORKSPACE_ROOT needed.
            assert (onto["present"], onto["loaded"], onto["entity_type_count"]) == (True, True, 2)
        finally:
            assert sf.stop_serve(proc, sock) == 0
        log = (ws / "serve.log").read_text()
        assert "LCG_EXTRACTION_MAX_TOKENS_CEILING" in log and "32768" in log, log
        assert "DEPRECATED: env var GRAPHITI_WAL_DIR is deprecated; rename to LCG_WAL_DIR" in log
        assert f"extractor: provider=local, transport=http, endpoint={url}" in log, log
        assert (ws / "streams" / "liminis").is_dir()  # the deprecated name is honoured


def test_a_ceiling_under_the_floor_falls_back_to_the_default() -> None:
    for raw in ("100", "4095", "-1", "x"):
        config = Config.from_env(Path("/tmp/ws"), env={"LCG_EXTRACTION_MAX_TOKENS_CEILING": raw})
        assert config.extraction_max_tokens_ceiling == 32768, raw
    config = Config.from_env(Path("/tmp/ws"), env={"LCG_EXTRACTION_MAX_TOKENS_CEILING": "4096"})
    assert config.extraction_max_tokens_ceiling == 4096


def test_no_extractor_starts_and_the_refusals_name_what_to_configure() -> None:
    with sf.temp_workspace("lcg-cfg-") as ws:
        (ws / ".lcg").mkdir()
        (ws / ".lcg" / "ontology.yaml").write_text(ONTOLOGY)
        # Recording asked for, but no provider to record: the service still starts.
        env = {"LIMINIS_WORKSPACE_ROOT": str(ws), "LCG_RECORD_LLM": "rec.jsonl"}
        proc = sf.spawn_serve(ws, env=env)
        sock = ws / ".lcg" / "service.sock"
        try:
            sf.wait_healthy(sock, proc)
            with sf.RawConnection(sock) as c:
                c.result("knowledge_assert_entity", {"name": "Ada Lovelace"})
                for method in (
                    "knowledge_reprocess_entity_types",
                    "knowledge_reprocess_relation_types",
                ):
                    answer = c.request(method, {"group_id": "liminis"})
                    text = str(answer.get("error") or answer.get("result"))
                    assert "ANTHROPIC_API_KEY" in text and "LCG_EXTRACTION_URL" in text, (
                        method,
                        answer,
                    )
                # ... and reads keep working afterwards.
                found = c.result("knowledge_list_entities")
                assert [n["name"] for n in found["nodes"]] == ["Ada Lovelace"]
        finally:
            assert sf.stop_serve(proc, sock) == 0
        log = (ws / "serve.log").read_text()
        assert "extractor: provider=none" in log, log
        assert "LCG_RECORD_LLM" in log, log
