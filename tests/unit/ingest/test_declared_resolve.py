"""A tree's declarations resolved (issue 29 item 1, ADR 0204): a hand-written vault whose
declared structure is known exactly (recall and precision 1.0), the resolution order, the
nearest-file rule, unresolved links, imports, id mentions and their decoys."""

from __future__ import annotations

import random

from lcg.ingest.declared import (
    DeclaredDocument,
    DeclaredEdge,
    DeclaredMention,
    DeclaredStructure,
    UnresolvedLink,
    declare_file,
    resolve_tree,
)
from lcg.ingest.sources import Document, chunk_document

VAULT = {
    "index.md": (
        "---\ntitle: Apollo notes\ntags: [apollo]\n---\n"
        "Start at [[Landing plan]] or [the engine](engines/descent.md).\n"
        "See also [[LP|the plan, by alias]] and [[missing note]].\n"
    ),
    "plan.md": (
        "---\ntitle: Landing plan\nid: PLAN-1\naliases: [LP]\nstatus: draft\n---\n"
        "# Ignored heading\n"
        "The plan needs [[Descent engine#Throttle]] and [[stories/STORY-004|the story]].\n"
        "It replaces nothing. #Mission\n"
        "```\n[[Fenced decoy]] PLAN-1 STORY-004\n```\n"
    ),
    "engines/descent.md": (
        "# Descent engine\n"
        "Built for PLAN-1; see [plan](../plan.md) and `STORY-004` in code.\n"
        "<!-- [[Commented decoy]] STORY-004 -->\n"
        "Mentions STORY-0042 (no such id) and GHOST-9, and links [x](../gone.md). #mission\n"
    ),
    "stories/STORY-003.md": "---\nid: STORY-003\nparent: PLAN-1\n---\nThe first story.\n",
    "stories/STORY-004.md": (
        "---\nid: STORY-004\ntitle: Throttle story\nparent: '[[Landing plan]]'\n"
        "supersedes: STORY-003.md\nnote: 'not a link [[Descent engine]] #not-a-tag'\n---\n"
        "Replaces STORY-003. Self mention STORY-004 counts for nothing.\n"
    ),
    "code/app.py": "import os\nfrom code import util\nfrom .helpers import run\n",
    "code/util.py": "import json\n",
    "code/helpers.py": "",
}


def _tree(files: dict[str, str]) -> DeclaredStructure:
    decls = [declare_file(path, text) for path, text in files.items()]
    chunks = [(f"{path}#0", path, text) for path, text in files.items()]
    return resolve_tree(decls, chunks)


