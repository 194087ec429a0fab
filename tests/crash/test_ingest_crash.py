"""SIGKILL during a burst of ingestion + extraction, then reopen: every acknowledged episode is
there exactly once, no episode has two extractions, and ``extract_pending`` completes the
interrupted ones. The child uses the scripted extractor (TEST DOUBLE, slow) and the hash
embedder (TEST DOUBLE); the stream, Kuzu, hnswlib and BM25 are real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from lcg import telemetry
from lcg.config import Config
from lcg.events.model import EpisodeAdded, EpisodeExtracted
from lcg.extract.extractor import ExtractedEdge, ExtractedEntity, ExtractionOutput, ExtractRequest
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest import episodes
from lcg.ingest.extraction import ExtractionService
from lcg.projections.graph import records as gr
from lcg.workspace import Workspace

G = "crash"
N = 120
ENV = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off", "LCG_WAL_FSYNC": "always"}


def answer(req: ExtractRequest) -> ExtractionOutput:
    """TEST DOUBLE answer: ``Astronaut <i> trained in Houston.`` → two entities, one edge."""
    who = req.body.split(" trained")[0]
    return ExtractionOutput(
        entities=[
            ExtractedEntity(name=who, entity_type="Person", summary=f"{who} is an astronaut."),
            ExtractedEntity(name="Houston", entity_type="Location", summary="A city."),
        ],
        edges=[
            ExtractedEdge(
                source_name=who, target_name="Houston", fact=req.body, relation_type="TRAINED_IN"
            )
        ],
    )


def text(i: int) -> str:
    return f"Astronaut {i} trained in Houston."


CHILD = f"""
import sys, threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parent)!r})
from lcg import telemetry
from lcg.config import Config
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest import episodes
from lcg.ingest.extraction import ExtractionService
from lcg.workspace import Workspace
from test_ingest_crash import ENV, G, N, answer, text
telemetry.set_sink(None, enabled=False)
ws = Workspace.open(Config.from_env(Path(sys.argv[1]), env=ENV))
svc = ExtractionService(ScriptedExtractor(answer=answer, latency_s=0.03), concurrency=4)
out = threading.Lock()
def say(*parts):
    with out:
        print(*parts, flush=True)
def one(i):
    r = episodes.process_chunk(ws, chunk_text=text(i), chunk_id=f"c{{i}}", source_file="s.md",
                               group_id=G)
    say("ack", r.episode_uuid, f"c{{i}}")
    done = svc.extract_episode(ws, r.episode_uuid)
    say("ext", r.episode_uuid, done.status)
with ThreadPoolExecutor(4) as pool:
    list(pool.map(one, range(N)))
say("done")
"""


def test_sigkill_during_ingest_and_extraction(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "LIMINIS_"))},
    )
    acked: dict[str, str] = {}
    extracted: set[str] = set()
    assert child.stdout is not None
    for line in child.stdout:
        parts = line.split()
        if parts[0] == "ack":
            acked[parts[1]] = parts[2]
        elif parts[0] == "ext":
            extracted.add(parts[1])
        elif parts[0] == "done":
            break
        # Kill in the middle of the burst: some extracted, others only acknowledged.
        if len(acked) >= 24 and len(extracted) >= 8:
            child.send_signal(signal.SIGKILL)
            break
    _, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, err

    telemetry.set_sink(None, enabled=False)
    config = Config.from_env(tmp_path, env=ENV)
    with Workspace.open(config) as ws:
        events = list(ws.store.reader(G).events())
        added = [e for e in events if isinstance(e, EpisodeAdded)]
        extractions = Counter(e.episode_uuid for e in events if isinstance(e, EpisodeExtracted))
        by_name = Counter(e.name for e in added)
        assert all(n == 1 for n in by_name.values()), "no chunk was recorded twice"
        assert all(n == 1 for n in extractions.values()), "no episode was extracted twice"
        with ws.reading():
            stored = {ep.uuid: ep for ep in gr.all_episodes(ws.graph, G)}
        for uuid, name in acked.items():
            assert uuid in stored and stored[uuid].name == name, "an acknowledged episode is lost"
        for uuid in extracted:
            assert stored[uuid].extracted, "an acknowledged extraction is lost"
        pending = [u for u, ep in stored.items() if not ep.extracted]
        assert len(stored) < N, "the kill came before the burst ended"
        assert pending, "the kill interrupted extractions (workers spend most time in the LLM)"

        # A client resending an acknowledged chunk gets the same episode back.
        some = next(iter(acked))
        again = episodes.process_chunk(
            ws,
            chunk_text=text(int(acked[some][1:])),
            chunk_id=acked[some],
            source_file="s.md",
            group_id=G,
        )
        assert again.episode_uuid == some and again.extraction.status == "duplicate"

        svc = ExtractionService(ScriptedExtractor(answer=answer), concurrency=4)
        res = svc.extract_pending(ws, G)
        assert res.extracted == len(pending) and res.remaining == 0 and res.failed == 0
        with ws.reading():
            assert all(ep.extracted for ep in gr.all_episodes(ws.graph, G))
            houston = [e for e in gr.all_entities(ws.graph, G) if e.name == "Houston"]
        assert len(houston) == 1, "every episode resolved to the one Houston"
        svc.close()
