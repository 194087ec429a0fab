"""The graph projection's schema: the reference's tables, and a stale schema is rebuilt.

A graph database written by an earlier schema (version 1: relationships as Kuzu rels with
properties, ``UnboundEdge``, ``Position``) is a stale projection, not damage: opening it
discards it and the workspace's catch-up replays the streams into the current schema, with
the same canonical digest.
"""

from __future__ import annotations

from pathlib import Path

import kuzu

from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion, episodes
from lcg.projections.graph import GraphProjection
from lcg.projections.graph._schema import DB_FILE, SCHEMA_VERSION, stored_version, table_names
from lcg.workspace import Workspace

#: The tables of schema version 1 (ADR 0014), as its databases hold them.
V1_DDL = (
    "CREATE NODE TABLE Entity(uuid STRING PRIMARY KEY, name STRING, group_id STRING, "
    "labels STRING[], created_at TIMESTAMP, summary STRING, attributes STRING)",
    "CREATE REL TABLE RELATES_TO(FROM Entity TO Entity, uuid STRING, name STRING, "
    "relation_type STRING, fact STRING, valid_at TIMESTAMP, invalid_at TIMESTAMP, "
    "expired_at TIMESTAMP, episodes STRING[], attributes STRING, group_id STRING, "
    "created_at TIMESTAMP)",
    "CREATE NODE TABLE UnboundEdge(uuid STRING PRIMARY KEY, group_id STRING, "
    "source_uuid STRING, target_uuid STRING, data STRING)",
    "CREATE NODE TABLE Position(group_id STRING PRIMARY KEY, applied_seq INT64, generation STRING)",
    "CREATE (:Position {group_id: 'g', applied_seq: 10, generation: 'old'})",
)


def _write_v1(db_dir: Path) -> None:
    db_dir.mkdir(parents=True, exist_ok=True)
    database = kuzu.Database(str(db_dir / DB_FILE))
    conn = kuzu.Connection(database)
    for statement in V1_DDL:
        conn.execute(statement)
    conn.close()
    database.close()


def test_a_new_database_has_the_reference_tables(tmp_path: Path) -> None:
    graph = GraphProjection(tmp_path / "db")
    try:
        with graph.reader() as conn:
            assert {
                "Entity", "Episodic", "RelatesToNode_", "RELATES_TO", "MENTIONS", "Community",
                "Saga", "HAS_MEMBER", "HAS_EPISODE", "NEXT_EPISODE", "WalPosition",
            } <= table_names(conn)  # fmt: skip
            assert stored_version(conn) == SCHEMA_VERSION
    finally:
        graph.close()


def test_a_version_1_database_is_discarded_at_open(tmp_path: Path) -> None:
    _write_v1(tmp_path / "db")
    graph = GraphProjection(tmp_path / "db")
    try:
        assert graph.positions() == {}
        with graph.reader() as conn:
            tables = table_names(conn)
            assert "RelatesToNode_" in tables and "UnboundEdge" not in tables
            assert stored_version(conn) == SCHEMA_VERSION
    finally:
        graph.close()


def test_a_workspace_with_a_version_1_graph_replays_into_the_new_schema(tmp_path: Path) -> None:
    config = Config.from_env(tmp_path, env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(config, HashEmbedder()) as ws:
        assertion.assert_entity(ws, name="Ada", group_id="g", summary="first programmer")
        assertion.assert_entity(ws, name="Babbage", group_id="g", summary="engine")
        assertion.assert_relationship(
            ws, source_name="Ada", target_name="Babbage", predicate="WORKED_WITH", group_id="g"
        )
        episodes.process_chunk(ws, chunk_text="a note", chunk_id="c", source_file="f", group_id="g")
        digests = ws.digests("g")
        counts = ws.graph.counts("g")
    # The graph is replaced by one in the old schema (another lcg version wrote it).
    for path in config.db_dir.glob(f"{DB_FILE}*"):
        path.unlink()
    _write_v1(config.db_dir)
    with Workspace.open(config, HashEmbedder()) as ws:
        assert ws.digests("g") == digests
        assert ws.graph.counts("g") == counts
        rows = ws.graph.query(
            "MATCH (s:Entity)-[:RELATES_TO]->(rn:RelatesToNode_)-[:RELATES_TO]->(t:Entity) "
            "RETURN s.name, rn.name, t.name"
        )
        assert rows == [["Ada", "WORKED_WITH", "Babbage"]]
