"""What one file declares (issue 29 item 1, ADR 0204): every syntax ``declare_file`` reads and
every decoy it must not (a link in a fence, in inline code, in an HTML comment, in a
front-matter string of another key; ``C#``, ``#123``, URL fragments)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcg.ingest.declared import FileDeclarations, LinkRef, declare_file
from lcg.ingest.declared.links import normal_tag
from lcg.ingest.declared.prose import mask


def _links(decl: FileDeclarations) -> list[tuple[str, str]]:
    return [(ref.kind, ref.target) for ref in decl.links]


# ---- front matter ---------------------------------------------------------------------------


def test_front_matter_keys_are_read() -> None:
    text = (
        "---\n"
        "title: Landing plan\n"
        "id: PLAN-7\n"
        "aliases: [LP, The plan]\n"
        "tags: [Apollo, '#moon']\n"
        'parent: "[[Program|the program]]"\n'
        "supersedes:\n"
        "  - old-plan.md\n"
        "  - [[Older plan]]\n"
        "status: draft\n"
        "reviewed: 2024-03-01\n"
        "priority: 2\n"
        "done: false\n"
        "owners: [a, b]\n"
        "---\n"
        "# A heading that is not the title\n"
    )
    decl = declare_file("notes/plan.md", text)
    assert decl.title == "Landing plan"
    assert decl.doc_id == "PLAN-7"
    assert decl.aliases == ["LP", "The plan"]
    assert decl.tags == ["#apollo", "#moon"]
    assert decl.parents == [LinkRef(kind="key", target="Program")]
    assert decl.supersedes == [
        LinkRef(kind="key", target="old-plan.md"),
        LinkRef(kind="key", target="Older plan"),
    ]
    # Scalars only (a list is no field), dates as ISO text.
    assert decl.fields == {
        "done": False,
        "priority": 2,
        "reviewed": "2024-03-01",
        "status": "draft",
    }


@pytest.mark.parametrize(
    ("written", "tags"),
    [
        ("tags: apollo, moon", ["#apollo", "#moon"]),
        ("tags: 'apollo moon #lunar'", ["#apollo", "#moon", "#lunar"]),
        ("tags: apollo # a YAML comment", ["#apollo"]),
        ("tags: '#Apollo'", ["#apollo"]),
        ("tags:\n  - a/b\n  - kebab-case", ["#a/b", "#kebab-case"]),
        ("tag: single", ["#single"]),
        ("tags: [1969, apollo]", ["#apollo"]),
    ],
)
def test_front_matter_tags_in_every_form(written: str, tags: list[str]) -> None:
    assert declare_file("n.md", f"---\n{written}\n---\nbody\n").tags == tags


@pytest.mark.parametrize(
    ("written", "doc_id"),
    [
        ("id: 0042", "0042"),  # as written: YAML 1.1 would read the octal 34
        ("id: 42", "42"),
        ("id: 2024-01-02", "2024-01-02"),
        ("id: STORY-004", "STORY-004"),
        ("id:", None),
        ("id: null", None),
    ],
)
def test_an_id_is_any_scalar_as_written(written: str, doc_id: str | None) -> None:
    assert declare_file("n.md", f"---\n{written}\n---\n").doc_id == doc_id


def test_parent_and_part_of_in_every_form() -> None:
    text = (
        "---\nparent: [[Epic one]]\npart_of:\n  - ../epics/two.md\n  - EPIC-3\n"
        "  - '[the epic](../epics/four%20x.md#top)'\n---\n"
    )
    decl = declare_file("stories/s.md", text)
    assert [ref.target for ref in decl.parents] == [
        "Epic one",
        "../epics/two.md",
        "EPIC-3",
        "epics/four x.md",
    ]


def test_aliases_as_one_string() -> None:
    assert declare_file("n.md", "---\naliases: Only one, still one\n---\n").aliases == [
        "Only one, still one"
    ]


@pytest.mark.parametrize(
    "front",
    [
        "title: [unclosed",  # not YAML
        "- a list\n- not a mapping",
        "just text",
        "base: &a [1, 2]\ncopy: *a\ntitle: Aliased",  # aliases are refused
        "title: " + "[" * 100 + "]" * 100,  # nested past the bound
        "title: x\n" + "k: v\n" * 20_000,  # longer than the bound
    ],
)
def test_a_malformed_or_refused_front_matter_is_none_and_the_file_a_document(front: str) -> None:
    text = f"---\n{front}\n---\n# Heading title\n[[Link]]\n"
    decl = declare_file("notes/odd.md", text)
    assert decl.title == "Heading title"
    assert decl.doc_id is None and decl.fields == {} and decl.tags == []
    assert _links(decl) == [("wiki", "Link")]


def test_front_matter_closes_with_dots_and_an_unclosed_one_is_none() -> None:
    assert declare_file("n.md", "---\ntitle: Dots\n...\nbody\n").title == "Dots"
    unclosed = declare_file("n.md", "---\ntitle: Never closed\n[[Link]]\n")
    assert unclosed.title == "n" and _links(unclosed) == [("wiki", "Link")]


# ---- title ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("intro\n\n# First heading #\n\n# Second\n", "First heading"),
        ("## Not top level\n\nSetext title\n===\n", "Setext title"),
        ("```\n# in a fence\n```\n\n# Real\n", "Real"),
        ("<!--\n# in a comment\n-->\n", "notes"),
        ("#hashtag only\n", "notes"),
        ("# The `code` module\n", "The `code` module"),
        ("", "notes"),
    ],
)
def test_title_is_the_first_top_level_heading_else_the_stem(text: str, title: str) -> None:
    assert declare_file("dir/notes.md", text).title == title


def test_a_file_that_is_not_markdown_is_named_by_its_stem_and_declares_nothing() -> None:
    decl = declare_file("docs/readme.txt", "# Heading\n[[Link]] [a](b.md) #tag\n")
    assert decl == FileDeclarations(path="docs/readme.txt", title="readme")


# ---- links ----------------------------------------------------------------------------------


def test_markdown_links_in_every_form() -> None:
    text = (
        '[a](b.md) [spaced](<with space.md>) [titled](c.md "Title") [up](../up.md)\n'
        "[encoded](my%20note.md) [frag](d.md#section) [query](e.md?x=1) ![img](pic.png)\n"
        "[root](/top.md) [parens](f(1).md) [multi\nline](g.md)\n\n"
        "[ref]: defs/target.md\n"
        '[ref2]: <defs/spaced target.md> "title"\n'
    )
    assert _links(declare_file("notes/sub/n.md", text)) == [
        ("markdown", "notes/sub/b.md"),
        ("markdown", "notes/sub/with space.md"),
        ("markdown", "notes/sub/c.md"),
        ("markdown", "notes/up.md"),
        ("markdown", "notes/sub/my note.md"),
        ("markdown", "notes/sub/d.md"),
        ("markdown", "notes/sub/e.md"),
        ("markdown", "notes/sub/pic.png"),
        ("markdown", "top.md"),
        ("markdown", "notes/sub/f(1).md"),
        ("markdown", "notes/sub/g.md"),
        ("markdown", "notes/sub/defs/target.md"),
        ("markdown", "notes/sub/defs/spaced target.md"),
    ]


@pytest.mark.parametrize(
    "decoy",
    [
        "[web](https://example.com/a.md)",
        "[mail](mailto:someone@example.com)",
        "[other](ftp://host/x.md)",
        "[frag](#a-heading)",
        "[out](../../outside.md)",
        "[root out](/../outside.md)",
        "[empty]()",
        "[^1]: a footnote, not a link",
        "no opening bracket](x.md)",
        "[x] (y.md)",
        "<https://example.com>",
    ],
)
def test_what_is_no_link_to_a_file(decoy: str) -> None:
    assert declare_file("notes/n.md", decoy + "\n").links == []


def test_wiki_links_in_every_form() -> None:
    text = (
        "[[Note]] [[Note two|label]] [[Note three#Heading]] ![[embed.png]] [[folder/Deep note]]"
        " [[#Own heading]] [[Note four#^block|x]]\n| [[Table link\\|alias]] |\n"
    )
    assert _links(declare_file("n.md", text)) == [
        ("wiki", "Note"),
        ("wiki", "Note two"),
        ("wiki", "Note three"),
        ("wiki", "embed.png"),
        ("wiki", "folder/Deep note"),
        ("wiki", "Note four"),
        ("wiki", "Table link"),
    ]


def test_a_link_written_twice_is_declared_once() -> None:
    assert _links(declare_file("n.md", "[[A]] [[A]] [x](b.md) [y](b.md#z)\n")) == [
        ("markdown", "b.md"),
        ("wiki", "A"),
    ]


# ---- decoys: code, comments, other front-matter keys -----------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "```\n[[Fenced]] [a](fenced.md) #fenced\n```\n",
        "~~~~python\n[[Fenced]] #fenced\n~~~~\n",
        "```` md\n```\n[[Still fenced]]\n```\n````\n",
        "- list\n\n  ```\n  [[Indented fence]]\n  ```\n",
        "para\n\n    [[Indented code]] #code\n",
        "`[[Inline]]` and ``[a](inline.md) ` #code``\n",
        "<!-- [[Commented]] [a](c.md) #comment -->\n",
        "<!--\nmany\n\n[[lines]]\n-->\n",
        "---\nnote: 'see [[Not a link]] and #not-a-tag'\nsummary: '[a](fm.md)'\n---\n",
    ],
)
def test_nothing_in_code_comments_or_other_front_matter_is_a_link_or_tag(text: str) -> None:
    decl = declare_file("n.md", text)
    assert decl.links == [] and decl.tags == []


def test_prose_around_code_still_counts() -> None:
    text = (
        "before [[A]]\n```\n[[B]]\n```\nafter [[C]] `[[D]]` [[E]] <!-- [[F]] --> [[G]]\n"
        "- item\n\n    [[List continuation]]\n"
        "unclosed `tick [[H]]\n"
    )
    assert [t for _, t in _links(declare_file("n.md", text))] == [
        "A",
        "C",
        "E",
        "G",
        "List continuation",
        "H",
    ]


# ---- tags -----------------------------------------------------------------------------------


def test_inline_tags_and_their_decoys() -> None:
    text = (
        "#topic at the start, #a/b nested, #Kebab-Case mixed, #ünïcode too.\n"
        "# A heading\n## Another\nC# and F# are languages, issue #123 is a number,\n"
        "https://example.com/page#fragment, [x](#frag), &#39; an entity, x#y glued,\n"
        "`#inline-code` and \\#escaped and #2024-01 a date, #_under ok\n"
    )
    assert declare_file("n.md", text).tags == [
        "#topic",
        "#a/b",
        "#kebab-case",
        "#ünïcode",
        "#_under",
    ]


def test_tags_are_case_folded_and_unique() -> None:
    decl = declare_file("n.md", "---\ntags: [Moon]\n---\n#moon #MOON #Moon\n")
    assert decl.tags == ["#moon"]


# ---- Python imports -------------------------------------------------------------------------


def test_python_imports_give_candidate_paths_most_likely_first() -> None:
    text = (
        "import os\n"
        "import pkg.util as u\n"
        "from pkg.sub import thing, mod\n"
        "from . import sibling\n"
        "from ..parent import name\n"
        "def f():\n"
        "    import pkg.late\n"
    )
    imports = [i.candidates for i in declare_file("src/pkg/sub/x.py", text).imports]
    assert imports[0][:2] == ["os.py", "os/__init__.py"]
    # pkg is the file's own top-level package: rooted at src/ first.
    assert imports[1][:2] == ["src/pkg/util.py", "src/pkg/util/__init__.py"]
    assert imports[2][:4] == [
        "src/pkg/sub/thing.py",
        "src/pkg/sub/thing/__init__.py",
        "src/pkg/sub.py",
        "src/pkg/sub/__init__.py",
    ]
    assert imports[3][:2] == ["src/pkg/sub/mod.py", "src/pkg/sub/mod/__init__.py"]
    assert imports[4] == [
        "src/pkg/sub/sibling.py",
        "src/pkg/sub/sibling/__init__.py",
        "src/pkg/sub/__init__.py",
    ]
    assert imports[5] == [
        "src/pkg/parent/name.py",
        "src/pkg/parent/name/__init__.py",
        "src/pkg/parent.py",
        "src/pkg/parent/__init__.py",
    ]
    assert imports[6][:2] == ["src/pkg/late.py", "src/pkg/late/__init__.py"]
    assert len(imports) == 7


@pytest.mark.parametrize(
    "text",
    [
        "from .... import too_far\n",
        "import os\x00\n",
        "from (broken import\n",
        '"""A docstring.\n\nimport in_docstring\n"""\n',
        "# import in_comment\nx = 'import in_string'\n",
        's = """never closed\nimport after_it\n',
        "(" * 1000 + ")" * 1000,
    ],
)
def test_what_is_no_import(text: str) -> None:
    assert declare_file("a/b.py", text).imports == []