def test_the_vault_s_declared_structure_exactly() -> None:
    expected = DeclaredStructure(
        documents=[
            DeclaredDocument(path="code/app.py", name="app"),
            DeclaredDocument(path="code/helpers.py", name="helpers"),
            DeclaredDocument(path="code/util.py", name="util"),
            DeclaredDocument(path="engines/descent.md", name="Descent engine"),
            DeclaredDocument(path="index.md", name="Apollo notes"),
            DeclaredDocument(
                path="plan.md",
                name="Landing plan",
                doc_id="PLAN-1",
                aliases=["LP"],
                fields={"status": "draft"},
            ),
            DeclaredDocument(path="stories/STORY-003.md", name="STORY-003", doc_id="STORY-003"),
            DeclaredDocument(
                path="stories/STORY-004.md",
                name="Throttle story",
                doc_id="STORY-004",
                fields={"note": "not a link [[Descent engine]] #not-a-tag"},
            ),
        ],
        tags=["#apollo", "#mission"],
        edges=[
            DeclaredEdge(
                relation_type="IMPORTS",
                source="code/app.py",
                target="code/helpers.py",
                fact="app imports helpers",
            ),
            DeclaredEdge(
                relation_type="IMPORTS",
                source="code/app.py",
                target="code/util.py",
                fact="app imports util",
            ),
            DeclaredEdge(
                relation_type="LINKS_TO",
                source="engines/descent.md",
                target="plan.md",
                fact="Descent engine links to Landing plan",
            ),
            DeclaredEdge(
                relation_type="LINKS_TO",
                source="index.md",
                target="engines/descent.md",
                fact="Apollo notes links to Descent engine",
            ),
            DeclaredEdge(
                relation_type="LINKS_TO",
                source="index.md",
                target="plan.md",
                fact="Apollo notes links to Landing plan",
            ),
            DeclaredEdge(
                relation_type="LINKS_TO",
                source="plan.md",
                target="engines/descent.md",
                fact="Landing plan links to Descent engine",
            ),
            DeclaredEdge(
                relation_type="LINKS_TO",
                source="plan.md",
                target="stories/STORY-004.md",
                fact="Landing plan links to Throttle story",
            ),
            DeclaredEdge(
                relation_type="PART_OF",
                source="stories/STORY-003.md",
                target="plan.md",
                fact="STORY-003 is part of Landing plan",
            ),
            DeclaredEdge(
                relation_type="PART_OF",
                source="stories/STORY-004.md",
                target="plan.md",
                fact="Throttle story is part of Landing plan",
            ),
            DeclaredEdge(
                relation_type="SUPERSEDES",
                source="stories/STORY-004.md",
                target="stories/STORY-003.md",
                fact="Throttle story supersedes STORY-003",
            ),
            DeclaredEdge(
                relation_type="TAGGED",
                source="engines/descent.md",
                target="#mission",
                fact="Descent engine is tagged #mission",
            ),
            DeclaredEdge(
                relation_type="TAGGED",
                source="index.md",
                target="#apollo",
                fact="Apollo notes is tagged #apollo",
            ),
            DeclaredEdge(
                relation_type="TAGGED",
                source="plan.md",
                target="#mission",
                fact="Landing plan is tagged #mission",
            ),
        ],
        mentions=[
            DeclaredMention(chunk_id="engines/descent.md#0", target="plan.md"),
            # The link's target names the id as a whole token: a mention as well as a link.
            DeclaredMention(chunk_id="plan.md#0", target="stories/STORY-004.md"),
            DeclaredMention(chunk_id="stories/STORY-004.md#0", target="stories/STORY-003.md"),
        ],
        unresolved=[
            UnresolvedLink(source="engines/descent.md", target="gone.md", kind="markdown"),
            UnresolvedLink(source="index.md", target="missing note", kind="wiki"),
        ],
    )
    assert _tree(VAULT) == expected


def test_the_same_tree_in_any_order_gives_the_same_structure() -> None:
    decls = [declare_file(path, text) for path, text in VAULT.items()]
    chunks = [(f"{path}#0", path, text) for path, text in VAULT.items()]
    first = resolve_tree(decls, chunks)
    shuffled = decls[:]
    random.Random(7).shuffle(shuffled)
    assert resolve_tree(shuffled, chunks) == first


# ---- resolution order -----------------------------------------------------------------------


def _links_of(files: dict[str, str], source: str) -> list[str]:
    tree = _tree(files)
    return [e.target for e in tree.edges if e.source == source and e.relation_type == "LINKS_TO"]


def test_a_path_wins_over_an_id_a_title_an_alias_and_a_stem() -> None:
    files = {
        "a.md": "[[x]] [[X/deep]]",
        "x.md": "---\ntitle: By path\n---\n",
        "y.md": "---\nid: x\n---\n",
        "X/deep.md": "",
    }
    assert _links_of(files, "a.md") == ["X/deep.md", "x.md"]


def test_names_resolve_in_order_id_title_alias_stem_ignoring_case() -> None:
    files = {
        "src.md": "[[NAME-1]] [[the title]] [[AN ALIAS]] [[Stem Only]]",
        "id.md": "---\nid: name-1\n---\n",
        "title.md": "---\ntitle: The Title\naliases: [name-1]\n---\n",
        "alias.md": "---\naliases: [An Alias]\n---\n",
        "dir/stem only.md": "",
    }
    assert _links_of(files, "src.md") == [
        "alias.md",
        "dir/stem only.md",
        "id.md",
        "title.md",
    ]


