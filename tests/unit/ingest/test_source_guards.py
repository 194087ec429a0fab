"""A source tree read as untrusted input (issue 27 items 2-4, ADR 0192): links never followed,
non-regular files refused after opening, never more than the limit read (also from a file
swapped in after the walk), names and depth that are not notes skipped and named, every
reader bounded on hostile input, and a file or folder that cannot be read this run keeps what
the group holds of it. (Ignore rules: ``test_ignore_rules.py``.)

Real files, FIFOs and links in temporary trees, a real workspace for the sync. An I/O error
cannot be made with a chmod when the suite runs as root, so it is injected at the open
(``_hostile_trees.deny``)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from _hostile_trees import chain, deny, unchain
from lcg.ingest.sources import (
    DirectBackend,
    Document,
    StoredChunk,
    chunk_document,
    discover,
    plan_sync,
    read_document,
    scan_tree,
    source_manifest,
    sync_tree,
    tree_scope,
)
from lcg.ingest.sources.readers import html_text
from lcg.workspace import Workspace

LINK = "symbolic link (not followed)"


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body) if isinstance(body, bytes) else p.write_text(body)
    return root


def _reasons(skipped: list[Any]) -> dict[str, str]:
    return {s.path: s.reason for s in skipped}


# ---- links, special files, the limit ------------------------------------------------------


def test_links_anywhere_are_skipped_and_named_never_followed(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "outside", {"id_key": "PRIVATE KEY material", "d/x.md": "out"})
    root = _tree(tmp_path / "n", {"real.md": "the real note", "sub/deep.md": "deep note"})
    (root / "key.md").symlink_to(outside / "id_key")
    (root / "elsewhere").symlink_to(outside / "d")
    (root / "alias.md").symlink_to(root / "real.md")
    (root / "sub" / "up").symlink_to(root)
    (root / "status.txt").symlink_to("/proc/self/status")
    scan = scan_tree(root)
    assert sorted(f.source_file for f in scan.files) == ["n/real.md", "n/sub/deep.md"]
    assert _reasons(scan.skipped) == {
        "n/alias.md": LINK,
        "n/elsewhere": LINK,
        "n/key.md": LINK,
        "n/status.txt": LINK,
        "n/sub/up": LINK,
    }
    texts = " ".join(c.text for f in scan.files for c in f.chunks)
    assert "PRIVATE KEY" not in texts and "State:" not in texts


def test_a_fifo_is_named_and_reading_one_never_blocks(tmp_path: Path) -> None:
    root = _tree(tmp_path / "n", {"a.md": "note"})
    os.mkfifo(root / "pipe.md")
    # A FIFO swapped in after the walk: the read step itself must refuse it, not block.
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(read_document(root / "pipe.md")))
    reader.start()
    reader.join(60)
    if reader.is_alive():  # blocked in open(): release it, then fail
        os.close(os.open(root / "pipe.md", os.O_WRONLY | os.O_NONBLOCK))
        reader.join(60)
        pytest.fail("reading a FIFO blocked")
    assert got[0].reason == "not a regular file (a FIFO)"  # type: ignore[attr-defined]
    assert _reasons(discover(root).skipped) == {"pipe.md": "not a regular file (a FIFO)"}


def test_the_read_step_never_reads_past_the_limit_whatever_the_walk_saw(tmp_path: Path) -> None:
    root = _tree(tmp_path / "n", {"a.md": "small"})
    (found,) = discover(root, max_bytes=100).files
    (root / "a.md").write_text("x" * 10_000)  # swapped in after the walk's stat
    stale = read_document(Path(found.path), max_bytes=100)
    assert stale.reason == "too large: 10,000 bytes (limit 100)"  # type: ignore[union-attr]
    # A /proc file says it holds 0 bytes: what is read is what counts.
    proc = read_document(Path("/proc/self/status"), max_bytes=64)
    assert proc.reason == "too large: grew past the limit (64 bytes) as read"  # type: ignore[union-attr]
    assert read_document(Path("/proc/self/status"), max_bytes=1 << 20).kind == "text"  # type: ignore[union-attr]


# ---- names and depth ----------------------------------------------------------------------


def test_a_name_that_is_not_utf8_and_a_deep_folder_are_skipped_and_named(tmp_path: Path) -> None:
    root = _tree(tmp_path / "n", {"ok.md": "fine note"})
    (root / os.fsdecode(b"bad\xff.md")).write_text("bytes in its name")
    (root / os.fsdecode(b"dir\xfe")).mkdir()
    chain(root, 300, "bottom.md")
    try:
        scan = scan_tree(root)
    finally:
        unchain(root, 300, "bottom.md")
    assert [f.source_file for f in scan.files] == ["n/ok.md"]
    reasons = _reasons(scan.skipped)
    assert reasons.pop("n/bad\\xff.md") == "name is not UTF-8 (not read)"
    assert reasons.pop("n/dir\\xfe") == "name is not UTF-8 (not read)"
    ((deep, why),) = reasons.items()
    assert deep == "n/" + "/".join(["d"] * 257)
    assert why == "too deep: more than 256 nested folders (not read)"


# ---- readers on hostile input -------------------------------------------------------------


def test_html_text_in_one_pass_keeps_what_the_parser_kept() -> None:
    """The one-pass scanner reads a page as ``html.parser`` did (``<a<a<a…``, which that
    parser never finished, is ``tests/e2e/test_cli_sources_hostile.py``'s)."""
    page = (
        "<!DOCTYPE html><head><title>t</title></head><h1 class='a>b'>Top &amp; tail</h1>"
        "<!-- gone --><p>one<br/>two</p><script>if (a<b) {x='</p>'}</script>"
        "<svg><text>no</text></svg>a < b <p>last"
    )
    assert html_text(page) == "# Top & tail\n\none\n\ntwo\n\na < b\n\nlast"


def test_a_huge_heading_or_deep_json_neither_explodes_nor_aborts() -> None:
    title = "word " * 40_000
    chunks = chunk_document(Document(kind="markdown", text=f"# {title}\n\nbody\n"), 500)
    assert all(len(c.text) <= 500 for c in chunks)
    assert "".join(c.text for c in chunks).count("word") >= 40_000  # nothing of it lost
    org = "".join("*" * i + f" level {i}\n" for i in range(1, 400)) + "text\n"
    assert all(len(c.text) <= 500 for c in chunk_document(Document(kind="org", text=org)))
    deep = chunk_document(Document(kind="json", text="[" * 100_000 + "]" * 100_000))
    assert deep and all(len(c.text) <= 500 for c in deep)


# ---- a read error keeps what is stored ----------------------------------------------------


def test_a_file_or_folder_unreadable_this_run_keeps_its_stored_chunks(
    shared_ws: Workspace, group: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(
        tmp_path / "n",
        {"open.md": "open note", "secret.md": "secret note", "private/p.md": "private note"},
    )
    backend = DirectBackend(shared_ws)
    assert sync_tree(backend, root, group).files_new == 3
    with deny(monkeypatch, "secret.md", "private"):
        report = sync_tree(backend, root, group)
    assert (report.chunks_removed, report.files_removed) == (0, 0)
    assert report.files_kept == 2
    reasons = _reasons(report.skipped)
    assert reasons["n/secret.md"].startswith("unreadable this run (Permission denied)")
    assert reasons["n/private"].startswith("unreadable this run (Permission denied)")
    held = {c.source_file for c in source_manifest(shared_ws, group, tree_scope(root))}
    assert held == {"n/open.md", "n/secret.md", "n/private/p.md"}
    # Gone is gone: deleting the file (the folder still unreadable) removes only it.
    (root / "secret.md").unlink()
    with deny(monkeypatch, "private"):
        gone = sync_tree(backend, root, group)
    assert (gone.files_removed, gone.files_kept) == (1, 1)
    held = {c.source_file for c in source_manifest(shared_ws, group, tree_scope(root))}
    assert held == {"n/open.md", "n/private/p.md"}


def test_what_is_left_out_by_a_rule_is_removed_not_kept(tmp_path: Path) -> None:
    """The other side of the rule (ADR 0192): ignored, binary or a link now is a decision
    that holds from run to run, not a failure of this one."""
    root = _tree(tmp_path / "n", {"a.md": "alpha", "b.md": "beta", "c.md": "gamma"})
    first = scan_tree(root)
    stored = [
        StoredChunk(
            episode_uuid=f"u{i}",
            chunk_id=c.chunk_id,
            source_file=c.source_file,
            content_hash=c.content_hash,
        )
        for i, c in enumerate(c for f in first.files for c in f.chunks)
    ]
    (root / ".gitignore").write_text("a.md\n")
    (root / "b.md").write_bytes(b"\x00binary now")
    (root / "c.md").unlink()
    (root / "c.md").symlink_to(root / "a.md")
    plan = plan_sync(scan_tree(root), stored)
    assert sorted(plan.removals) == ["n/a.md", "n/b.md", "n/c.md"]
    assert plan.files_kept == 0


# ---- what is skipped by default (issue 28 item 3) ---------------------------------------


def test_lock_files_backups_minified_and_svg_are_skipped_by_default_and_named(
    tmp_path: Path,
) -> None:
    minified = "function a(){return 1}" * 200  # one 4,400-character line
    root = _tree(
        tmp_path / "n",
        {
            "note.md": "a note",
            "Cargo.lock": '[[package]]\nname = "x"\n',
            "web/package-lock.json": "{}",
            "web/app.min.js": "var a=1;",
            "web/bundle.js": minified,
            "web/app.js.map": "{}",
            "draft.md~": "backup",
            "#draft.md#": "autosave",
            "draft.md.swp": "swap",
            "logo.svg": "<svg><path d='M0 0'/></svg>",
        },
    )
    scan = scan_tree(root)
    assert [f.source_file for f in scan.files] == ["n/note.md"]
    reasons = _reasons(scan.skipped)
    assert reasons.pop("n/Cargo.lock") == (
        "lock file (skipped by default; `!Cargo.lock` in .lcgignore reads it)"
    )
    assert reasons.pop("n/web/bundle.js").startswith(
        "minified file (100% of its text on lines over 500 characters)"
    )
    kinds = {path: why.split(" (")[0] for path, why in reasons.items()}
    assert kinds == {
        "n/web/package-lock.json": "lock file",
        "n/web/app.min.js": "minified file",
        "n/web/app.js.map": "source map",
        "n/draft.md~": "editor backup or swap file",
        "n/#draft.md#": "editor backup or swap file",
        "n/draft.md.swp": "editor backup or swap file",
        "n/logo.svg": "SVG image",
    }
    # A negation reads what a default skips; a file named on its own is read as it is.
    (root / ".lcgignore").write_text("!Cargo.lock\n!web/bundle.js\n")
    read = [f.source_file for f in scan_tree(root).files]
    assert read == ["n/Cargo.lock", "n/note.md", "n/web/bundle.js"]
    assert [f.source_file for f in scan_tree(root / "logo.svg").files] == ["logo.svg"]


def test_an_ignore_file_that_is_a_link_or_too_large_is_named(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "elsewhere", {"rules": "*.md\n"})
    root = _tree(
        tmp_path / "n",
        {
            "a.md": "a",
            "secret.txt": "s",
            "tail.txt": "t",
            ".gitignore": "secret.txt\n" + "#" * 300_000 + "\ntail.txt\n",
            "sub/b.md": "b",
        },
    )
    (root / "sub" / ".gitignore").symlink_to(outside / "rules")
    found = discover(root)
    # The first 256 KiB of rules apply (whole lines), the rest does not; the link is not read.
    assert [f.rel for f in found.files] == ["a.md", "sub/b.md", "tail.txt"]
    assert _reasons(found.skipped) == {
        ".gitignore": "ignore file larger than 262,144 bytes: "
        "only the rules in its first part are used",
        "sub/.gitignore": "symbolic link (not followed): its rules are not used",
    }
