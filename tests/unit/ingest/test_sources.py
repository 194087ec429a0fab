"""Source sync's pure parts (issue 22): which files a tree holds (git's ignore rules, hidden,
oversized), how each format reads, how documents split into bounded chunks with their
heading path, and the plan that turns what a group holds into what the tree holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.ingest.sources import (
    Document,
    StoredChunk,
    chunk_document,
    discover,
    heading_of,
    plan_sync,
    read_document,
    scan_tree,
)


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body) if isinstance(body, bytes) else p.write_text(body)
    return root


def test_discovery_follows_nested_gitignore_and_lcgignore(tmp_path: Path) -> None:
    root = _tree(
        tmp_path / "t",
        {
            ".gitignore": "*.log\nbuild/\n",
            ".lcgignore": "private.md\n",
            "a.md": "a",
            "private.md": "p",
            "x.log": "l",
            "build/out.md": "b",
            "sub/.gitignore": "!keep.log\n*.md\n",
            "sub/keep.log": "k",
            "sub/note.md": "n",
            "sub/code.py": "c",
            ".git/config": "g",
            ".obsidian/app.json": "{}",
            ".dotfile": "d",
        },
    )
    (root / "big.txt").write_text("x" * 200)
    found = discover(root, max_bytes=100)
    assert [f.rel for f in found.files] == ["a.md", "sub/code.py", "sub/keep.log"]
    assert [(s.path, s.reason) for s in found.skipped] == [
        ("big.txt", "too large: 200 bytes (limit 100)")
    ]
    assert found.ignored >= 8


def test_readers_by_extension_and_by_content(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "a.weird": "plain words\n",
            "b.dat.txt": b"\x00\x01",
            "c.txt": b"\xff\xfe\xfa not utf8",
            "d.pdf": b"%PDF-1.4",
            "e.png": b"\x89PNG",
            "f.html": "<h2>Title</h2><p>Body <b>bold</b> text.</p><style>p{}</style>",
            "g.rs": "fn main() {}\n",
            "h.md": "\ufeff# T\r\nbody\r\n",
        },
    )
    doc = read_document(root / "a.weird")
    assert isinstance(doc, Document) and doc.kind == "text"
    assert read_document(root / "b.dat.txt").reason == "binary content"  # type: ignore[union-attr]
    assert read_document(root / "c.txt").reason == "not UTF-8 text"  # type: ignore[union-attr]
    assert "PDF" in read_document(root / "d.pdf").reason  # type: ignore[union-attr]
    assert read_document(root / "e.png").reason == "binary format (.png)"  # type: ignore[union-attr]
    html = read_document(root / "f.html")
    assert html == Document(kind="markdown", text="## Title\n\nBody bold text.")
    assert read_document(root / "g.rs") == Document(kind="code", text="fn main() {}\n")
    assert read_document(root / "h.md") == Document(kind="markdown", text="# T\nbody\n")


MD = """---
title: guide
---
# Guide

Intro.

```sh
# not a heading

still the fence
```

## Install
### On Linux

apt install x

Setext title
------------

