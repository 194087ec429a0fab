"""The read-only Cypher guard (issue 11 item 1): one lexer that reads as Kuzu reads, then an
allow-list of read clauses.

The hypothesis test builds queries whose ground truth it knows: a forbidden clause either
hidden in a way Kuzu also treats as inert (inside a well-formed string, comment, backquoted
name, property or label position) or *live* behind tricks that fool a naive stripper (quotes
inside comments, comment markers inside strings, escaped backslashes, ``/* **/``). Live →
refused; inert only → accepted. No database: the guard function alone.
"""

from __future__ import annotations

import glob
from collections.abc import Iterator

import kuzu
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _hypothesis_profiles import examples
from lcg.errors import ReadOnlyError
from lcg.query.cypher import MAX_DEPTH, MAX_OPERATORS, check_read_only, tokenize

# ---- the issue's reproductions ----------------------------------------------------------

ISSUE_REPROS = [
    # a quote inside a line comment hid the LOAD on the next line
    '// \'\nLOAD FROM "/etc/shadow" (file_format="csv", header=false, delim=":") '
    "RETURN * LIMIT 2 // '",
    # a quote inside a block comment hid DETACH DELETE
    "/*'*/ MATCH (e:Entity) DETACH DELETE e //'",
    # COPY TO a file outside the workspace
    "// '\nCOPY (RETURN 'overwritten' AS x) TO \"/tmp/victim.csv\" // '",
    "CALL show_tables() RETURN *",
    "/*'*/ CALL show_tables() RETURN * //'",
    "MATCH (e:Entity) SET e.name = 'x'",
    "/*'*/ MATCH (e:Entity) SET e.name = 'x' //'",
]


@pytest.mark.parametrize("query", ISSUE_REPROS)
def test_issue_reproductions_are_refused(query: str) -> None:
    with pytest.raises(ReadOnlyError, match="read-only"):
        check_read_only(query)


REFUSED = [
    "CREATE (:Entity {uuid: 'x'})",
    "MATCH (e:Entity) SET e.name = 'x'",
    "MATCH (e:Entity)\nDELETE e",
    "MATCH (e:Entity) DETACH DELETE e",
    "MATCH (e:Entity) dElEtE e",
    "MATCH (e:Entity) MERGE (f:Entity {uuid: 'x'})",
    "MATCH (e:Entity) REMOVE e.summary",
    "MATCH (e:Entity) WITH e CREATE (f:Entity {uuid: 'y'})",
    "MATCH (e:Entity) CALL show_tables() RETURN *",
    "MATCH (e:Entity) LOAD FROM '/etc/passwd' RETURN *",
    "MATCH (e:Entity) RETURN e UNION CALL show_tables() RETURN *",
    "COPY Entity FROM '/tmp/x.csv'",
    "EXPORT DATABASE '/tmp/x'",
    "IMPORT DATABASE '/tmp/x'",
    "INSTALL httpfs",
    "LOAD EXTENSION json",
    "ATTACH '/tmp/other.db' AS o (dbtype kuzu)",
    "DETACH o",
    "USE o",
    "DROP TABLE Entity",
    "ALTER TABLE Entity ADD x STRING",
    "CREATE MACRO f(x) AS x",
    "BEGIN TRANSACTION",
    "COMMIT",
    "ROLLBACK",
    "CHECKPOINT",
    "EXPLAIN MATCH (e:Entity) RETURN e",
    "PROFILE MATCH (e:Entity) RETURN e",
    "MATCH (e:Entity) RETURN e.name; CREATE (:Entity {uuid: 'y'})",
    "MATCH (e:Entity) RETURN e/**/;SET",
    "MATCH(e:Entity)SET(e).name='x'",
    "RETURN 1; RETURN 2",
    # a clause the guard does not know: a name right after a complete value
    "MATCH (e:Entity) RETURN e FOO e",
    "MATCH (e:Entity) RETURN 'a' frobnicate",
    # keywords as bare variable names are refused (Kuzu would accept them): backquote them
    "MATCH (delete:Entity) RETURN delete",
    "MATCH (e:Entity) RETURN {set: e.name}",
    # Kuzu does not close a comment at '**/': the DELETE below is code to Kuzu
    "/* **/ MATCH (e) RETURN '*/ MATCH (e) DETACH DELETE e //'",
    "MATCH (e) RETURN 1 /***/ + '*/ DETACH DELETE e //'",
    # '\\' is a complete string: the DELETE after it is code
    "MATCH (e) WHERE e.name = '\\\\' DETACH DELETE e //'",
    # CR LF ends a line comment
    "MATCH (e) RETURN e // x\r\nDETACH DELETE e",
    # what Kuzu's lexer would not read the same way is refused, not guessed
    "MATCH (e) RETURN 'unterminated",
    'MATCH (e) RETURN "unterminated',
    "MATCH (e) RETURN `unterminated",
    "MATCH (e) RETURN e /* unterminated",
    "MATCH (e) RETURN '\\q'",
    "MATCH (e) RETURN '\\u00'",
    "MATCH (e) RETURN e # comment",
    "MATCH (e) RETURN e \u2014 1",
    "",
    "   // only a comment\n",
    ";",
]


