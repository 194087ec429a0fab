"""The graph projection's schema: the reference's tables, and a stale schema is rebuilt.

A graph database written by an earlier schema (version 1: relationships as Kuzu rels with
properties, ``UnboundEdge``, ``Position``) is a stale projection, not damage: opening it
discards it and the workspace's catch-up replays the streams into the current schema, with
the same canonical digest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kuzu
import pyarrow as pa
import pytest

from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion, episodes
from lcg.projections.graph import GraphProjection
from lcg.projections.graph._schema import (
    DB_FILE,
    DDL,
    SCHEMA_VERSION,
    TABLES,
    arrow_fields,
    assignments,
    props,
    select,
    stored_version,
    table_names,
)
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


#: The version-2 schema as it was written out by hand before the table spec generated it, with
#: version 3's ``Entity.name_key`` (ADR 0151) and version 4's ``Source`` (ADR 0200): the spec
#: must produce exactly these statements (a change is a new SCHEMA_VERSION).
V4_DDL_TEXT = (
    "CREATE NODE TABLE IF NOT EXISTS Entity(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, labels STRING[], created_at TIMESTAMP, summary STRING, "
    "attributes STRING, name_key STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Episodic(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, created_at TIMESTAMP, source STRING, source_description STRING, "
    "content STRING, valid_at TIMESTAMP, entity_edges STRING[], content_hash STRING, "
    "extracted BOOLEAN)",
    "CREATE NODE TABLE IF NOT EXISTS RelatesToNode_(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, created_at TIMESTAMP, fact STRING, episodes STRING[], "
    "expired_at TIMESTAMP, valid_at TIMESTAMP, invalid_at TIMESTAMP, attributes STRING, "
    "relation_type STRING, source_node_uuid STRING, target_node_uuid STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Community(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, created_at TIMESTAMP, summary STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Saga(uuid STRING PRIMARY KEY, name STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS RELATES_TO(FROM Entity TO RelatesToNode_, "
    "FROM RelatesToNode_ TO Entity, FROM Entity TO Entity, uuid STRING, name STRING, "
    "group_id STRING, fact STRING, valid_at TIMESTAMP, invalid_at TIMESTAMP, "
    "attributes STRING)",
    "CREATE REL TABLE IF NOT EXISTS MENTIONS(FROM Episodic TO Entity, uuid STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS HAS_MEMBER(FROM Community TO Entity, "
    "FROM Community TO Community, uuid STRING, group_id STRING, created_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS HAS_EPISODE(FROM Saga TO Episodic, uuid STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS NEXT_EPISODE(FROM Episodic TO Episodic, uuid STRING, "
    "group_id STRING, created_at TIMESTAMP)",
    "CREATE NODE TABLE IF NOT EXISTS WalPosition(id STRING PRIMARY KEY, applied_seq INT64, "
    "generation STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Source(uuid STRING PRIMARY KEY, group_id STRING, "
    "root STRING, label STRING, kind STRING, synced_at TIMESTAMP)",
    "CREATE NODE TABLE IF NOT EXISTS GraphSchema(version INT64 PRIMARY KEY)",
)


def test_the_table_spec_generates_the_version_4_ddl() -> None:
    assert SCHEMA_VERSION == 4
    assert DDL == V4_DDL_TEXT


def test_a_database_holds_the_spec_and_bulk_loads_follow_it(tmp_path: Path) -> None:
    # One spec: the created tables, the Arrow columns of COPY and the RETURN lists agree.
    graph = GraphProjection(tmp_path / "db")
    kuzu_to_arrow: dict[str, Any] = {
        "STRING": pa.string(),
        "TIMESTAMP": pa.timestamp("us"),
        "STRING[]": pa.list_(pa.string()),
        "BOOLEAN": pa.bool_(),
        "INT64": pa.int64(),
    }
    try:
        with graph.reader() as conn:
            for table in TABLES:
                result = conn.execute(f"CALL table_info('{table.name}') RETURN name, type")
                assert isinstance(result, kuzu.QueryResult)
                # Kuzu reports the DDL's BOOLEAN by its alias BOOL.
                held = [(n, "BOOLEAN" if t == "BOOL" else t) for n, t in result.get_all()]
                assert held == list(table.columns)
                assert [t for _, t in arrow_fields(table.name)] == [
                    kuzu_to_arrow[t] for _, t in table.columns
                ]
                # Every column of the spec can be returned by name.
                pattern = f"()-[x:{table.name}]->()" if table.pairs else f"(x:{table.name})"
                conn.execute(f"MATCH {pattern} RETURN {select('x', table.name)} LIMIT 1")
    finally:
        graph.close()


def test_a_return_list_naming_an_unknown_column_fails_where_it_is_built() -> None:
    assert select("e", "Entity", ("uuid", "name")) == "e.uuid, e.name"
    with pytest.raises(KeyError, match="Entity has no column 'uuid_'"):
        select("e", "Entity", ("uuid_",))


def test_write_statements_are_generated_from_the_spec() -> None:
    # Typed columns are cast from their parameter; the primary key is never SET.
    assert props("MENTIONS", "$") == (
        "{uuid: $uuid, group_id: $group_id, created_at: CAST($created_at AS TIMESTAMP)}"
    )
    assert assignments("Entity", "e", "r.") == (
        "e.name = r.name, e.group_id = r.group_id, e.labels = CAST(r.labels AS STRING[]), "
        "e.created_at = CAST(r.created_at AS TIMESTAMP), e.summary = r.summary, "
        "e.attributes = r.attributes, e.name_key = r.name_key"
    )