def test_a_name_two_files_share_resolves_to_the_nearest_then_the_first_by_path() -> None:
    files = {
        "team/a/note.md": "[[Shared]]",
        "team/a/shared.md": "",
        "team/b/shared.md": "[[Shared]]",
        "other/x.md": "[[Shared]]",
        "zeta/shared.md": "",
    }
    tree = _tree(files)
    got = {e.source: e.target for e in tree.edges if e.relation_type == "LINKS_TO"}
    assert got == {"team/a/note.md": "team/a/shared.md", "other/x.md": "team/a/shared.md"}
    # team/b/shared.md resolves to itself: no edge, and not unresolved.
    assert tree.unresolved == []


def test_markdown_links_resolve_by_path_with_or_without_suffix_and_by_bare_name() -> None:
    files = {
        "notes/a.md": "[one](b) [two](../top.md) [three](Elsewhere.md) [four](sub/c)",
        "notes/b.md": "",
        "notes/sub/c.markdown": "",
        "top.md": "",
        "far/away/elsewhere.md": "",
    }
    assert _links_of(files, "notes/a.md") == [
        "far/away/elsewhere.md",
        "notes/b.md",
        "notes/sub/c.markdown",
        "top.md",
    ]


def test_front_matter_parents_resolve_by_path_relative_or_from_the_root_id_and_title() -> None:
    files = {
        "epics/e1.md": "---\nid: EPIC-1\n---\n",
        "epics/e2.md": "---\ntitle: Second epic\n---\n",
        "epics/e3.md": "",
        "stories/s1.md": "---\nparent: EPIC-1\n---\n",
        "stories/s2.md": "---\npart_of: [Second epic, ../epics/e3.md]\n---\n",
        "stories/s3.md": "---\nparent: epics/e3.md\n---\n",
        "stories/s4.md": "---\nparent: No such epic\n---\n",
    }
    tree = _tree(files)
    got = sorted((e.source, e.target) for e in tree.edges if e.relation_type == "PART_OF")
    assert got == [
        ("stories/s1.md", "epics/e1.md"),
        ("stories/s2.md", "epics/e2.md"),
        ("stories/s2.md", "epics/e3.md"),
        ("stories/s3.md", "epics/e3.md"),
    ]
    assert tree.unresolved == [
        UnresolvedLink(source="stories/s4.md", target="No such epic", kind="key")
    ]


def test_a_missing_file_is_unresolved_never_a_document_and_a_self_link_is_nothing() -> None:
    tree = _tree({"a.md": "[[Missing]] [m](missing.md) [[a]] [self](a.md)"})
    assert [d.path for d in tree.documents] == ["a.md"]
    assert tree.edges == []
    assert tree.unresolved == [
        UnresolvedLink(source="a.md", target="Missing", kind="wiki"),
        UnresolvedLink(source="a.md", target="missing.md", kind="markdown"),
    ]


def test_an_edge_declared_twice_is_one_edge() -> None:
    files = {"a.md": "---\ntags: [t]\n---\n[[B]] [b](b.md) [[b.md]] #t #T", "b.md": ""}
    tree = _tree(files)
    assert [(e.relation_type, e.target) for e in tree.edges] == [
        ("LINKS_TO", "b.md"),
        ("TAGGED", "#t"),
    ]
    assert tree.tags == ["#t"]


def test_imports_keep_the_first_held_candidate_and_outside_imports_are_nothing() -> None:
    files = {
        "src/pkg/__init__.py": "",
        "src/pkg/core.py": "import numpy\nimport os.path\nfrom pkg import util\nimport pkg\n",
        "src/pkg/util.py": "from . import core\n",
    }
    tree = _tree(files)
    got = sorted((e.source, e.target) for e in tree.edges if e.relation_type == "IMPORTS")
    assert got == [
        ("src/pkg/core.py", "src/pkg/__init__.py"),
        ("src/pkg/core.py", "src/pkg/util.py"),
        ("src/pkg/util.py", "src/pkg/core.py"),
    ]
    assert tree.unresolved == []


