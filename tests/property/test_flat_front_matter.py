"""The flat front-matter reader answers what the YAML path answers (issue 29, ADR 0223).

``read_front_matter`` reads a flat block (``key: value`` lines, flow and block lists of
scalars) without the YAML parser and gives every other block to it. Generated blocks — the
usual note shapes mixed with what YAML reads its own way (YAML 1.1 booleans and octal-looking
ids, dates, sexagesimal numbers, nulls, quotes, comments, anchors, aliases, tags, nested lists,
continuation lines, repeated keys, tabs, odd line breaks) — must read the same through both
(``read_yaml_front_matter`` is the parser alone); the usual shapes must take the flat path, and
the bounds hold on it (too many nodes, an alias).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lcg.ingest.declared.flat import read_flat
from lcg.ingest.declared.frontmatter import (
    MAX_NODES,
    read_front_matter,
    read_yaml_front_matter,
)

KEYS = [
    "title", "id", "aliases", "alias", "tags", "tag", "parent", "part_of", "supersedes",
    "status", "created", "n", "on", "yes", "null", "Title", "x-y", "a_b", "<<",
]  # fmt: skip
#: Values a note usually holds, every one read by the flat path.
USUAL = [
    "Note 1 on apollo", "NOTE-0042", "0042", "1:30", "-.5x", "1.5", "true", "on", "~", "null",
    "2026-01-10", "2026-13-45", "a:b", "a#b", "'quoted'", "'it''s'", "'[[Note]]'", '"dq"',
    "Café au lait", "\xa0x\xa0", "99999999999999999999", "[a, b]", "[]", "[1, on, ~]",
    "' padded '", '" dq "', "[ a ,b ]", "[a, 'b, c', \"d\"]", "it's", 'say "hi"', "0x1f",
    ".inf", "x ",
]  # fmt: skip
#: Values YAML reads in ways of its own (most send the block to the YAML path).
SCALARS = [
    "Note 1 on apollo", "NOTE-0042", "0042", "042", "1:30", "0x1f", "0b101", ".inf", "-.5",
    "-5", "1e3", "1.5", "1_000", "true", "on", "Off", "yes", "y", "~", "null", "Null",
    "2026-01-10", "2026-13-45", "2026-01-10 10:00:00", "2001-12-14t21:59:43.10-05:00",
    "a: b", "a #b", "a#b", "a:b", "a:", "[x]", "[[Note]]", "'quoted'", "'it''s'", "'a, b'",
    '"dq"', '"a\\tb"', '"a # b"', "*alias", "&anc x", "!tag x", "!!str 5", "|", ">",
    "http://x.y/z?q#f", "Café au lait", "\xa0x\xa0", "x\ty", "a, b", "{a: b}", "=", "%x",
    "@x", "`x`", "?", "- x", "x ", "[[Note|label]]", "'[[Note]]'", "99999999999999999999",
    "#tag", "foo, bar baz", "[a, b]", "[]", "[a, 'b, c', \"d\"]", "[a,]", "[a, [b]]",
    "[a, b] # c", "[ a ,b ]", "[1, on, ~]", "'unclosed", "it's", 'say "hi"', "a\u2028b",
    "a\x85b", "a\rb", "\ufeffx",
]  # fmt: skip


#: A line after a key's: mostly none, else a comment, a continuation, blanks, a stray item.
EXTRAS = [""] * 9 + ["# a comment", "  more", "   ", "  - x", "-"]


def _line(key: str, value: str | None, items: list[str], indent: int) -> list[str]:
    if value is not None:
        return [f"{key}: {value}"]
    return [f"{key}:", *(f"{' ' * indent}- {item}" for item in items)]


@st.composite
def blocks(draw: st.DrawFn) -> str:
    lines: list[str] = []
    keys = draw(st.lists(st.sampled_from(KEYS[:11] * 4 + KEYS[11:]), max_size=7, unique=True))
    if keys and draw(st.integers(0, 9)) == 0:
        keys.append(keys[0])  # a repeated key
    for key in keys:
        scalars = st.sampled_from(USUAL * 20 + SCALARS)
        if draw(st.booleans()):
            value: str | None = draw(scalars)
            items: list[str] = []
        else:
            value = None
            items = draw(st.lists(scalars, max_size=3))
        lines.extend(_line(key, value, items, draw(st.sampled_from([0, 2, 4]))))
        extra = draw(st.sampled_from(EXTRAS))
        if extra:
            lines.append(extra)
    return "\n".join(lines)


@settings(max_examples=1500, deadline=None)
@given(blocks())
def test_generated_front_matter_reads_the_same_through_both_paths(block: str) -> None:
    assert read_front_matter(block) == read_yaml_front_matter(block)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=" \n\t:#-[]{},'\"!&*|>~a1ü", max_size=60))
def test_any_text_reads_the_same_through_both_paths(block: str) -> None:
    assert read_front_matter(block) == read_yaml_front_matter(block)


NOTE = """title: Note 12 on moon
id: NOTE-0012
aliases: [n12, note-12]
tags:
  - apollo
  - crew
status: draft
created: 2026-03-12
parent: NOTE-0003
supersedes: '[[Note 11 on crew]]'"""


def test_the_usual_note_takes_the_flat_path_to_the_same_answer() -> None:
    assert read_flat(NOTE, MAX_NODES) is not None
    fm = read_front_matter(NOTE)
    assert fm == read_yaml_front_matter(NOTE)
    assert fm is not None
    assert (fm.title, fm.doc_id, fm.aliases, fm.tags) == (
        "Note 12 on moon", "NOTE-0012", ["n12", "note-12"], ["apollo", "crew"],
    )  # fmt: skip
    assert fm.fields == {"created": "2026-03-12", "status": "draft"}
    assert fm.supersedes == ["[[Note 11 on crew]]"]


def test_the_bounds_hold_on_a_flat_block() -> None:
    # One mapping, then a key and a value per line: MAX_NODES + 1 nodes is refused.
    pairs = (MAX_NODES - 1) // 2
    at_bound = "\n".join(f"k{i}: v" for i in range(pairs))
    over = at_bound + f"\nk{pairs}: v"
    assert read_front_matter(at_bound) is not None
    assert read_front_matter(over) is None
    assert read_yaml_front_matter(over) is None
    assert read_flat("title: &a x\nid: *a", MAX_NODES) is None
    assert read_front_matter("title: &a x\nid: *a") is None  # an alias: refused
