"""A reference line is parsed against the documented templates and applied as parsed values
(ADR 0194); anything else is refused before it can do anything (issue 27 item 1).

The templates are the fixtures' (``make_reference_streams``, written from lcg-api §5.2, §5.6
and §10); the model is the in-memory tables the importer applies them to.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import make_reference_streams as SCRIPT
import pytest

from lcg.ingest.reference.model import ApplyError, ReferenceGraph
from lcg.ingest.reference.statements import (
    NotATemplate,
    SchemaError,
    is_index_statement,
    parse,
)
from lcg.ingest.reference.tokens import Kind, TokenError, tokenize

T0 = "2024-05-01T09:00:00Z"


def _entity(g: ReferenceGraph, uuid: str, **extra: Any) -> None:
    params = {
        "uuid": uuid, "name": uuid.upper(), "group_id": "g", "labels": ["Entity"],
        "created_at": T0, "name_embedding": [0.5], "summary": "", "attributes": "{}",
    }  # fmt: skip
    g.apply(parse(SCRIPT.E_CREATE), {**params, **extra})


# ---- the tokenizer ------------------------------------------------------------------------


def test_comments_are_dropped_and_never_make_a_keyword() -> None:
    tokens = tokenize("/* CREATE */ MATCH // SET\n (n) -- no")
    assert [t.text for t in tokens][:4] == ["MATCH", "(", "n", ")"]
    with pytest.raises(NotATemplate, match="not a write"):
        parse("/* CREATE */ MATCH (n:Entity {uuid: $u}) // SET n.name = 'x'")


def test_strings_and_backquoted_names_are_read_exactly() -> None:
    [s, name, word] = tokenize(r"'it\'s \u00fc\n' `CREATE``x` create")
    assert (s.kind, s.text) == (Kind.STRING, "it's \u00fc\n")
    assert (name.kind, name.text) == (Kind.NAME, "CREATE`x")  # a name, never a keyword
    assert word.kind is Kind.WORD
    for bad in ("'never ends", "/* never ends", r"'\q'", "`never", "a | b", "$ x", "12abc"):
        with pytest.raises(TokenError):
            tokenize(bad)


# ---- what parses --------------------------------------------------------------------------

DOCUMENTED = [
    SCRIPT.E_CREATE, SCRIPT.E_SUMMARY, SCRIPT.RN_CREATE, SCRIPT.DIRECT, SCRIPT.HOPS,
    SCRIPT.EP_CREATE, SCRIPT.MENTION, SCRIPT.SET_LABELS, SCRIPT.SET_E_ATTRS,
    SCRIPT.SET_RN_ATTRS, SCRIPT.SET_INVALID, SCRIPT.SET_RT, SCRIPT.SET_CREATED,
    SCRIPT.EP_DELETE,
    "MATCH (ep:Episodic) WHERE ep.uuid IN $uuids DETACH DELETE ep",
    "MATCH (x:Entity) WHERE x.group_id IN $gids DETACH DELETE x",
    "MERGE (n:Episodic {uuid: $uuid}) SET n.name = $name, n.created_at = timestamp($c), "
    "n.valid_at = CASE WHEN $v IS NULL THEN NULL ELSE timestamp($v) END",
    "MERGE (n:Entity {uuid: $uuid}) ON CREATE SET n.name = $name ON MATCH SET n.summary = $s",
    "MATCH (a:Entity {uuid: $a}), (e:RelatesToNode_ {uuid: $e}), (b:Entity {uuid: $b}) "
    "MERGE (a)-[:RELATES_TO]->(e) MERGE (e)-[:RELATES_TO]->(b)",
    "MATCH (episode:Episodic {uuid: $ep}) MATCH (node:Entity {uuid: $en}) MERGE (episode)"
    "-[r:MENTIONS {uuid: $uuid}]->(node) ON CREATE SET r.group_id = $g",
    "MATCH (n:Entity {uuid: $uuid}) SET n = $props",
    "CREATE (:Entity {uuid: 'x', name_embedding: vecf32([0.5, -1.0e-3, (2)])});",
]  # fmt: skip


@pytest.mark.parametrize("cypher", DOCUMENTED)
def test_every_documented_template_parses(cypher: str) -> None:
    assert parse(cypher).writes


REFUSED = {
    "a read": "MATCH (n:Entity) RETURN n.name",
    "a keyword in a literal": "MATCH (n:Entity) WHERE n.name = 'CREATE SET' RETURN n",
    "COPY": "COPY Entity TO '/tmp/x.csv'",
    "LOAD FROM": "LOAD FROM '/etc/passwd' CREATE (:Entity {uuid: column0})",
    "CALL": "CALL create_fts_index('Entity', 'i', ['name']) CREATE (:Saga {uuid: 'x'})",
    "UNWIND": "UNWIND range(1, 9) AS i CREATE (:Entity {uuid: 'u'})",
    "two statements": "CREATE (:Saga {uuid: 'a'}); CREATE (:Saga {uuid: 'b'})",
    "a function": "CREATE (:Entity {uuid: toString(1)})",
    "an operator": "CREATE (:Entity {uuid: 'a' + 'b'})",
    "a property read": "MATCH (a:Entity {uuid: $a}) SET a.name = a.summary",
    "a scan that creates": "MATCH (a:Entity), (b:Entity {uuid: $b}) CREATE (a)-[:RELATES_TO]->(b)",
    "two lists of keys": "MATCH (a:Entity) WHERE a.uuid IN $x MATCH (b:Entity) WHERE b.uuid IN "
    "$y CREATE (a)-[:RELATES_TO]->(b)",
    "a merge without its key": "MERGE (n:Entity {name: $n})",
    "an unbound variable": "MATCH (a:Entity {uuid: $a}) SET b.name = 'x'",
    "a node pattern without a table": "MATCH (a {uuid: $a}) SET a.name = 'x'",
    "values nested too deep": "CREATE (:Entity {uuid: " + "[" * 40 + "]" * 40 + "})",
}


@pytest.mark.parametrize("why", sorted(REFUSED))
def test_anything_else_is_not_a_template(why: str) -> None:
    with pytest.raises(NotATemplate):
        parse(REFUSED[why])


def test_what_the_schema_lacks_is_a_schema_error() -> None:
    for cypher in (
        "CREATE (:Widget {uuid: $uuid})",
        "CREATE (:Entity {uuid: $uuid, colour: 'red'})",
        "MATCH (a:Entity {uuid: $a}), (b:Episodic {uuid: $b}) CREATE (a)-[:MENTIONS]->(b)",
        "MATCH (a:Entity {uuid: $a}) SET a.uuid = 'other'",
    ):
        with pytest.raises(SchemaError):
            parse(cypher)


def test_index_statements_are_known_and_not_parsed() -> None:
    assert is_index_statement("CALL CREATE_VECTOR_INDEX('Entity', 'i', 'name_embedding')")
    assert is_index_statement("CREATE INDEX i ON Entity(name)")
    assert not is_index_statement("CREATE INDEX i; COPY Entity TO '/tmp/x'")
    assert not is_index_statement("/* CREATE INDEX */ COPY Entity TO '/tmp/x'")


# ---- applying -----------------------------------------------------------------------------


def test_values_take_their_columns_types() -> None:
    g = ReferenceGraph()
    done = g.apply(
        parse("CREATE (:RelatesToNode_ {uuid: 'r', created_at: '2023-11-01 10:00:00', "
              "valid_at: timestamp($v), fact_embedding: VECF32($vec), attributes: $attrs})"),
        {"v": "2023-11-01T12:00:00+02:00", "vec": [0.5, 1], "attrs": {"k": [1, "\u00fc"]}},
    )  # fmt: skip
    row = g.nodes["RelatesToNode_"]["r"]
    assert row["created_at"] == datetime(2023, 11, 1, 10, 0)
    assert row["valid_at"] == datetime(2023, 11, 1, 10, 0)
    assert row["fact_embedding"] is None and done.vectors == 1  # never kept
    assert row["attributes"] == '{"k":[1,"\u00fc"]}'
    _entity(g, "e")
    with pytest.raises(ApplyError) as bad:
        g.apply(parse(SCRIPT.SET_CREATED), {"uuid": "e", "new_created_at": "soon"})
    assert bad.value.reason == "bad_time"


def test_set_of_a_map_sets_each_column() -> None:
    g = ReferenceGraph()
    _entity(g, "e")
    g.apply(parse("MATCH (n:Entity {uuid: $uuid}) SET n = $props"),
            {"uuid": "e", "props": {"summary": "s", "labels": ["Entity", "Org"]}})  # fmt: skip
    assert g.nodes["Entity"]["e"]["summary"] == "s"
    assert g.nodes["Entity"]["e"]["labels"] == ["Entity", "Org"]
    with pytest.raises(ApplyError, match="no settable column"):
        g.apply(parse("MATCH (n:Entity {uuid: $uuid}) SET n = $props"),
                {"uuid": "e", "props": {"uuid": "other"}})  # fmt: skip


def test_a_refused_statement_changes_nothing() -> None:
    g = ReferenceGraph()
    _entity(g, "a")
    # The first node is created, the second is a duplicate key: the statement is undone.
    with pytest.raises(ApplyError, match="duplicate primary key"):
        g.apply(parse("CREATE (:Entity {uuid: 'new', name: 'N'}), (:Entity {uuid: 'a'})"), {})
    assert sorted(g.nodes["Entity"]) == ["a"]
    with pytest.raises(ApplyError, match="no parameter"):
        g.apply(parse(SCRIPT.E_SUMMARY), {"uuid": "a"})


def test_match_merge_and_delete_follow_the_engines_rules() -> None:
    g = ReferenceGraph()
    _entity(g, "a")
    _entity(g, "b")
    edge = {"uuid": "r", "name": "", "group_id": "g", "created_at": T0, "fact": "f",
            "fact_embedding": [], "valid_at": T0, "invalid_at": None, "attributes": "{}",
            "relation_type": ""}  # fmt: skip
    g.apply(parse(SCRIPT.RN_CREATE), edge)
    hops = parse(SCRIPT.HOPS)
    assert g.apply(hops, {"src": "a", "rn": "r", "dst": "b"}).matched == 1
    assert g.apply(hops, {"src": "a", "rn": "missing", "dst": "b"}).matched == 0
    merge = parse(
        "MATCH (a:Entity {uuid: $a}), (e:RelatesToNode_ {uuid: $e}) MERGE (a)-[:RELATES_TO]->(e)"
    )
    g.apply(merge, {"a": "a", "e": "r"})  # the hop is there: matched, not doubled
    assert len(list(g.all_rels("RELATES_TO"))) == 2
    node = parse(
        "MERGE (n:Entity {uuid: $u}) ON CREATE SET n.name = 'new' ON MATCH SET n.name = 'old'"
    )
    g.apply(node, {"u": "a"})
    g.apply(node, {"u": "c"})
    assert (g.nodes["Entity"]["a"]["name"], g.nodes["Entity"]["c"]["name"]) == ("old", "new")
    with pytest.raises(ApplyError, match="still has relationships"):
        g.apply(parse("MATCH (n:Entity {uuid: $u}) DELETE n"), {"u": "a"})
    g.apply(parse("MATCH (n:Entity {uuid: $u}) DETACH DELETE n"), {"u": "a"})
    assert "a" not in g.nodes["Entity"] and len(list(g.all_rels("RELATES_TO"))) == 1
    purge = parse("MATCH (x:Entity) WHERE x.group_id IN $gids DETACH DELETE x")
    assert g.apply(purge, {"gids": ["g"]}).matched == 1  # b; c has no group
    assert sorted(g.nodes["Entity"]) == ["c"] and not list(g.all_rels("RELATES_TO"))