@pytest.mark.parametrize("query", REFUSED)
def test_refused(query: str) -> None:
    with pytest.raises(ReadOnlyError):
        check_read_only(query)


ACCEPTED = [
    # the read queries of the existing tests
    "MATCH (e:Entity) RETURN count(e)",
    "MATCH (e:Entity) RETURN e.name ORDER BY e.name",
    "MATCH (e:Entity) WHERE e.summary <> 'CREATE SET DELETE' RETURN count(e)",
    "MATCH (e:Entity {name: 'Kepler'}) RETURN e.summary, e.labels",
    "RETURN NULL",
    "RETURN 1",
    "MATCH (e:Entity) RETURN e.name ORDER BY e.name LIMIT 1;",
    "MATCH (e:Entity) WHERE e.name = 'zz' RETURN e",
    # properties and labels named like keywords are names by position
    "MATCH (e:Entity) RETURN e.set, e.delete, e. create, e.call, e.load",
    "MATCH (n:Entity) WHERE n.delete IS NULL RETURN n.detach",
    "MATCH (e:`CREATE`) RETURN e",
    "MATCH (e:Entity) RETURN e.name AS `DETACH DELETE e`",
    "MATCH (e:Entity) RETURN e.name AS `a``b`",
    "MATCH (e:Entity) RETURN {`set`: e.name, copy_count: 1}",
    # the read surface: patterns, functions, subqueries, unions, lists, CASE
    "MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity) WHERE r.name STARTS WITH 'x' "
    "AND NOT b.name IS NULL RETURN a.name, count(*) AS n ORDER BY n DESC SKIP 1 LIMIT 5",
    "MATCH (p:Episodic)-[:MENTIONS]->(e:Entity) RETURN p.name, collect(e.name)",
    "OPTIONAL MATCH (e:Entity) RETURN CASE WHEN e IS NULL THEN 'none' ELSE lower(e.name) END",
    "UNWIND [1, 2, 3] AS x WITH x WHERE x > 1 RETURN x UNION ALL RETURN 4 AS x",
    "MATCH (e:Entity) RETURN DISTINCT e.name UNION MATCH (p:Episodic) RETURN p.name",
    "MATCH p = (a:Entity)-[r:RELATES_TO* SHORTEST 1..3]->(b:Entity) RETURN length(p)",
    "MATCH (a:Entity) WHERE EXISTS { MATCH (a)-[:RELATES_TO]->(b:Entity) } RETURN a.name",
    "MATCH (a:Entity) RETURN COUNT { MATCH (a)-[:RELATES_TO]->() } AS degree",
    "MATCH (e:Entity) WHERE e.name CONTAINS 'x' OR e.name ENDS WITH 'y' XOR true RETURN e",
    "MATCH (e:Entity) WHERE e.uuid IN ['a', 'b'] AND e.name =~ 'K.*' RETURN e.uuid ASC",
    "MATCH (e:Entity) WHERE e.uuid = $uuid RETURN CAST(e.name AS STRING)",
    "RETURN [x IN range(1, 5) WHERE x % 2 = 0 | x * 2], all(x IN [1] WHERE x > 0)",
    "RETURN 1 /** doc */ + 2 // trailing 'quote\n",
    "RETURN 'it\\'s', \"\\\"\", '\\u0041\\x41\\\\', 1.5e-3, .5, -1",
    "MATCH (e:Entity)\n// a comment with 'quotes' and DELETE\nRETURN e.name /* SET */",
    # U+2028 is whitespace to Kuzu but does not end a line comment: still inside it
    "MATCH (e:Entity) RETURN e // x\u2028DETACH DELETE e",
    "  match (e:Entity) return e.name order by e.name desc  ",
]