def test_each_import_statement_is_read_on_its_own() -> None:
    text = (
        "def broken(:\n"
        "    import after_a_syntax_error\n"
        "from a.b import (c,\n    d)\n"
        "from e import \\\n    f\n"
        "if True:\n    import g; import h\n"
    )
    firsts = [i.candidates[0] for i in declare_file("x.py", text).imports]
    assert firsts == ["after_a_syntax_error.py", "a/b/c.py", "a/b/d.py", "e/f.py", "g.py", "h.py"]


# ---- any text -------------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "[",
        "]",
        "(",
        ")",
        "[[",
        "]]",
        "|",
        "#",
        "`",
        "```",
        "~~~",
        "<!--",
        "-->",
        "---\n",
        "...\n",
        "\n",
        "\n\n",
        "    ",
        "\t",
        "- ",
        "a",
        "x.md",
        "../",
        "/",
        "%20",
        "\\",
        '"',
        "'",
        ": ",
        "*a",
        "&a ",
        "import ",
        "from ",
        " . ",
        "é",
        "\x00",
        "STORY-1",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=60).map("".join), st.sampled_from(["n/a.md", "p/m.py"]))
def test_any_text_is_read_without_an_exception_and_stays_in_the_tree(text: str, path: str) -> None:
    decl = declare_file(path, text)
    assert decl.title
    for ref in [*decl.links, *decl.parents, *decl.supersedes]:
        assert ref.target
        if ref.kind == "markdown":
            assert not ref.target.startswith(("../", "/")) and ref.target != ".."
    assert all(t.startswith("#") and t == normal_tag(t) for t in decl.tags)
    assert declare_file(path, text) == decl
    masked, _ = mask(text)
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(masked) if c == "\n"] == [
        i for i, c in enumerate(text) if c == "\n"
    ]
