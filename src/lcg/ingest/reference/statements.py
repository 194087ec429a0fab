"""Parse a reference line's Cypher into a typed statement of the reference's templates.

The grammar is the one the documented templates (lcg-api §5.2, §5.4, §5.6, §10) are written
in, and nothing more::

    statement  = match* write+ [";"]
    match      = MATCH node ("," node)* [WHERE cond (AND cond)*]
    write      = CREATE item ("," item)* | MERGE item (ON (CREATE | MATCH) SET sets)*
               | SET sets | [DETACH] DELETE var ("," var)*
    node       = "(" [var] ":" Table [ "{" column ":" value ("," …)* "}" ] ")"
    item       = node | "(" var ")" "-[" [var] ":" REL [props] "]->" "(" var ")"
    sets       = set ("," set)*;  set = var "." column "=" value | var "=" value
    cond       = var "." column ("=" | IN) value
    value      = $param | literal | "[" values "]" | "(" value ")" | vecf32(value)
               | timestamp(value) | CASE WHEN value IS [NOT] NULL THEN value ELSE value END

Tables, relationships and columns are checked against the reference's schema. What the
grammar cannot express is ``NotATemplate`` (the line is reported as ``unrecognised``: a read,
``COPY``, ``LOAD``, ``UNWIND``, a second statement, a function call, a comparison); what it
expresses but the schema lacks is ``SchemaError`` (reported as ``failed``, where the
reference's engine would have refused it too). Every statement it returns touches a bounded
number of rows: a node is matched by its key (or by a list of keys), at most one pattern of a
statement matches more than one row, and a pattern that scans a table only deletes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from lcg.ingest.reference.schema import NODE_TABLES, REL_TABLES, ColumnType
from lcg.ingest.reference.tokens import Kind, Token, TokenError, tokenize

__all__ = [
    "CaseNull",
    "Const",
    "Create",
    "Delete",
    "Expr",
    "ListOf",
    "Match",
    "Merge",
    "NodePattern",
    "NotATemplate",
    "Param",
    "Predicate",
    "RelPattern",
    "SchemaError",
    "SetClause",
    "SetItem",
    "Statement",
    "Timestamp",
    "Vector",
    "Write",
    "is_index_statement",
    "parse",
]

#: Lists and parentheses nest at most this deep in a value.
MAX_DEPTH: Final = 32


class NotATemplate(ValueError):
    """The text is not written in the grammar of the reference's templates."""


class SchemaError(ValueError):
    """A template naming a table, relationship or column the reference's schema lacks."""


# ---- values -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Param:
    """``$name``: the line's parameter of that name."""

    name: str