@pytest.mark.parametrize("query", ACCEPTED)
def test_accepted(query: str) -> None:
    check_read_only(query)


# Kuzu 0.11.3 crashes (SIGSEGV) parsing these, or takes minutes: the guard bounds them.
TOO_BIG = {
    "5,000 nested parentheses": "RETURN " + "(" * 5000 + "1" + ")" * 5000,
    "400 nested lists": "RETURN " + "[" * 400 + "1" + "]" * 400,
    "10,000 terms": "RETURN 1" + "+1" * 10_000,
    "5,000 ORs": "UNWIND [1] AS x RETURN " + " OR ".join(f"x = {i}" for i in range(5000)),
    "2,000,000 characters": "RETURN '" + "a" * 2_000_000 + "'",
    "30,000 tokens": "RETURN [" + ",".join(["1"] * 15_000) + "]",
}


@pytest.mark.parametrize("query", TOO_BIG.values(), ids=TOO_BIG.keys())
def test_queries_kuzu_cannot_parse_safely_are_refused(query: str) -> None:
    with pytest.raises(ReadOnlyError, match="split it into smaller queries or simplify it"):
        check_read_only(query)


def test_the_size_bounds_are_inclusive() -> None:
    check_read_only("RETURN " + "(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH)
    check_read_only("RETURN 1" + "+1" * MAX_OPERATORS)
    with pytest.raises(ReadOnlyError, match="operators"):
        check_read_only("RETURN 1" + "+1" * (MAX_OPERATORS + 1))
    # A long IN list (literal uuids) is fine: flat lists parse in linear time.
    uuids = ",".join(f"'{i:036d}'" for i in range(9000))
    check_read_only(f"MATCH (e:Entity) WHERE e.uuid IN [{uuids}] RETURN e.name")
    with pytest.raises(ReadOnlyError):
        check_read_only("RETURN " + "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1))


def test_tokens_mark_names_by_position() -> None:
    kinds = [(t.kind, t.text) for t in tokenize("MATCH (e:`A``B`) RETURN e.set // x")]
    assert kinds == [
        ("word", "MATCH"), ("punct", "("), ("word", "e"), ("punct", ":"), ("name", "`A``B`"),
        ("punct", ")"), ("word", "RETURN"), ("word", "e"), ("punct", "."), ("word", "set"),
    ]  # fmt: skip


def test_refusal_says_what_to_do() -> None:
    with pytest.raises(ReadOnlyError) as info:
        check_read_only("MATCH (e:Entity) DETACH DELETE e")
    text = str(info.value)
    assert "DETACH" in text and "knowledge_* methods" in text and "MATCH" in text


# ---- hypothesis: forbidden clauses wrapped every way ------------------------------------

#: Where the file clauses below point: a test that runs accepted queries on Kuzu checks
#: that nothing appears there.
VICTIM = "/tmp/lcg-cypher-guard-victim"
FORBIDDEN_CLAUSES = [
    "DETACH DELETE e",
    "DELETE e",
    "SET e.name = 'x'",
    "REMOVE e.summary",
    "CREATE (:Entity {uuid: 'x'})",
    "MERGE (:Entity {uuid: 'x'})",
    'LOAD FROM "/etc/shadow" (file_format="csv", header=false, delim=":") RETURN *',
    "LOAD WITH HEADERS (a STRING) FROM '/etc/passwd' RETURN *",
    f"COPY (RETURN 'overwritten' AS x) TO '{VICTIM}.csv'",
    f"COPY Entity FROM '{VICTIM}-in.csv'",
    "CALL show_tables() RETURN *",
    "CALL current_setting('threads') RETURN *",
    f"EXPORT DATABASE '{VICTIM}-export'",
    f"IMPORT DATABASE '{VICTIM}-export'",
    "INSTALL httpfs",
    "LOAD EXTENSION json",
    f"ATTACH '{VICTIM}.db' AS o (dbtype kuzu)",
    "DROP TABLE Entity",
    "ALTER TABLE Entity ADD x STRING",
    "BEGIN TRANSACTION",
    "CHECKPOINT",
    "USE o",
]
FORBIDDEN_WORDS = sorted(
    {"DELETE", "DETACH", "SET", "REMOVE", "CREATE", "MERGE", "LOAD", "COPY", "CALL", "EXPORT",
     "IMPORT", "INSTALL", "ATTACH", "DROP", "ALTER", "BEGIN", "CHECKPOINT", "USE", "COMMIT"}
)  # fmt: skip
# Whitespace Kuzu reads as whitespace, and inert comments, between the words of a clause.
SEPARATORS = [" ", "  ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "/**/", "/* x */", " // c\n"]

# The strategies are built once, at import, from tuples and maps (no @composite): building
# strategy objects inside each example made 10,000 examples take minutes.
_SEP = st.sampled_from(SEPARATORS)
_MASK = st.integers(0, 2**31 - 1)
# Text hidden inside strings and comments: quotes, escapes, markers. A fixed pool of every
# string of up to two pieces (one draw each, instead of a list draw per example).
_PIECES = list("ab '\"`\\/*;\n\r{}()$") + ["DELETE", "//", "/*", "*/"]
_NOISE = st.sampled_from(sorted({a + b for a in ["", *_PIECES] for b in ["", *_PIECES]}))


def _apply_case(word: str, mask: int) -> str:
    """``word`` with the letters whose bit is set in ``mask`` lowered."""
    return "".join(c.lower() if mask >> k & 1 else c.upper() for k, c in enumerate(word))


def _cased(word: str) -> st.SearchStrategy[str]:
    return _MASK.map(lambda m: _apply_case(word, m))


_CASED_WORD = st.tuples(st.sampled_from(FORBIDDEN_WORDS), _MASK).map(lambda t: _apply_case(*t))


def _build_clause(t: tuple[str, int, list[str]]) -> str:
    clause, mask, seps = t
    out: list[str] = []
    for k, part in enumerate(clause.split(" ")):
        out.append(_apply_case(part, mask >> (3 * k)) if part.isalpha() else part)
        out.append(seps[k % len(seps)])
    return "".join(out)


#: A forbidden clause as code: keywords in any case, any separators between words.
LIVE_CLAUSE = st.tuples(
    st.sampled_from(FORBIDDEN_CLAUSES), _MASK, st.lists(_SEP, min_size=1, max_size=4)
).map(_build_clause)
#: A forbidden clause or word plus noise, as a payload to hide.
_INERT_TEXT = st.tuples(_NOISE, st.one_of(LIVE_CLAUSE, _CASED_WORD), _NOISE).map("".join)


def _single(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _double(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unicode_escaped(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\u0027") + "'"


#: A well-formed string literal (Kuzu's escapes) holding forbidden text.
INERT_STRING = st.tuples(_INERT_TEXT, st.sampled_from([_single, _double, _unicode_escaped])).map(
    lambda t: t[1](t[0])
)


def _comment(t: tuple[str, str, str, str]) -> str:
    text, style, newline_inside, end = t
    if style == "line":
        # LF or CR LF ends it; U+2028 does not (it stays inside, as in Kuzu).
        return "//" + text.replace("\r", " ").replace("\n", newline_inside) + end
    return ("/*/" if style == "block_slash" else "/*") + text.replace("*", "") + "*/"


#: A comment Kuzu skips whole, holding forbidden text and quotes.
INERT_COMMENT = st.tuples(
    _INERT_TEXT,
    st.sampled_from(["line", "block", "block_slash"]),
    st.sampled_from([" ", "\u2028"]),
    st.sampled_from(["\n", "\r\n"]),
).map(_comment)
#: A backquoted name (a doubled backquote continues it) holding forbidden text.
INERT_NAME = _INERT_TEXT.map(lambda text: "`" + text.replace("`", "``") + "`")
#: Whitespace or an inert comment between two tokens.
GAP = st.one_of(_SEP, INERT_COMMENT).map(lambda p: " " + p + " ")


def _parts(t: tuple[str, ...]) -> tuple[str, str]:
    g1, match, g2, label, g3, where, prop1, string, g4, ret, prop2, g5, as_, name, g6 = t
    head = f"{g1}{match}{g2}(e:{label}){g3}{where} e.{prop1} <> {string}{g4}"
    tail = f"{ret} e.{prop2}{g5}{as_} {name}{g6}"
    return head, tail


#: A pure read whose forbidden words all sit where Kuzu reads them as data or names, as
#: (everything before RETURN, RETURN and the rest).
INERT_PARTS = st.tuples(
    GAP, _cased("MATCH"), _SEP, _CASED_WORD, GAP, _cased("WHERE"), _CASED_WORD, INERT_STRING,
    _SEP, _cased("RETURN"), _CASED_WORD, GAP, _cased("AS"), INERT_NAME, GAP,
).map(_parts)  # fmt: skip

# Ways of putting a live clause into a query that fool a stripper which is not one lexer.
TRICKS = [
    "{live}",
    "/*'*/ {live} //'",
    '/*"*/ {live} //"',
    "// '\n{live} // '",
    "// '\r\n{live} // '",
    "'\\\\' {live} //'",
    '"\'" {live} "\'"',
    "'\"' {live} '\"'",
    "`'` {live} `'`",
    "'' {live} ''",
    "/* **/ RETURN '*/ {live} //'",
    "/***/ '*/ {live} //'",
    "/* `*/ {live} //`",
    "e.name {live}",
    "{live} /*",
    "; {live}",
]


def _splice(t: tuple[tuple[str, str], str, str, str]) -> str:
    (head, tail), trick, live, where = t
    code = trick.replace("{live}", live)
    if where == "before_return":
        return head + " " + code + " " + tail
    if where == "end":
        # A trailing line comment in the tail would swallow the trick: end it first.
        return head + tail + "\n" + code
    return "MATCH (e:Entity) " + code + " RETURN e"


#: An inert query with a live forbidden clause spliced in at a clause boundary.
LIVE_QUERY = st.tuples(
    INERT_PARTS,
    st.sampled_from(TRICKS),
    LIVE_CLAUSE,
    st.sampled_from(["before_return", "end", "after_match"]),
).map(_splice)


#: ``make test-deep`` (the deep hypothesis profile) reads 10,000 wrapped clauses (100 s of CPU
#: or more on its own); ``make test`` a few hundred (``_hypothesis_profiles``).
WRAPPED_EXAMPLES = examples(10_000)


@settings(
    max_examples=WRAPPED_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    case=st.one_of(
        INERT_PARTS.map(lambda p: (p[0] + p[1], False)),
        LIVE_QUERY.map(lambda q: (q, True)),
    )
)
def test_forbidden_clauses_are_refused_however_wrapped(case: tuple[str, bool]) -> None:
    """Live (the clause is code to Kuzu) → refused; inert only → accepted."""
    query, live = case
    if live:
        with pytest.raises(ReadOnlyError):
            check_read_only(query)
    else:
        check_read_only(query)


# ---- Kuzu reads accepted queries as the guard does ----------------------------------------


@pytest.fixture(scope="module")
def scratch_kuzu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kuzu.Connection]:
    """A scratch Kuzu database with two entities, on a plain (writable) connection."""
    db = kuzu.Database(str(tmp_path_factory.mktemp("kuzu") / "g.kuzu"))
    conn = kuzu.Connection(db)
    conn.execute("CREATE NODE TABLE Entity(name STRING PRIMARY KEY, summary STRING)")
    conn.execute("CREATE (:Entity {name: 'Kepler'}), (:Entity {name: 'Tycho'})")
    yield conn
    conn.close()
    db.close()


def _kuzu_query(t: tuple[str, ...]) -> str:
    g1, match, g2, string, g3, ret, g4, name, g5 = t
    return f"{g1}{match}{g2}(e:Entity) WHERE e.name <> {string}{g3}{ret} e.name AS {name}{g4}{g5}"


#: Inert queries that bind on the scratch database: strings, comments and names full of
#: forbidden clauses, quotes and comment markers around a plain read.
KUZU_INERT = st.tuples(
    GAP, _cased("MATCH"), GAP, INERT_STRING, GAP, _cased("RETURN"), GAP, INERT_NAME, GAP
).map(_kuzu_query)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=KUZU_INERT)
def test_kuzu_runs_what_the_guard_accepts_as_the_plain_read_it_is(
    scratch_kuzu: kuzu.Connection, query: str
) -> None:
    """On a writable connection (no read-only transaction): if Kuzu read any hidden clause
    as code, the rows, the table or the victim paths would show it."""
    check_read_only(query)
    result = scratch_kuzu.execute(query)
    assert isinstance(result, kuzu.QueryResult), query
    assert sorted(result.get_all()) == [["Kepler"], ["Tycho"]], query
    assert result.get_column_names() != [] and len(result.get_column_names()) == 1
    count = scratch_kuzu.execute("MATCH (e:Entity) RETURN count(*), min(e.summary)")
    assert isinstance(count, kuzu.QueryResult)
    assert count.get_all() == [[2, None]], query
    assert not glob.glob(VICTIM + "*"), query