Under setext.
"""


def test_markdown_keeps_heading_paths_and_fences() -> None:
    chunks = chunk_document(Document(kind="markdown", text=MD), 1000)
    assert [c.heading for c in chunks] == [
        "",
        "Guide",
        "Guide › Install › On Linux",
        "Guide › Setext title",
    ]
    assert "# not a heading\n\nstill the fence" in chunks[1].text
    assert chunks[2].text == "# Guide › Install › On Linux\n\napt install x"
    assert heading_of(chunks[2].text) == "Guide › Install › On Linux"
    assert heading_of("plain text") == ""


@pytest.mark.parametrize("kind", ["markdown", "text", "code", "rst", "org", "json", "jsonl"])
def test_every_chunk_fits_the_budget(kind: str) -> None:
    sentence = "The lander touched down softly on the grey dust near the crater rim. "
    long_line = "x" * 3000
    body = {
        "markdown": "# A very long heading\n\n" + sentence * 80 + "\n\n" + long_line,
        "text": (sentence * 30 + "\n\n") * 5 + long_line,
        "code": "def f():\n" + "".join(f"    v{i} = {i}\n" for i in range(400)) + long_line,
        "rst": "Title\n=====\n\n" + sentence * 60,
        "org": "* Top\n" + sentence * 60,
        "json": "[" + ",".join(f'{{"n": {i}, "t": "{sentence}"}}' for i in range(60)) + "]",
        "jsonl": "\n".join(f'{{"n": {i}}}' for i in range(500)),
    }[kind]
    chunks = chunk_document(Document(kind=kind, text=body), 500)  # type: ignore[arg-type]
    assert len(chunks) > 2
    assert all(len(c.text) <= 500 for c in chunks)
    words = "".join(body.split())
    assert "".join("".join(c.text.split()) for c in chunks).count("landertouched") == words.count(
        "landertouched"
    )


def test_rst_org_and_code_structure() -> None:
    rst = chunk_document(Document(kind="rst", text="Top\n===\n\nOne.\n\nSub\n---\n\nTwo.\n"))
    assert [c.heading for c in rst] == ["Top", "Top › Sub"]
    org = chunk_document(Document(kind="org", text="* A\none\n** B\ntwo\n* C\nthree\n"))
    assert [c.heading for c in org] == ["A", "A › B", "C"]
    code = "import os\n\n\ndef a():\n    return 1\n\n\nclass B:\n    x = 1\n"
    blocks = chunk_document(Document(kind="code", text=code), 20 + 200)
    assert len(blocks) == 1 and blocks[0].text.startswith("import os\n\ndef a()")


def _stored(scan_chunks: list[tuple[str, str, str]]) -> list[StoredChunk]:
    return [
        StoredChunk(episode_uuid=f"u{i}", chunk_id=c, source_file=s, content_hash=h)
        for i, (c, s, h) in enumerate(scan_chunks)
    ]


def test_the_plan_adds_changed_removes_stale_and_keeps_the_rest(tmp_path: Path) -> None:
    root = _tree(tmp_path / "n", {"a.md": "# A\n\none\n\n# B\n\ntwo\n", "b.txt": "bee\n"})
    scan = scan_tree(root)
    a = next(f for f in scan.files if f.source_file == "n/a.md")
    b = next(f for f in scan.files if f.source_file == "n/b.txt")
    held = [(c.chunk_id, c.source_file, c.content_hash) for c in a.chunks]
    fresh = plan_sync(scan, _stored(held))
    assert [c.source_file for c in fresh.adds] == ["n/b.txt"]
    assert (fresh.files_new, fresh.files_unchanged, fresh.removals) == (1, 1, {})
    # b held, a's first chunk edited elsewhere, a gone file, a duplicate copy.
    held = [
        (a.chunks[1].chunk_id, "n/a.md", a.chunks[1].content_hash),
        (a.chunks[1].chunk_id, "n/a.md", a.chunks[1].content_hash),
        ("n/a.md#0123456789ab", "n/a.md", "old"),
        (b.chunks[0].chunk_id, "n/b.txt", b.chunks[0].content_hash),
        ("n/gone.md#0123456789ab", "n/gone.md", "x"),
    ]
    plan = plan_sync(scan, _stored(held))
    assert [c.chunk_id for c in plan.adds] == [a.chunks[0].chunk_id]
    assert plan.removals == {"n/a.md": ["u1", "u2"], "n/gone.md": ["u4"]}
    assert (plan.files_changed, plan.files_unchanged, plan.files_removed) == (1, 1, 1)


def test_chunk_ids_name_the_file_and_the_text(tmp_path: Path) -> None:
    root = _tree(tmp_path / "n", {"d.txt": "same\n\nother\n\nsame\n"})
    ids = [c.chunk_id for f in scan_tree(root, max_chars=200).files for c in f.chunks]
    assert len(ids) == 1  # three paragraphs fit one chunk
    root = _tree(tmp_path / "m", {"d.txt": ("same " * 50 + "\n\n") * 2})
    ids = [c.chunk_id for f in scan_tree(root, max_chars=260).files for c in f.chunks]
    assert len(ids) == 2 and ids[1] == ids[0] + "~2" and ids[0].startswith("m/d.txt#")


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("org", "* Ideas\n** Visit the Kennedy Space Center\n"),
        ("markdown", "# Ideas\n## Visit the Kennedy Space Center\n"),
        ("rst", "Ideas\n=====\n"),
    ],
)
def test_a_file_of_headings_only_is_still_a_chunk(kind: str, text: str) -> None:
    """An outline with no body under any heading is what the file says: it is searchable,
    not a file that silently holds nothing (it was counted nowhere)."""
    chunks = chunk_document(Document(kind=kind, text=text))
    assert chunks and "Ideas" in chunks[0].text
