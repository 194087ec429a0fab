"""A client's Cypher written for the reference's graph schema runs unchanged (issue 12 item 1).

The reference (lcg-api §5.1) stores an edge as a ``RelatesToNode_`` reached by two
``RELATES_TO`` hops, ``(src:Entity)-[:RELATES_TO]->(rn:RelatesToNode_)-[:RELATES_TO]->
(dst:Entity)``, the pattern all of its own reads use, with ``MENTIONS`` from ``Episodic`` to
``Entity`` and the columns listed there; ``knowledge_query_cypher`` answers ``{rows:
[[string]]}`` (values stringified, null as ``""``). The queries below are written from that
documentation, the way a client of the reference writes them, and are sent as they are to a
real service (real socket, real Kuzu) populated through the public methods: an episode
extracted by the scripted extractor (TEST DOUBLE, the LLM boundary) and asserted facts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import _service_fixtures as sf
from lcg.extract.extractor import ExtractedEdge, ExtractedEntity, ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest.extraction import ExtractionService
from lcg.rpc.app import ServiceApp

CHUNK = "Neil Armstrong commanded Apollo 11 for NASA; Apollo 11 landed on the Moon."
EXTRACTED = ExtractionOutput(
    entities=[
        ExtractedEntity(name="Neil Armstrong", entity_type="", summary="An astronaut."),
        ExtractedEntity(name="Apollo 11", entity_type="", summary="A mission."),
        ExtractedEntity(name="NASA", entity_type="", summary="A space agency."),
        ExtractedEntity(name="Moon", entity_type="", summary=""),
    ],
    edges=[
        ExtractedEdge(
            source_name="Neil Armstrong",
            target_name="Apollo 11",
            fact="Neil Armstrong commanded Apollo 11.",
            relation_type="COMMANDED",
        ),
        ExtractedEdge(
            source_name="Apollo 11",
            target_name="Moon",
            fact="Apollo 11 landed on the Moon.",
            relation_type="LANDED_ON",
        ),
    ],
)


class Seeded:
    """The populated service, one raw connection to it, and the uuids it returned."""

    def __init__(self, conn: sf.RawConnection, ids: dict[str, str]) -> None:
        self.conn = conn
        self.ids = ids

    def rows(self, query: str) -> list[list[str]]:
        result = self.conn.result("knowledge_query_cypher", {"query": query})
        assert set(result) == {"rows"}
        rows: list[list[str]] = result["rows"]
        return rows


@pytest.fixture(scope="module")
def seeded() -> Iterator[Seeded]:
    from lcg import telemetry

    telemetry.set_sink(None, enabled=False)

    def wire(app: ServiceApp) -> None:
        app.extraction = ExtractionService(ScriptedExtractor({CHUNK: EXTRACTED}), concurrency=1)

    with (
        sf.in_process_service(prepare=wire) as svc,
        sf.RawConnection(svc.socket_path) as conn,
    ):
        ids: dict[str, str] = {}
        r = conn.result(
            "knowledge_process_chunk",
            {"chunk_text": CHUNK, "chunk_id": "c1", "source_file": "apollo.md"},
        )
        ids["episode"] = r["episode_uuid"]
        r = conn.result(
            "knowledge_assert_entity",
            {"name": "Buzz Aldrin", "summary": "lunar module pilot", "group_id": "crew"},
        )
        ids["buzz"] = r["entity_uuid"]
        r = conn.result(
            "knowledge_assert_relationship",
            {"source_name": "Neil Armstrong", "target_name": "NASA", "predicate": "WORKED_FOR"},
        )
        ids["worked"] = r["edge_uuid"]
        yield Seeded(conn, ids)


def test_two_hop_facts_of_a_group(seeded: Seeded) -> None:
    query = """
        MATCH (src:Entity)-[:RELATES_TO]->(rn:RelatesToNode_)-[:RELATES_TO]->(dst:Entity)
        WHERE rn.group_id = 'liminis' AND rn.invalid_at IS NULL
        RETURN src.name, rn.name, rn.fact, dst.name
        ORDER BY rn.fact
    """
    rows = seeded.rows(query)
    assert [[r[0], r[2], r[3]] for r in rows] == [
        ["Apollo 11", "Apollo 11 landed on the Moon.", "Moon"],
        ["Neil Armstrong", "Neil Armstrong WORKED_FOR NASA", "NASA"],
        ["Neil Armstrong", "Neil Armstrong commanded Apollo 11.", "Apollo 11"],
    ]
    assert rows[1][1] == "WORKED_FOR" and all(r[1] for r in rows)


def test_neighbours_of_an_entity_by_name(seeded: Seeded) -> None:
    query = """
        MATCH (e:Entity {name: 'Neil Armstrong'})-[:RELATES_TO]->(rn:RelatesToNode_)
              -[:RELATES_TO]->(other:Entity)
        RETURN other.name, rn.fact
        ORDER BY other.name
    """
    assert seeded.rows(query) == [
        ["Apollo 11", "Neil Armstrong commanded Apollo 11."],
        ["NASA", "Neil Armstrong WORKED_FOR NASA"],
    ]


def test_incoming_edges_and_the_edge_by_uuid(seeded: Seeded) -> None:
    query = """
        MATCH (src:Entity)-[:RELATES_TO]->(rn:RelatesToNode_)-[:RELATES_TO]->(dst:Entity)
        WHERE dst.name = 'Apollo 11'
        RETURN src.name, rn.relation_type
    """
    assert seeded.rows(query) == [["Neil Armstrong", "COMMANDED"]]
    uuid = seeded.ids["worked"]
    by_uuid = f"""
        MATCH (src:Entity)-[:RELATES_TO]->(rn:RelatesToNode_ {{uuid: '{uuid}'}})
              -[:RELATES_TO]->(dst:Entity)
        RETURN src.name, dst.name, rn.group_id
    """
    assert seeded.rows(by_uuid) == [["Neil Armstrong", "NASA", "liminis"]]


def test_episodes_mentioning_an_entity(seeded: Seeded) -> None:
    query = """
        MATCH (ep:Episodic)-[:MENTIONS]->(e:Entity)
        WHERE e.name = 'NASA'
        RETURN ep.uuid, ep.name, ep.source_description
    """
    [[uuid, name, source]] = seeded.rows(query)
    assert [uuid, name] == [seeded.ids["episode"], "c1"] and source.startswith("apollo.md")
    mentioned = """
        MATCH (ep:Episodic {name: 'c1'})-[:MENTIONS]->(e:Entity)
        RETURN e.name ORDER BY e.name
    """
    assert seeded.rows(mentioned) == [["Apollo 11"], ["Moon"], ["NASA"], ["Neil Armstrong"]]


def test_degree_per_entity_with_optional_match(seeded: Seeded) -> None:
    query = """
        MATCH (e:Entity) WHERE e.group_id = 'liminis'
        OPTIONAL MATCH (e)-[:RELATES_TO]->(rn:RelatesToNode_)-[:RELATES_TO]->(:Entity)
        WITH e, count(rn) AS out_degree
        RETURN e.name, out_degree
        ORDER BY e.name
    """
    assert seeded.rows(query) == [
        ["Apollo 11", "1"],
        ["Moon", "0"],
        ["NASA", "0"],
        ["Neil Armstrong", "2"],
    ]


def test_counts_per_group(seeded: Seeded) -> None:
    query = """
        MATCH (e:Entity)
        RETURN e.group_id, count(e) AS n
        ORDER BY e.group_id
    """
    assert seeded.rows(query) == [["crew", "1"], ["liminis", "4"]]
    assert seeded.rows("MATCH (rn:RelatesToNode_) RETURN count(rn)") == [["3"]]
    assert seeded.rows("MATCH (ep:Episodic) RETURN count(ep)") == [["1"]]


def test_every_documented_column_binds(seeded: Seeded) -> None:
    """Each column of lcg-api §5.1 (vectors aside) exists, with values of the right shape."""
    [entity] = seeded.rows(
        "MATCH (e:Entity {name: 'Neil Armstrong'}) RETURN e.uuid, e.name, e.group_id, "
        "e.labels, e.created_at, e.summary, e.attributes"
    )
    assert entity[1:3] == ["Neil Armstrong", "liminis"]
    assert "Entity" in json.loads(entity[3]) and entity[4] and entity[5] == "An astronaut."
    assert isinstance(json.loads(entity[6]), dict)
    [episode] = seeded.rows(
        "MATCH (ep:Episodic) RETURN ep.uuid, ep.name, ep.group_id, ep.created_at, ep.source, "
        "ep.source_description, ep.content, ep.valid_at, ep.entity_edges"
    )
    assert episode[:3] == [seeded.ids["episode"], "c1", "liminis"]
    assert episode[6] == CHUNK and len(json.loads(episode[8])) == 4
    [edge] = seeded.rows(
        f"MATCH (rn:RelatesToNode_ {{uuid: '{seeded.ids['worked']}'}}) RETURN rn.uuid, "
        "rn.name, rn.group_id, rn.created_at, rn.fact, rn.episodes, rn.expired_at, "
        "rn.valid_at, rn.invalid_at, rn.attributes, rn.relation_type"
    )
    assert edge[:3] == [seeded.ids["worked"], "WORKED_FOR", "liminis"]
    assert edge[4] == "Neil Armstrong WORKED_FOR NASA" and edge[3]
    assert edge[6] == "" and edge[8] == ""  # expired_at never written; still current
    [mention] = seeded.rows(
        "MATCH (:Episodic)-[m:MENTIONS]->(e:Entity {name: 'Moon'}) "
        "RETURN m.uuid, m.group_id, m.created_at"
    )
    assert mention[0] and mention[1] == "liminis"


def test_unbound_edges_have_no_hops(seeded: Seeded) -> None:
    """Every edge is a ``RelatesToNode_``; only bound ones are reached by the two hops."""
    every = seeded.rows("MATCH (rn:RelatesToNode_) RETURN count(rn)")
    hopped = seeded.rows(
        "MATCH (:Entity)-[:RELATES_TO]->(rn:RelatesToNode_)-[:RELATES_TO]->(:Entity) "
        "RETURN count(rn)"
    )
    assert every == hopped == [["3"]]


def test_reference_only_tables_bind_and_are_empty(seeded: Seeded) -> None:
    """The stubs and the direct Entity→Entity pair exist (queries bind) but hold nothing."""
    assert seeded.rows("MATCH (c:Community) RETURN count(c)") == [["0"]]
    assert seeded.rows("MATCH (s:Saga)-[:HAS_EPISODE]->(ep:Episodic) RETURN count(ep)") == [["0"]]
    assert seeded.rows("MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity) RETURN r.fact") == []
    assert seeded.rows("MATCH (p:WalPosition) RETURN p.id, p.applied_seq") != []
