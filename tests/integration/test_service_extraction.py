"""The service extracts chunks when an extractor is configured (scripted test double)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lcg.config import Config
from lcg.extract.extractor import ExtractedEdge, ExtractedEntity, ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest.extraction import ExtractionService
from lcg.rpc.app import build_app
from lcg.rpc.client import Client
from lcg.rpc.server import serve

TEXT = "Neil Armstrong commanded Apollo 11."
ANSWER = ExtractionOutput(
    entities=[
        ExtractedEntity(name="Neil Armstrong", entity_type="Person", summary="An astronaut."),
        ExtractedEntity(name="Apollo 11", entity_type="Mission", summary="A Moon landing."),
    ],
    edges=[
        ExtractedEdge(
            source_name="Neil Armstrong",
            target_name="Apollo 11",
            fact="Neil Armstrong commanded Apollo 11.",
            relation_type="COMMANDED",
        )
    ],
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    cfg = Config.from_env(tmp_path, env={"LCG_EMBEDDER": "hash"})
    app = build_app(cfg)
    app.extraction = ExtractionService(ScriptedExtractor({TEXT: ANSWER}))
    thread = threading.Thread(target=lambda: asyncio.run(serve(app, cfg.socket_path, 2000)))
    thread.start()
    c = Client(cfg.socket_path)
    c.wait_ready(30, starting=True)
    try:
        yield c
    finally:
        c.call("knowledge_close", {})
        c.close()
        thread.join(20)


def test_process_chunk_extracts_and_the_graph_answers(client: Client) -> None:
    result = client.process_chunk(chunk_text=TEXT, chunk_id="c1", source_file="a.txt")
    assert result["extraction"]["status"] == "extracted"
    assert result["nodes_extracted"] == 2 and result["edges_extracted"] == 1
    names = {n["name"] for n in client.call("knowledge_list_entities", {})["nodes"]}
    assert names == {"Neil Armstrong", "Apollo 11"}
    facts = client.find_relationships(query="commanded Apollo")["facts"]
    assert facts and facts[0]["fact"] == "Neil Armstrong commanded Apollo 11."
    assert client.status()["pending_episodes"] == 0
    again = client.process_chunk(chunk_text=TEXT, chunk_id="c1", source_file="a.txt")
    assert again["episode_uuid"] == result["episode_uuid"]
    assert len(client.call("knowledge_list_entities", {})["nodes"]) == 2
