"""The statements the graph's writer runs: loads of the touched rows, creates, updates.

Each has a batched form (``UNWIND $keys``/``$rows``) and, where a primary-key lookup pays, a
single-row form (``…_ONE``); ``_conn.each`` picks one by the number of rows. Column lists
come from the table spec (``_schema``).
"""

from __future__ import annotations

from typing import Final

from lcg.projections.graph._schema import assignments, props, select

__all__ = [
    "CREATE_ENTITIES",
    "CREATE_EPISODES",
    "CREATE_MENTIONS",
    "CREATE_MENTION_ONE",
    "CREATE_RELS",
    "CREATE_REL_ONE",
    "CREATE_UNBOUND",
    "DELETE_ENTITIES",
    "DELETE_ENTITY_ONE",
    "DELETE_EPISODES",
    "DELETE_EPISODE_ONE",
    "DELETE_MENTIONS",
    "EDGE_COLUMNS",
    "EDGE_FIELDS",
    "EDGE_KEYS",
    "EDGE_PROPS",
    "ENTITY_COLUMNS",
    "EPISODE_COLUMNS",
    "LOAD_ENTITIES",
    "LOAD_ENTITY_ONE",
    "LOAD_EPISODES",
    "LOAD_EPISODE_ONE",
    "LOAD_MENTIONS",
    "LOAD_MENTIONS_ONE",
    "TAKE_COLUMNS",
    "TAKE_EDGES",
    "TAKE_EDGE_ONE",
    "UNHOP_EDGES",
    "UPDATE_ENTITIES",
    "UPDATE_ENTITY_ONE",
    "UPDATE_EPISODES",
    "UPDATE_EPISODE_ONE",
]

#: The columns read for an edge, its ``RelatesToNode_`` aliased ``e`` (the endpoints are its
#: own columns, so an unbound edge, without hops, reads the same).
#: ``EDGE_FIELDS`` is their order, the one ``edge_from_row`` reads.
EDGE_FIELDS: Final = (
    "uuid", "name", "source_node_uuid", "target_node_uuid", "fact", "relation_type",
    "valid_at", "invalid_at", "expired_at", "episodes", "attributes", "created_at", "group_id",
)  # fmt: skip
EDGE_COLUMNS: Final = select("e", "RelatesToNode_", EDGE_FIELDS)

ENTITY_COLUMNS: Final = select("e", "Entity")
EPISODE_COLUMNS: Final = select("p", "Episodic")

LOAD_ENTITIES: Final = f"UNWIND $keys AS k MATCH (e:Entity {{uuid: k}}) RETURN {ENTITY_COLUMNS}"
LOAD_EPISODES: Final = f"UNWIND $keys AS k MATCH (p:Episodic {{uuid: k}}) RETURN {EPISODE_COLUMNS}"
# Loading a touched edge also deletes it (its node and its hops, one lookup instead of two):
# the segment re-creates every loaded edge, changed or not, when it writes.
TAKE_COLUMNS: Final = (
    "WITH e, "
    + ", ".join(f"{c} AS c{i}" for i, c in enumerate(EDGE_COLUMNS.split(", ")))
    + " DETACH DELETE e RETURN "
    + ", ".join(f"c{i}" for i in range(len(EDGE_FIELDS)))
)
TAKE_EDGES: Final = f"UNWIND $keys AS k MATCH (e:RelatesToNode_ {{uuid: k}}) {TAKE_COLUMNS}"
LOAD_MENTIONS: Final = (
    "UNWIND $keys AS k MATCH (p:Episodic {uuid: k})-[:MENTIONS]->(n:Entity) RETURN p.uuid, n.uuid"
)

DELETE_EPISODES: Final = "UNWIND $keys AS k MATCH (p:Episodic {uuid: k}) DETACH DELETE p"

