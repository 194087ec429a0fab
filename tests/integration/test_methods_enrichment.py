"""The read methods on extracted data (MENTIONS present): enrichment of list/neighbors rows,
``get_entities_by_source`` and its collapse semantics, and the rows that are never enriched
(lcg-api.md §2.2, §3.5, §4).

The extractor is the scripted test double (``ScriptedExtractor``, named as such), wired into
the real app with the extraction methods; chunks go in lite, then
``knowledge_extract_pending`` extracts them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.extract.extractor import ExtractedEdge, ExtractedEntity, ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest.extraction import ExtractionService
from lcg.rpc.app import ServiceApp
from lcg.workspace.ontology_files import OntologyLoader

T1 = "Neil Armstrong commanded Apollo 11 for NASA."
T2 = "NASA built the Saturn V."
T3 = "Buzz Aldrin flew on Apollo 11."


def _e(name: str) -> ExtractedEntity:
    return ExtractedEntity(name=name, entity_type="", summary=f"about {name}")


def _r(src: str, tgt: str, fact: str) -> ExtractedEdge:
    return ExtractedEdge(source_name=src, target_name=tgt, fact=fact, relation_type="REL")


TABLE = {
    T1: ExtractionOutput(
        entities=[_e("Neil Armstrong"), _e("Apollo 11"), _e("NASA")],
        edges=[_r("Neil Armstrong", "Apollo 11", "Neil Armstrong commanded Apollo 11.")],
    ),
    T2: ExtractionOutput(
        entities=[_e("NASA"), _e("Saturn V")],
        edges=[_r("NASA", "Saturn V", "NASA built the Saturn V.")],
    ),
    T3: ExtractionOutput(
        entities=[_e("Buzz Aldrin"), _e("Apollo 11")],
        edges=[_r("Buzz Aldrin", "Apollo 11", "Buzz Aldrin flew on Apollo 11.")],
    ),
}


@dataclass
class World:
    """The service and what was ingested."""

    conn: sf.RawConnection
    ep: dict[str, str]
    ent: dict[tuple[str, str], str]


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    from lcg import telemetry

    telemetry.set_sink(None, enabled=False)

    def prepare(app: ServiceApp) -> None:
        app.extraction = ExtractionService(  # type: ignore[attr-defined]
            ScriptedExtractor(TABLE), OntologyLoader(None), concurrency=2
        )

    with sf.in_process_service(prepare=prepare) as svc, sf.RawConnection(svc.socket_path) as c:
        ep = {}
        for key, text, cid, src, group in (
            ("c1", T1, "c1", "mission.txt", "liminis"),
            ("c2", T2, "c2", "rockets.txt", "liminis"),
            ("c3", T3, "c3", "mission.txt", "g2"),
        ):
            r = c.result(
                "knowledge_process_chunk",
                {"chunk_text": text, "chunk_id": cid, "source_file": src, "group_id": group},
            )
            ep[key] = r["episode_uuid"]
        for group in ("liminis", "g2"):
            res = c.result("knowledge_extract_pending", {"group_id": group})
            assert res["success"] is True, res
        nodes = c.result("knowledge_get_nodes_by_group", {})["nodes"]
        ent = {(n["group_id"], n["name"]): n["uuid"] for n in nodes}
        yield World(c, ep, ent)


def test_list_entities_enrichment_is_aligned(world: World) -> None:
    rows = {
        (n["group_id"], n["name"]): n
        for n in world.conn.result("knowledge_list_entities", {})["nodes"]
    }
    nasa = rows[("liminis", "NASA")]
    got = dict(zip(nasa["episode_uuids"], nasa["source_descriptions"], strict=True))
    assert got == {world.ep["c1"]: "mission.txt:c1", world.ep["c2"]: "rockets.txt:c2"}
    neil = rows[("liminis", "Neil Armstrong")]
    assert neil["episode_uuids"] == [world.ep["c1"]]
    assert neil["source_descriptions"] == ["mission.txt:c1"]
    buzz = rows[("g2", "Buzz Aldrin")]
    assert buzz["episode_uuids"] == [world.ep["c3"]]


def test_list_relationships_enrichment_unions_both_endpoints(world: World) -> None:
    facts = world.conn.result("knowledge_list_relationships", {"group_ids": ["liminis"]})["facts"]
    by_fact = {f["fact"]: f for f in facts}
    built = by_fact["NASA built the Saturn V."]
    # source endpoint (NASA: c1, c2) then target (Saturn V: c2), de-duplicated
    assert set(built["episode_uuids"]) == {world.ep["c1"], world.ep["c2"]}
    assert len(built["episode_uuids"]) == len(built["source_descriptions"]) == 2
    assert built["name"] == "NASA → Saturn V"  # extracted edge names carry the arrow


def test_rows_that_are_never_enriched(world: World) -> None:
    for method, key, params in (
        ("knowledge_find_entities", "nodes", {"query": "NASA", "num_results": 50}),
        ("knowledge_get_nodes_by_group", "nodes", {}),
        ("knowledge_get_edges_by_group", "edges", {}),
    ):
        rows = world.conn.result(method, params)[key]
        assert rows, method
        for row in rows:
            assert row["episode_uuids"] == [] and row["source_descriptions"] == [], (method, row)


def test_episode_entity_edges_are_entity_uuids(world: World) -> None:
    eps = world.conn.result("knowledge_get_episodes", {})["episodes"]
    c1 = next(e for e in eps if e["uuid"] == world.ep["c1"])
    want = {world.ent[("liminis", n)] for n in ("Neil Armstrong", "Apollo 11", "NASA")}
    assert set(c1["entity_edges"]) == want


def _names(result: dict[str, Any]) -> set[tuple[str, str]]:
    return {(n["group_id"], n["name"]) for n in result["nodes"]}


def test_entities_by_source_contains_and_collapse(world: World) -> None:
    conn = world.conn
    every = {("liminis", "Neil Armstrong"), ("liminis", "Apollo 11"), ("liminis", "NASA"),
             ("g2", "Buzz Aldrin"), ("g2", "Apollo 11")}  # fmt: skip
    r = conn.result("knowledge_get_entities_by_source", {"source": "mission.txt"})
    assert r["source"] == "mission.txt" and r["count"] == len(r["nodes"])
    assert _names(r) == every
    for groups in ([], [9]):  # collapse: [] and all-dropped mean every group
        got = conn.result(
            "knowledge_get_entities_by_source", {"source": "mission", "group_ids": groups}
        )
        assert _names(got) == every, groups
    g2 = conn.result("knowledge_get_entities_by_source", {"source": "mission", "group_ids": "g2"})
    assert _names(g2) == {("g2", "Buzz Aldrin"), ("g2", "Apollo 11")}
    rockets = conn.result("knowledge_get_entities_by_source", {"source": "rockets.txt:c2"})
    assert _names(rockets) == {("liminis", "NASA"), ("liminis", "Saturn V")}
    one = conn.result("knowledge_get_entities_by_source", {"source": "txt", "num_results": 1})
    assert one["count"] == 1


def test_neighbors_rows_are_enriched(world: World) -> None:
    center = world.ent[("liminis", "Neil Armstrong")]
    r = world.conn.result("knowledge_get_entity_neighbors", {"entity_uuid": center})
    assert [n["name"] for n in r["nodes"]] == ["Apollo 11"]
    assert r["nodes"][0]["episode_uuids"] == [world.ep["c1"]]
    assert r["edges"][0]["fact"] == "Neil Armstrong commanded Apollo 11."
