"""The source sync methods and the chunk-id rule beside them (issue 22, ADR 0160, ADR 0162),
on a real service: ``knowledge_sync_chunks`` adds once and removes once however often a batch
is sent, ``knowledge_source_manifest`` lists a tree's chunks only, a chunk id sent again with
new text replaces its old text, and a sync extracts its chunks when an LLM is configured
(the scripted test double)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.config import Config
from lcg.errors import InvalidParamsError
from lcg.extract.embedders import HashEmbedder
from lcg.extract.extractor import ExtractedEntity, ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest.extraction import ExtractionService
from lcg.ingest.sources import DirectBackend, sync_tree
from lcg.rpc.client import Client
from lcg.workspace import Workspace


@pytest.fixture
def client() -> Iterator[Client]:
    with sf.in_process_service() as svc:
        yield svc.client()


def _texts(c: Client, query: str, group: str = "g") -> list[str]:
    found = c.search_passages(query, group_ids=[group], num_results=20, min_score=0.0)
    return [p["content"] for p in found["passages"]]


def _events(c: Client, kind: str) -> list[dict[str, Any]]:
    tail = c.call("knowledge_wal_tail", {"group_id": "g", "limit": 1000})
    return [e for e in tail.get("events", tail.get("lines", [])) if e.get("type") == kind]


def test_a_chunk_id_sent_again_with_new_text_replaces_the_old(client: Client) -> None:
    c = client
    first = c.process_chunk(
        chunk_text="the launch is on Monday", chunk_id="plan#1", source_file="plan.md", group_id="g"
    )
    c.process_chunk(
        chunk_text="the other file keeps its plan",
        chunk_id="plan#1",
        source_file="other.md",
        group_id="g",
    )
    again = c.process_chunk(
        chunk_text="the launch is on Monday", chunk_id="plan#1", source_file="plan.md", group_id="g"
    )
    assert again["episode_uuid"] == first["episode_uuid"]
    edited = c.process_chunk(
        chunk_text="the launch moved to Friday",
        chunk_id="plan#1",
        source_file="plan.md",
        group_id="g",
    )
    assert edited["episode_uuid"] != first["episode_uuid"]
    texts = _texts(c, "launch Monday Friday plan")
    assert "the launch moved to Friday" in texts and "the launch is on Monday" not in texts
    # The same id under other.md is another chunk: it stays.
    assert "the other file keeps its plan" in texts
    episodes = c.call("knowledge_get_episodes", {"group_id": "g", "last_n": 10})["episodes"]
    assert sorted(e["source_description"] for e in episodes) == [
        "other.md:plan#1",
        "plan.md:plan#1",
    ]


def _chunk(cid: str, text: str) -> dict[str, str]:
    return {
        "chunk_id": f"notes/a.md#{cid}",
        "source_file": "notes/a.md",
        "chunk_text": text,
        "reference_time": "2024-05-01T12:00:00Z",
    }


def test_sync_batches_are_idempotent_and_the_manifest_lists_the_tree(client: Client) -> None:
    c = client
    batch = {"group_id": "g", "add": [_chunk("0123456789ab", "one"), _chunk("ba9876543210", "two")]}
    first = c.call("knowledge_sync_chunks", batch)
    assert len(first["added"]) == 2 and first["pending"] == 2
    assert c.call("knowledge_sync_chunks", batch)["already_held"] == 2
    c.process_chunk(
        chunk_text="not a tree chunk", chunk_id="free-id", source_file="notes/x", group_id="g"
    )
    c.process_chunk(
        chunk_text="other tree",
        chunk_id="notesX/b.md#0123456789ab",
        source_file="notesX/b.md",
        group_id="g",
    )
    manifest = c.call("knowledge_source_manifest", {"group_id": "g", "prefix": "notes/"})
    assert sorted(m["chunk_id"] for m in manifest["chunks"]) == [
        "notes/a.md#0123456789ab",
        "notes/a.md#ba9876543210",
    ]
    assert manifest["chunks"][0]["content_hash"]
    uuid = first["added"]["notes/a.md#0123456789ab"]
    removal = {"group_id": "g", "remove": [{"source_file": "notes/a.md", "episode_uuids": [uuid]}]}
    assert c.call("knowledge_sync_chunks", removal)["removed"] == 1
    assert c.call("knowledge_sync_chunks", removal)["removed"] == 0
    left = _texts(c, "one two")
    assert "two" in left and "one" not in left


@pytest.mark.parametrize(
    ("params", "text"),
    [
        ({"add": [_chunk("0123456789ab", "")]}, "chunk_text must be non-empty"),
        ({"add": [{**_chunk("0123456789ab", "x"), "reference_time": "soon"}]}, "reference_time"),
        ({"add": [{"chunk_id": "x"}]}, "add"),
    ],
)
def test_sync_refuses_bad_chunks_and_records_nothing(
    client: Client, params: dict[str, Any], text: str
) -> None:
    with pytest.raises(InvalidParamsError, match=text):
        client.call("knowledge_sync_chunks", {"group_id": "g", **params})
    manifest = client.call("knowledge_source_manifest", {"group_id": "g", "prefix": "notes/"})
    assert manifest["count"] == 0


def test_manifest_prefix_must_name_a_tree(client: Client) -> None:
    for prefix in ("notes", "/", ":"):
        with pytest.raises(InvalidParamsError):
            client.call("knowledge_source_manifest", {"prefix": prefix})


TEXT = "Neil Armstrong commanded Apollo 11."


def test_a_sync_extracts_its_chunks_when_an_llm_is_configured(tmp_path: Path) -> None:
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "day1.txt").write_text(TEXT + "\n")
    answer = ExtractionOutput(
        entities=[ExtractedEntity(name="Neil Armstrong", entity_type="Person", summary="x")]
    )
    extraction = ExtractionService(ScriptedExtractor({TEXT: answer}))
    config = Config.from_env(tmp_path / "ws", env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(config, HashEmbedder()) as ws:
        report = sync_tree(DirectBackend(ws, extraction), tmp_path / "log", "g")
        assert (report.chunks_added, report.extracted, report.pending) == (1, 1, 0)
        names = {str(r[0]) for r in ws.graph.query("MATCH (e:Entity) RETURN e.name")}
        # The extracted entity, beside the file's own document (declared, ADR 0203).
        assert names == {"Neil Armstrong", "day1"}
    extraction.close()
