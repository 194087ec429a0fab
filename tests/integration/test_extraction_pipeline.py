"""The extraction pipeline end to end on a real Workspace (real Kuzu, hnswlib, BM25, stream),
with the scripted extractor (TEST DOUBLE) and the hash embedder (TEST DOUBLE)."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from lcg.config import Config
from lcg.events.model import EpisodeAdded, EpisodeExtracted, Event
from lcg.extract.extractor import ExtractedEdge, ExtractedEntity, ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest import episodes
from lcg.ingest.extraction import ExtractionService
from lcg.projections.graph import records as gr
from lcg.workspace import Workspace
from lcg.workspace.ontology_files import OntologyLoader

G = "liminis"
ENV = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off", "LCG_WAL_FSYNC": "off"}


def _config(root: Path, **env: str) -> Config:
    return Config.from_env(root, env={**ENV, **env})


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    w = Workspace.open(_config(tmp_path))
    yield w
    w.close()


def ent(name: str, etype: str = "", summary: str = "") -> ExtractedEntity:
    return ExtractedEntity(name=name, entity_type=etype, summary=summary)


def edge(src: str, tgt: str, fact: str, rtype: str | None = None, **kw: Any) -> ExtractedEdge:
    return ExtractedEdge(source_name=src, target_name=tgt, fact=fact, relation_type=rtype, **kw)


def out(entities: list[ExtractedEntity], edges: list[ExtractedEdge] = ()) -> ExtractionOutput:  # type: ignore[assignment]
    return ExtractionOutput(entities=entities, edges=list(edges))


def events(w: Workspace, group: str = G) -> list[Event]:
    return list(w.store.reader(group).events())


def chunk(svc: ExtractionService, w: Workspace, text: str, cid: str, **kw: Any) -> Any:
    return svc.process_chunk(
        w,
        chunk_text=text,
        chunk_id=cid,
        source_file="apollo.md",
        group_id=kw.pop("group_id", G),
        reference_time="2024-05-01T12:00:00Z",
        **kw,
    )


T1 = "Neil Armstrong commanded Apollo 11 for NASA."
T2 = "neil  armstrong, who flew Apollo 11, worked for NASA."
TABLE = {
    T1: out(
        [
            ent("Neil Armstrong", "Person", "Neil Armstrong was an American astronaut."),
            ent("Apollo 11", "Event", "Apollo 11 was the first crewed Moon landing."),
            ent("NASA", "Organization", "NASA is the US space agency."),
            ent("Neil Armstrong ", "Person", "He commanded Apollo 11."),  # in-batch duplicate
        ],
        [
            edge("Neil Armstrong", "Apollo 11", "Neil Armstrong commanded Apollo 11.", "COMMANDED"),
            edge("Neil Armstrong", "NASA", "Neil Armstrong worked for NASA.", "WORKED_FOR"),
            edge("Neil Armstrong", "Mystery Person", "Armstrong met someone.", "MET"),
            edge("Ghost One", "Ghost Two", "Two ghosts met.", "MET"),
            edge("Neil Armstrong", "neil armstrong", "He is himself.", "IS"),  # self-loop
        ],
    ),
    T2: out(
        [
            ent("neil  armstrong", "Person", "He walked on the Moon in 1969."),
            ent("NASA", "Organization", "NASA is the US space agency."),
        ],
        [
            # Same endpoints and type as an active edge: a restatement, not a duplicate.
            edge("neil  armstrong", "NASA", "Armstrong was employed by NASA.", "WORKED_FOR"),
            # An endpoint the batch lacks but the group has (Apollo 11): resolved in the group.
            edge("neil  armstrong", "Apollo 11", "Armstrong flew on Apollo 11.", "FLEW_ON"),
        ],
    ),
}


def test_pipeline_end_to_end(ws: Workspace) -> None:
    svc = ExtractionService(ScriptedExtractor(TABLE))
    r1 = chunk(svc, ws, T1, "c1")
    assert r1.extraction.status == "extracted"
    assert r1.nodes_extracted == 4 and r1.edges_extracted == 2
    assert r1.edges_dropped_unresolvable == 2
    assert [(d.target_name, d.unresolved_endpoint) for d in r1.dropped_edges] == [
        ("Mystery Person", "target"),
        ("Ghost Two", "both"),
    ]
    with ws.reading():
        entities = {e.name: e for e in gr.all_entities(ws.graph, G)}
        edges = gr.all_edges(ws.graph, G)
    assert sorted(entities) == ["Apollo 11", "NASA", "Neil Armstrong"]
    neil = entities["Neil Armstrong"]
    assert neil.labels == ["Entity", "Person"]
    assert neil.summary == "Neil Armstrong was an American astronaut. He commanded Apollo 11."
    assert sorted(e.name for e in edges) == ["Neil Armstrong → Apollo 11", "Neil Armstrong → NASA"]
    assert all(e.episodes == [r1.episode_uuid] for e in edges)
    assert all(e.valid_at == "2024-05-01T12:00:00.000000Z" for e in edges)
    extracted = [e for e in events(ws) if isinstance(e, EpisodeExtracted)]
    assert len(extracted) == 1
    reasons = sorted(d.reason for d in extracted[0].edges_dropped)
    assert reasons == ["self_loop", "unresolvable", "unresolvable"]
    assert len(extracted[0].mentions) == 3

    r2 = chunk(svc, ws, T2, "c2")
    assert r2.extraction.status == "extracted"
    assert r2.edges_extracted == 1 and r2.edges_dropped_unresolvable == 0
    with ws.reading():
        entities2 = {e.name: e for e in gr.all_entities(ws.graph, G)}
        edges2 = {e.name + "|" + (e.relation_type or ""): e for e in gr.all_edges(ws.graph, G)}
    assert sorted(entities2) == sorted(entities), "variants resolved to the existing entities"
    assert entities2["Neil Armstrong"].summary.endswith("He walked on the Moon in 1969.")
    assert entities2["NASA"].summary == "NASA is the US space agency.", "nothing new: unchanged"
    worked = edges2["Neil Armstrong → NASA|WORKED_FOR"]
    assert worked.episodes == [r1.episode_uuid, r2.episode_uuid]
    assert "neil  armstrong → Apollo 11|FLEW_ON" in edges2
    ev2 = [e for e in events(ws) if isinstance(e, EpisodeExtracted)][1]
    assert [r.uuid for r in ev2.edges_restated] == [worked.uuid]
    assert [u.uuid for u in ev2.entities_updated] == [neil.uuid]
    assert ev2.entities_created == []
    assert set(ev2.mentions) == {neil.uuid, entities["NASA"].uuid}


def test_reextracting_is_a_noop_and_a_resend_dedups(ws: Workspace) -> None:
    ex = ScriptedExtractor(TABLE)
    svc = ExtractionService(ex)
    r1 = chunk(svc, ws, T1, "c1")
    again = svc.extract_episode(ws, r1.episode_uuid)
    assert again.status == "already_extracted"
    resend = chunk(svc, ws, T1, "c1")
    assert resend.episode_uuid == r1.episode_uuid
    assert resend.extraction.status == "duplicate"
    kinds = [type(e).__name__ for e in events(ws)]
    assert kinds == ["EpisodeAdded", "EpisodeExtracted"]
    assert ex.calls == 1
    assert svc.extract_episode(ws, "no-such-episode").status == "not_found"


def test_failure_leaves_the_episode_pending_and_extract_pending_completes_it(
    ws: Workspace,
) -> None:
    failing = ScriptedExtractor(TABLE, fail_first=1)
    svc = ExtractionService(failing)
    r1 = chunk(svc, ws, T1, "c1")
    assert r1.extraction.status == "failed"
    assert "injected failure" in (r1.extraction.reason or "")
    assert r1.nodes_extracted == 0
    assert [type(e).__name__ for e in events(ws)] == ["EpisodeAdded"]
    assert svc.pending_count(ws, [G]) == 1
    res = svc.extract_pending(ws)
    assert res.success and res.attempted == 1 and res.extracted == 1 and res.remaining == 0
    assert res.nodes_extracted == 4


def test_extract_pending_in_lite_mode_then_with_an_extractor(ws: Workspace) -> None:
    lite = ExtractionService(None)
    texts = [f"Astronaut number {i} trained at Houston." for i in range(12)]
    for i, t in enumerate(texts):
        r = chunk(lite, ws, t, f"c{i}", group_id="g1" if i % 2 else "g2")
        assert r.extraction.status == "pending"
    assert lite.extract_pending(ws).success is False
    table = {
        t: out(
            [ent(f"Astronaut {i}", "Person"), ent("Houston", "Location")],
            [edge(f"Astronaut {i}", "Houston", f"Astronaut {i} trained at Houston.", "TRAINED_AT")],
        )
        for i, t in enumerate(texts)
    }
    scripted = ScriptedExtractor(table, latency_s=0.02)
    svc = ExtractionService(scripted, concurrency=4)
    seen: list[tuple[int, int]] = []
    res = svc.extract_pending(ws, group_id="g1", limit=4, progress=lambda p, t: seen.append((p, t)))
    assert res.attempted == 4 and res.extracted == 4 and res.remaining == 2
    assert seen[0] == (0, 4) and seen[-1] == (4, 4)
    res = svc.extract_pending(ws)
    assert res.extracted == 8 and res.remaining == 0 and res.failed == 0
    assert scripted.max_in_flight > 1, "episodes extract concurrently"
    with ws.reading():
        for g in ("g1", "g2"):
            houses = [e for e in gr.all_entities(ws.graph, g) if e.name == "Houston"]
            assert len(houses) == 1, "one Houston per group"
    svc.close()


def test_strict_ontology_types_and_hierarchy(tmp_path: Path) -> None:
    (tmp_path / ".lcg").mkdir()
    (tmp_path / ".lcg" / "ontology.yaml").write_text(
        "mode: strict\n"
        "entity_types:\n"
        "  - {name: Agent}\n"
        "  - {name: Person, parent: Agent}\n"
        "  - {name: Mission}\n"
        "relation_types:\n"
        "  - {name: COMMANDED, aliases: [LED]}\n"
    )
    config = _config(tmp_path, LIMINIS_WORKSPACE_ROOT=str(tmp_path))
    text = "Armstrong led Apollo 11 near the Moon."
    table = {
        text: out(
            [ent("Neil Armstrong", "person"), ent("Apollo 11", "mission"), ent("Moon", "Planet")],
            [
                edge("Neil Armstrong", "Apollo 11", "Armstrong led Apollo 11.", "led"),
                edge("Apollo 11", "Moon", "Apollo 11 went to the Moon.", "went to"),
            ],
        )
    }
    with Workspace.open(config) as w:
        svc = ExtractionService(
            ScriptedExtractor(table), OntologyLoader(config.workspace_root), concurrency=2
        )
        r = chunk(svc, w, text, "c1")
        assert r.entities_reclassified_unclassified == 1
        assert r.edges_reclassified_unclassified == 1
        with w.reading():
            ents = {e.name: e for e in gr.all_entities(w.graph, G)}
            eds = {e.fact: e for e in gr.all_edges(w.graph, G)}
        assert ents["Neil Armstrong"].labels == ["Entity", "Agent", "Person"]
        assert ents["Moon"].labels == ["Entity", "Unclassified"]
        assert '"original_entity_type":"Planet"' in ents["Moon"].attributes
        assert eds["Armstrong led Apollo 11."].relation_type == "COMMANDED"
        assert eds["Apollo 11 went to the Moon."].relation_type == "UNCLASSIFIED"
        assert "original_relation_type" in eds["Apollo 11 went to the Moon."].attributes
        assert svc.extractor is not None
        req = svc.extractor.requests[0]  # type: ignore[attr-defined]
        assert req.ontology is not None and req.ontology.strict
        # As the reference: the ontology the graph was extracted with is recorded.
        from lcg.events.sidecars import read_ontology_sidecar
        from lcg.workspace.ontology_files import read_hash_file

        recorded = read_hash_file(tmp_path)
        assert recorded is not None and recorded.hash == req.ontology.hash
        sidecar = read_ontology_sidecar(w.store.group_dir(G))
        assert sidecar is not None and sidecar.hash == req.ontology.hash
        assert sidecar.mode == "strict" and sidecar.entity_types == ["Agent", "Person", "Mission"]


def test_replay_rebuilds_the_same_graph(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with Workspace.open(config) as w:
        svc = ExtractionService(ScriptedExtractor(TABLE))
        chunk(svc, w, T1, "c1")
        chunk(svc, w, T2, "c2")
        before = w.digests(G)
    for d in (config.db_dir, config.text_dir, config.vectors_dir):
        shutil.rmtree(d)
    with Workspace.open(config) as w:
        assert w.digests(G) == before
        kinds = [type(e) for e in events(w)]
        assert kinds.count(EpisodeAdded) == 2 and kinds.count(EpisodeExtracted) == 2


def test_lite_mode_add_episode_is_unchanged(ws: Workspace) -> None:
    svc = ExtractionService(None)
    r = svc.add_episode(ws, name="e", episode_body="hello world", group_id=G)
    assert r.extraction.status == "pending"
    direct = episodes.add_episode(ws, name="e2", episode_body="hi", group_id=G)
    assert direct.extraction.status == "pending"
    svc2 = ExtractionService(ScriptedExtractor(default=out([ent("Hello World", "Concept")])))
    r2 = svc2.add_episode(ws, name="e3", episode_body="hello again", group_id=G)
    assert r2.extraction.status == "extracted"


def test_racing_extractions_of_one_episode_append_one_event(ws: Workspace) -> None:
    lite = ExtractionService(None)
    r = chunk(lite, ws, T1, "c1")
    scripted = ScriptedExtractor(TABLE, latency_s=0.05)
    svc = ExtractionService(scripted, concurrency=4)
    results = svc.extract_many(ws, [r.episode_uuid] * 4)
    statuses = sorted(x.status for x in results)
    assert statuses.count("extracted") == 1
    assert set(statuses) - {"extracted"} <= {"in_progress", "already_extracted"}
    assert scripted.calls == 1, "one LLM extraction for one episode"
    # Two services (no shared claims) racing on one episode: both call the LLM, the
    # re-check under the group's lock lets exactly one append.
    r2 = chunk(lite, ws, T2, "c2")
    both_in_llm = threading.Barrier(2, timeout=30)

    def meet(req: Any) -> ExtractionOutput:
        both_in_llm.wait()  # neither finishes before the other has started
        return TABLE[req.body]

    a = ExtractionService(ScriptedExtractor(answer=meet))
    b = ExtractionService(ScriptedExtractor(answer=meet))
    with ThreadPoolExecutor(2) as pool:
        both = list(pool.map(lambda s: s.extract_episode(ws, r2.episode_uuid), [a, b]))
    assert sorted(x.status for x in both) == ["already_extracted", "extracted"]
    kinds = [type(e).__name__ for e in events(ws)]
    assert kinds == ["EpisodeAdded", "EpisodeExtracted", "EpisodeAdded", "EpisodeExtracted"]
    svc.close()


def test_a_merged_tombstone_resolves_to_its_canonical(ws: Workspace) -> None:
    from lcg.ingest import merge

    svc = ExtractionService(ScriptedExtractor(TABLE))
    chunk(svc, ws, T1, "c1")
    with ws.reading():
        neil = next(e for e in gr.all_entities(ws.graph, G) if e.name == "Neil Armstrong")
    asserted = ExtractionService(
        ScriptedExtractor(default=out([ent("Commander Armstrong", "Person")]))
    )
    chunk(asserted, ws, "Commander Armstrong flew.", "c2")
    with ws.reading():
        alias = next(e for e in gr.all_entities(ws.graph, G) if e.name == "Commander Armstrong")
    res = merge.merge_entities(ws, group_id=G, canonical_uuid=alias.uuid, alias_uuids=[neil.uuid])
    assert res.success and res.merged_count == 1
    again = ExtractionService(
        ScriptedExtractor(default=out([ent("Neil Armstrong", "Person", "A test pilot.")]))
    )
    r = chunk(again, ws, "Neil Armstrong was a test pilot.", "c3")
    ev = [e for e in events(ws) if isinstance(e, EpisodeExtracted)][-1]
    assert r.nodes_extracted == 1 and ev.entities_created == []
    assert ev.mentions == [alias.uuid], "the tombstone's name led to the surviving entity"