@dataclass(frozen=True, slots=True)
class Const:
    """A literal: a string, a number, a boolean or null."""

    value: str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class ListOf:
    """``[a, b, …]``."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Vector:
    """``vecf32(x)`` (FalkorDB era): the value of ``x``, a vector."""

    arg: Expr


@dataclass(frozen=True, slots=True)
class Timestamp:
    """``timestamp(x)``: ``x`` read as a time."""

    arg: Expr


@dataclass(frozen=True, slots=True)
class CaseNull:
    """``CASE WHEN test IS [NOT] NULL THEN then ELSE otherwise END`` (the dump's form)."""

    test: Expr
    negated: bool
    then: Expr
    otherwise: Expr


Expr = Param | Const | ListOf | Vector | Timestamp | CaseNull


# ---- patterns and clauses -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodePattern:
    """``(var:Table {column: value, …})``."""

    var: str | None
    table: str
    props: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class RelPattern:
    """``(src)-[var:REL {column: value, …}]->(dst)`` between two bound nodes."""

    var: str | None
    rel: str
    props: tuple[tuple[str, Expr], ...]
    src: str
    dst: str


@dataclass(frozen=True, slots=True)
class Predicate:
    """``var.column = value`` or ``var.column IN value``."""

    var: str
    column: str
    within: bool  # IN
    value: Expr


@dataclass(frozen=True, slots=True)
class Match:
    """One pattern of a ``MATCH`` with the conditions on its variable."""

    node: NodePattern
    where: tuple[Predicate, ...]


@dataclass(frozen=True, slots=True)
class SetItem:
    """``var.column = value``, or ``var = value`` (a map of columns) when column is None."""

    var: str
    column: str | None
    value: Expr


@dataclass(frozen=True, slots=True)
class Create:
    """``CREATE item, …``."""

    items: tuple[NodePattern | RelPattern, ...]


@dataclass(frozen=True, slots=True)
class Merge:
    """``MERGE item ON CREATE SET … ON MATCH SET …``."""

    item: NodePattern | RelPattern
    on_create: tuple[SetItem, ...]
    on_match: tuple[SetItem, ...]


@dataclass(frozen=True, slots=True)
class SetClause:
    """``SET item, …``."""

    items: tuple[SetItem, ...]


@dataclass(frozen=True, slots=True)
class Delete:
    """``[DETACH] DELETE var, …``."""

    vars: tuple[str, ...]
    detach: bool


Write = Create | Merge | SetClause | Delete


@dataclass(frozen=True, slots=True)
class Statement:
    """A parsed template: its patterns, its writes, and what each variable names."""

    matches: tuple[Match, ...]
    writes: tuple[Write, ...]
    #: variable -> node table name, or relationship table name for a relationship variable.
    tables: dict[str, str]
    rels: frozenset[str]

    @property
    def deletes(self) -> bool:
        """Whether the statement deletes anything."""
        return any(isinstance(w, Delete) for w in self.writes)


# ---- the parser ---------------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.tables: dict[str, str] = {}
        self.rels: set[str] = set()

    # -- token helpers

    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def where(self) -> str:
        tok = self.peek()
        return "the end" if tok is None else f"{tok.text!r} at {tok.at}"

    def is_word(self, word: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok is not None and tok.kind is Kind.WORD and tok.text.upper() == word

    def is_punct(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind is Kind.PUNCT and tok.text == text

    def word(self, word: str) -> None:
        if not self.is_word(word):
            raise NotATemplate(f"expected {word}, found {self.where()}")
        self.i += 1

    def punct(self, text: str) -> None:
        if not self.is_punct(text):
            raise NotATemplate(f"expected {text!r}, found {self.where()}")
        self.i += 1

    def name(self) -> str:
        tok = self.peek()
        if tok is None or tok.kind not in (Kind.WORD, Kind.NAME):
            raise NotATemplate(f"expected a name, found {self.where()}")
        self.i += 1
        return tok.text

    # -- values

    def value(self, depth: int = 0) -> Expr:
        if depth > MAX_DEPTH:
            raise NotATemplate(f"values nested deeper than {MAX_DEPTH}")
        tok = self.peek()
        if tok is None:
            raise NotATemplate("a value is missing at the end")
        if tok.kind is Kind.PARAM:
            self.i += 1
            return Param(tok.text)
        if tok.kind is Kind.STRING:
            self.i += 1
            return Const(tok.text)
        if tok.kind is Kind.NUMBER or self.is_punct("-"):
            return Const(self.number())
        if tok.kind is Kind.PUNCT and tok.text == "[":
            self.i += 1
            items: list[Expr] = []
            while not self.is_punct("]"):
                if items:
                    self.punct(",")
                items.append(self.value(depth + 1))
            self.i += 1
            return ListOf(tuple(items))
        if tok.kind is Kind.PUNCT and tok.text == "(":
            self.i += 1
            inner = self.value(depth + 1)
            self.punct(")")
            return inner
        if tok.kind is Kind.WORD:
            return self.word_value(tok, depth)
        raise NotATemplate(f"expected a value, found {self.where()}")

    def number(self) -> int | float:
        sign = -1 if self.is_punct("-") else 1
        if sign < 0:
            self.i += 1
        tok = self.peek()
        if tok is None or tok.kind is not Kind.NUMBER:
            raise NotATemplate(f"expected a number, found {self.where()}")
        self.i += 1
        text = tok.text
        try:
            return sign * (float(text) if any(c in text for c in ".eE") else int(text))
        except ValueError:  # an integer too long to read (Python's digit limit)
            raise NotATemplate(f"the number at {tok.at} is too long") from None

    def word_value(self, tok: Token, depth: int) -> Expr:
        upper = tok.text.upper()
        constants: dict[str, Const] = {
            "NULL": Const(None), "TRUE": Const(True), "FALSE": Const(False),
        }  # fmt: skip
        if upper in constants:
            self.i += 1
            return constants[upper]
        if upper in ("VECF32", "TIMESTAMP"):
            self.i += 1
            self.punct("(")
            arg = self.value(depth + 1)
            self.punct(")")
            return Vector(arg) if upper == "VECF32" else Timestamp(arg)
        if upper == "CASE":
            self.i += 1
            self.word("WHEN")
            test = self.value(depth + 1)
            self.word("IS")
            negated = self.is_word("NOT")
            if negated:
                self.i += 1
            self.word("NULL")
            self.word("THEN")
            then = self.value(depth + 1)
            self.word("ELSE")
            otherwise = self.value(depth + 1)
            self.word("END")
            return CaseNull(test, negated, then, otherwise)
        raise NotATemplate(f"{tok.text!r} at {tok.at} is not a value of any template")

    # -- patterns

    def props(self, columns: dict[str, ColumnType], owner: str) -> tuple[tuple[str, Expr], ...]:
        if not self.is_punct("{"):
            return ()
        self.i += 1
        out: list[tuple[str, Expr]] = []
        while not self.is_punct("}"):
            if out:
                self.punct(",")
            column = self.name()
            if column not in columns:
                raise SchemaError(f"{owner} has no column {column!r}")
            if any(column == c for c, _ in out):
                raise NotATemplate(f"column {column!r} given twice")
            self.punct(":")
            out.append((column, self.value()))
        self.i += 1
        return tuple(out)

    def bind(self, var: str, table: str, *, rel: bool = False) -> None:
        if var in self.tables:
            raise NotATemplate(f"variable {var!r} is bound twice")
        self.tables[var] = table
        if rel:
            self.rels.add(var)

    def node(self) -> NodePattern:
        self.punct("(")
        var = None if self.is_punct(":") else self.name()
        self.punct(":")
        table = self.name()
        if table not in NODE_TABLES:
            raise SchemaError(f"no node table {table!r} in the reference's schema")
        props = self.props(NODE_TABLES[table].columns, table)
        self.punct(")")
        if var is not None:
            self.bind(var, table)
        return NodePattern(var, table, props)

    def bound_node(self) -> str:
        self.punct("(")
        var = self.name()
        self.punct(")")
        if var not in self.tables or var in self.rels:
            raise NotATemplate(f"({var}) names no node bound before")
        return var

    def item(self) -> NodePattern | RelPattern:
        # ``(:T …)`` and ``(v:T …)`` create a node; ``(v)-[…]->(w)`` joins two bound nodes.
        second = self.peek(2)
        if second is None or second.kind is not Kind.PUNCT or second.text != ")":
            return self.node()
        src = self.bound_node()
        self.punct("-")
        self.punct("[")
        var = None if self.is_punct(":") else self.name()
        self.punct(":")
        rel = self.name()
        if rel not in REL_TABLES:
            raise SchemaError(f"no relationship table {rel!r} in the reference's schema")
        props = self.props(REL_TABLES[rel].columns, rel)
        self.punct("]")
        self.punct("->")
        dst = self.bound_node()
        if (self.tables[src], self.tables[dst]) not in REL_TABLES[rel].ends:
            raise SchemaError(f"{rel} does not join {self.tables[src]} to {self.tables[dst]}")
        if var is not None:
            self.bind(var, rel, rel=True)
        return RelPattern(var, rel, props, src, dst)

    # -- clauses

    def column_of(self, var: str) -> str:
        if var not in self.tables:
            raise NotATemplate(f"variable {var!r} is not bound")
        self.punct(".")
        column = self.name()
        table = self.tables[var]
        columns = REL_TABLES[table].columns if var in self.rels else NODE_TABLES[table].columns
        if column not in columns:
            raise SchemaError(f"{table} has no column {column!r}")
        return column

    def sets(self) -> tuple[SetItem, ...]:
        items: list[SetItem] = []
        while True:
            var = self.name()
            column = None
            if self.is_punct("."):
                column = self.column_of(var)
                if var not in self.rels and column == NODE_TABLES[self.tables[var]].key:
                    raise SchemaError(f"the key {column!r} of {self.tables[var]} is never set")
            elif var not in self.tables or var in self.rels:
                raise NotATemplate(f"SET {var} = … names no node bound before")
            self.punct("=")
            items.append(SetItem(var, column, self.value()))
            if not self.is_punct(","):
                return tuple(items)
            self.i += 1

    def match(self) -> list[Match]:
        self.word("MATCH")
        nodes = [self.node()]
        while self.is_punct(","):
            self.i += 1
            nodes.append(self.node())
        conditions: list[Predicate] = []
        if self.is_word("WHERE"):
            self.i += 1
            while True:
                var = self.name()
                if not any(n.var == var for n in nodes):
                    raise NotATemplate(f"WHERE names {var!r}, no node of its MATCH")
                column = self.column_of(var)
                if NODE_TABLES[self.tables[var]].columns[column] is not ColumnType.STRING:
                    raise NotATemplate(f"WHERE on {column!r}: only text columns are compared")
                within = self.is_word("IN")
                if within:
                    self.i += 1
                else:
                    self.punct("=")
                conditions.append(Predicate(var, column, within, self.value()))
                if not self.is_word("AND"):
                    break
                self.i += 1
        return [Match(n, tuple(c for c in conditions if c.var == n.var)) for n in nodes]

    def write(self) -> Write:
        if self.is_word("CREATE"):
            self.i += 1
            items = [self.item()]
            while self.is_punct(","):
                self.i += 1
                items.append(self.item())
            return Create(tuple(items))
        if self.is_word("MERGE"):
            self.i += 1
            item = self.item()
            on_create: list[SetItem] = []
            on_match: list[SetItem] = []
            while self.is_word("ON"):
                self.i += 1
                target = on_create if self.is_word("CREATE") else on_match
                if not (self.is_word("CREATE") or self.is_word("MATCH")):
                    raise NotATemplate(f"expected ON CREATE or ON MATCH, found {self.where()}")
                self.i += 1
                self.word("SET")
                target.extend(self.sets())
            return Merge(item, tuple(on_create), tuple(on_match))
        if self.is_word("SET"):
            self.i += 1
            return SetClause(self.sets())
        detach = self.is_word("DETACH")
        if detach:
            self.i += 1
        if self.is_word("DELETE"):
            self.i += 1
            names = [self.name()]
            while self.is_punct(","):
                self.i += 1
                names.append(self.name())
            for var in names:
                if var not in self.tables:
                    raise NotATemplate(f"DELETE {var}: not bound")
            return Delete(tuple(names), detach)
        raise NotATemplate(f"expected CREATE, MERGE, SET or DELETE, found {self.where()}")

    def statement(self) -> Statement:
        matches: list[Match] = []
        while self.is_word("MATCH"):
            matches.extend(self.match())
        writes: list[Write] = []
        while self.peek() is not None and not self.is_punct(";"):
            writes.append(self.write())
        if self.is_punct(";"):
            self.i += 1
            if self.peek() is not None:
                raise NotATemplate("more than one statement on the line")
        if not writes:
            raise NotATemplate("not a write (no CREATE, MERGE, SET or DELETE)")
        return Statement(tuple(matches), tuple(writes), dict(self.tables), frozenset(self.rels))


def _keyed(m: Match) -> tuple[bool, bool]:
    """Whether the pattern names its key, and whether it may match more than one row."""
    key = NODE_TABLES[m.node.table].key
    if any(column == key for column, _ in m.node.props):
        return True, False
    for p in m.where:
        if p.column == key:
            return True, p.within
    return False, True


def _check_bounds(stmt: Statement) -> None:
    many = 0
    for m in stmt.matches:
        keyed, several = _keyed(m)
        many += several
        if not keyed and not all(isinstance(w, Delete) for w in stmt.writes):
            raise NotATemplate(f"({m.node.var}:{m.node.table}) names no key and does not delete")
    if many > 1:
        raise NotATemplate("more than one pattern may match several rows")
    for w in stmt.writes:
        if isinstance(w, Merge) and isinstance(w.item, NodePattern):
            key = NODE_TABLES[w.item.table].key
            if [c for c, _ in w.item.props] != [key]:
                raise NotATemplate(f"MERGE ({w.item.table}) must name its key {key!r} alone")


#: The procedures and statements that build or drop an index (the reference's writer never
#: logs them, lcg-api §5.2; vectors and indexes are the projections' own).
_INDEX_CALLS: Final = frozenset({
    "CREATE_VECTOR_INDEX", "DROP_VECTOR_INDEX", "CREATE_FTS_INDEX", "DROP_FTS_INDEX",
})  # fmt: skip


def is_index_statement(cypher: str) -> bool:
    """Whether ``cypher`` is one index statement (``CALL CREATE_VECTOR_INDEX(…)``,
    ``CREATE INDEX …``, ``DROP INDEX …``): read and not carried. Never executed either way."""
    try:
        tokens = tokenize(cypher)
    except TokenError:
        return False
    words = [t.text.upper() if t.kind is Kind.WORD else "" for t in tokens[:2]]
    if len(words) < 2 or any(t.kind is Kind.PUNCT and t.text == ";" for t in tokens[:-1]):
        return False
    return (words[0] == "CALL" and words[1] in _INDEX_CALLS) or (
        words[0] in ("CREATE", "DROP") and words[1] == "INDEX"
    )


def parse(cypher: str) -> Statement:
    """The statement ``cypher`` writes; ``NotATemplate`` or ``SchemaError`` otherwise."""
    try:
        tokens = tokenize(cypher)
    except TokenError as exc:
        raise NotATemplate(str(exc)) from None
    stmt = _Parser(tokens).statement()
    _check_bounds(stmt)
    return stmt