def test_a_relative_import_of_nothing_in_the_tree_is_unresolved() -> None:
    files = {
        "src/pkg/__init__.py": "",
        "src/pkg/core.py": "x = 1\n",
        "src/pkg/util.py": (
            "from . import core\n"  # held
            "from .missing import x\n"  # nothing of the tree
            "from . import gone\n"  # the module gone, else a name of pkg/__init__.py: held
            "from ..outside import y\n"  # src/outside.py: not held
            "from ...... import too_far\n"  # climbs out of the tree: no reference at all
            "import numpy\n"  # absolute, held nowhere: a third party's, not unresolved
        ),
        "lone/a.py": "from .b import c\n",  # a folder with no package: still the tree's
    }
    tree = _tree(files)
    got = sorted((e.source, e.target) for e in tree.edges if e.relation_type == "IMPORTS")
    assert got == [
        ("src/pkg/util.py", "src/pkg/__init__.py"),
        ("src/pkg/util.py", "src/pkg/core.py"),
    ]
    assert [(u.source, u.target, u.kind) for u in tree.unresolved] == [
        ("lone/a.py", ".b", "import"),
        ("src/pkg/util.py", "..outside", "import"),
        ("src/pkg/util.py", ".missing", "import"),
    ]


# ---- mentions -------------------------------------------------------------------------------


def _mentions(files: dict[str, str], chunks: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    decls = [declare_file(path, text) for path, text in files.items()]
    return [(m.chunk_id, m.target) for m in resolve_tree(decls, chunks).mentions]


IDS = {"s4.md": "---\nid: STORY-004\n---\n", "v.md": "---\nid: v1.2 final\n---\n"}


def test_a_mention_is_a_whole_token_of_prose() -> None:
    chunks = [
        ("c1", "n.md", "Done in STORY-004."),
        ("c2", "n.md", "STORY-0042 and XSTORY-004 and STORY-004-b are other tokens"),
        ("c3", "n.md", "`STORY-004` in code, <!-- STORY-004 --> in a comment"),
        ("c4", "n.md", "```\nSTORY-004\n```"),
        ("c5", "n.md", "(STORY-004), STORY-004: /STORY-004/ story-004"),
        ("c6", "n.md", "shipped as v1.2 final, not v1.2 finalised nor v1.2"),
        ("c7", "n.md", "GHOST-1 is declared by no file"),
        ("c8", "code.py", "# see STORY-004"),
    ]
    assert _mentions({**IDS, "n.md": ""}, chunks) == [
        ("c1", "s4.md"),
        ("c5", "s4.md"),
        ("c6", "v.md"),
        ("c8", "s4.md"),
    ]


def test_a_code_block_cut_across_chunks_stays_code_in_the_next_chunk() -> None:
    text = (
        "# Guide\n\n```\nfirst half\n" + "x\n" * 400 + "STORY-004 in code\n```\nSTORY-004 prose\n"
    )
    pieces = chunk_document(Document(kind="markdown", text=text))
    assert len(pieces) >= 3
    chunks = [(f"c{i}", "n.md", p.text) for i, p in enumerate(pieces)]
    last = chunks[-1][0]
    assert _mentions({**IDS, "n.md": text}, chunks) == [(last, "s4.md")]


def test_a_front_matter_never_mentions() -> None:
    text = "---\nparent: STORY-004\nnote: STORY-004\n---\nbody"
    assert _mentions({**IDS, "n.md": text}, [("c", "n.md", text)]) == []


def test_an_id_two_files_declare_mentions_the_nearest_other_file() -> None:
    files = {"a/x.md": "---\nid: DUP\n---\n", "b/x.md": "---\nid: DUP\n---\n", "b/n.md": ""}
    chunks = [("own", "a/x.md", "DUP"), ("near", "b/n.md", "DUP"), ("root", "r.md", "DUP")]
    assert _mentions(files, chunks) == [
        ("near", "b/x.md"),
        ("root", "a/x.md"),
    ]


def test_many_ids_are_matched_in_one_pass() -> None:
    files = {f"s/{i}.md": f"---\nid: ID-{i}\n---\n" for i in range(5000)}
    text = " ".join(f"ID-{i}" for i in range(0, 5000, 7)) + " ID-5000"
    got = _mentions(files, [("c", "n.md", text)])
    assert got == sorted(("c", f"s/{i}.md") for i in range(0, 5000, 7))