CREATE_ENTITIES: Final = f"UNWIND $rows AS r CREATE (:Entity {props('Entity', 'r.')})"
UPDATE_ENTITIES: Final = (
    "UNWIND $rows AS r WITH r.uuid AS k, r AS r MATCH (e:Entity {uuid: k}) "
    f"SET {assignments('Entity', 'e', 'r.')}"
)
CREATE_EPISODES: Final = f"UNWIND $rows AS r CREATE (:Episodic {props('Episodic', 'r.')})"
UPDATE_EPISODES: Final = (
    "UNWIND $rows AS r WITH r.uuid AS k, r AS r MATCH (p:Episodic {uuid: k}) "
    f"SET {assignments('Episodic', 'p', 'r.')}"
)
#: The keys an edge's parameters (``_states.edge_params``) carry its endpoint columns under.
EDGE_KEYS: Final = {"source_node_uuid": "source_uuid", "target_node_uuid": "target_uuid"}
# The properties of a new ``RelatesToNode_`` from a row ``r`` (``edge_params``).
EDGE_PROPS: Final = props("RelatesToNode_", "r.", EDGE_KEYS)
# Bound edges: the node and its two hops in one path. Each endpoint is bound in its own MATCH
# stage from a scalar, so Kuzu plans two hash joins; ``MATCH (a {uuid: r.s}), (b {uuid:
# r.t})`` plans a cross product of the two node scans, and ``COPY … FROM (UNWIND …)`` has a
# large fixed cost per statement (see bench/test_graph_bench.py and ADR 0014).
CREATE_RELS: Final = (
    "UNWIND $rows AS r WITH r.source_uuid AS s, r MATCH (a:Entity {uuid: s}) "
    "WITH a, r, r.target_uuid AS t MATCH (b:Entity {uuid: t}) "
    f"CREATE (a)-[:RELATES_TO]->(:RelatesToNode_ {EDGE_PROPS})-[:RELATES_TO]->(b)"
)
# Unbound edges: the node alone (an endpoint is missing; no hop, so reads do not see it).
CREATE_UNBOUND: Final = f"UNWIND $rows AS r CREATE (:RelatesToNode_ {EDGE_PROPS})"
CREATE_MENTIONS: Final = (
    "UNWIND $rows AS r WITH r.ep AS ep, r MATCH (p:Episodic {uuid: ep}) "
    "WITH p, r, r.en AS en MATCH (n:Entity {uuid: en}) "
    f"CREATE (p)-[:MENTIONS {props('MENTIONS', 'r.')}]->(n)"
)

# Single-row forms: a primary-key match on a plain parameter is the only lookup Kuzu serves
# from the hash index; every UNWIND-keyed MATCH above is a hash join over a full table scan.
# ``_each`` picks one form or the other by the number of rows and the table's size.
TAKE_EDGE_ONE: Final = f"MATCH (e:RelatesToNode_ {{uuid: $k}}) {TAKE_COLUMNS}"
LOAD_ENTITY_ONE: Final = f"MATCH (e:Entity {{uuid: $k}}) RETURN {ENTITY_COLUMNS}"
LOAD_EPISODE_ONE: Final = f"MATCH (p:Episodic {{uuid: $k}}) RETURN {EPISODE_COLUMNS}"
LOAD_MENTIONS_ONE: Final = (
    "MATCH (p:Episodic {uuid: $k})-[:MENTIONS]->(n:Entity) RETURN p.uuid, n.uuid"
)
DELETE_EPISODE_ONE: Final = "MATCH (p:Episodic {uuid: $k}) DETACH DELETE p"
UPDATE_ENTITY_ONE: Final = f"MATCH (e:Entity {{uuid: $uuid}}) SET {assignments('Entity', 'e', '$')}"
UPDATE_EPISODE_ONE: Final = (
    f"MATCH (p:Episodic {{uuid: $uuid}}) SET {assignments('Episodic', 'p', '$')}"
)
CREATE_REL_ONE: Final = (
    "MATCH (a:Entity {uuid: $source_uuid}), (b:Entity {uuid: $target_uuid}) "
    f"CREATE (a)-[:RELATES_TO]->(:RelatesToNode_ {props('RelatesToNode_', '$', EDGE_KEYS)})"
    "-[:RELATES_TO]->(b)"
)
CREATE_MENTION_ONE: Final = (
    "MATCH (p:Episodic {uuid: $ep}), (n:Entity {uuid: $en}) "
    f"CREATE (p)-[:MENTIONS {props('MENTIONS', '$')}]->(n)"
)

# Declared structure (``StructureDeclared``): a removed entity goes with its MENTIONS (its
# edges were taken before, and are written back unbound or not at all); a removed mention is
# the one relationship between an episode and an entity.
DELETE_ENTITIES: Final = "UNWIND $keys AS k MATCH (e:Entity {uuid: k}) DETACH DELETE e"
DELETE_ENTITY_ONE: Final = "MATCH (e:Entity {uuid: $k}) DETACH DELETE e"
# Both hops of an edge (another group's) whose endpoint is removed: it stays, unbound.
UNHOP_EDGES: Final = (
    "UNWIND $keys AS k MATCH (:Entity)-[h1:RELATES_TO]->(e:RelatesToNode_)-[h2:RELATES_TO]->"
    "(:Entity) WHERE e.uuid = k DELETE h1, h2"
)
DELETE_MENTIONS: Final = (
    "UNWIND $rows AS r WITH r.ep AS ep, r MATCH (p:Episodic {uuid: ep})-[m:MENTIONS]->"
    "(n:Entity) WHERE n.uuid = r.en DELETE m"
)
