"""A group's sources (``ingest/sources/registry.py``, ADR 0200): the label a new source gets,
which source a path belongs to, a nested source, the roots refused, the last sync, and a
source removed. Real workspace (one per module, a group per test); the hash embedder is the
TEST DOUBLE."""

from __future__ import annotations

import pytest

from lcg.errors import InvalidParamsError
from lcg.events.model import SourceRegistered
from lcg.ingest.sources import (
    forget_source,
    list_sources,
    registered_sources,
    resolve_source,
)
from lcg.ingest.sources.tree import source_label, under
from lcg.workspace import Workspace


def _registered(ws: Workspace, group: str) -> list[SourceRegistered]:
    if group not in ws.store.groups():
        return []
    return [e for e in ws.store.reader(group).events() if isinstance(e, SourceRegistered)]


@pytest.mark.parametrize(
    ("name", "file", "taken", "label"),
    [
        ("notes", False, set(), "notes"),
        ("notes", False, {"notes"}, "notes~2"),
        ("notes", False, {"notes", "notes~2"}, "notes~3"),
        ("README.md", True, {"README.md"}, "README~2.md"),
        ("README.md", True, {"README.md", "README~2.md"}, "README~3.md"),
        (".bashrc", True, {".bashrc"}, ".bashrc~2"),
        ("", False, set(), "root"),
    ],
)
def test_a_new_source_gets_its_name_or_the_first_free_number(
    name: str, file: bool, taken: set[str], label: str
) -> None:
    assert source_label(name, file=file, taken=taken) == label


def test_under_is_a_path_or_inside_it() -> None:
    assert under("sub/a.md", "sub") and under("sub", "sub") and under("x", "")
    assert not under("subway/a.md", "sub")


def test_a_path_belongs_to_the_innermost_registered_folder(
    shared_ws: Workspace, group: str
) -> None:
    outer = resolve_source(shared_ws, group, "/t/notes", "folder")
    assert outer.created and outer.source is not None and outer.source.label == "notes"
    inner = resolve_source(shared_ws, group, "/t/notes/sub/deep", "folder")
    assert not inner.created and inner.source == outer.source and inner.within == "sub/deep"
    # A sibling whose name starts alike is not inside.
    other = resolve_source(shared_ws, group, "/t/notes-old", "folder")
    assert other.created and other.source is not None and other.source.label == "notes-old"
    # A folder holding a registered one: it is left out of the new source's scan.
    top = resolve_source(shared_ws, group, "/t", "folder")
    assert top.created and top.nested == ["notes", "notes-old"]
    # ... and the innermost owner wins for a path inside both.
    again = resolve_source(shared_ws, group, "/t/notes/a.md", "file")
    assert again.source == outer.source and again.within == "a.md"
    assert [e.root for e in _registered(shared_ws, group)] == ["/t/notes", "/t/notes-old", "/t"]


def test_two_sources_of_one_name_and_two_groups(shared_ws: Workspace, group: str) -> None:
    a = resolve_source(shared_ws, group, "/a/notes", "folder").source
    b = resolve_source(shared_ws, group, "/b/notes", "folder").source
    f = resolve_source(shared_ws, group, "/c/notes", "file").source
    assert a and b and f and (a.label, b.label, f.label) == ("notes", "notes~2", "notes~3")
    assert (a.prefix, f.prefix) == ("notes/", "notes~3:")
    # Another group's sources are its own: the same folder is "notes" there too.
    elsewhere = resolve_source(shared_ws, group + "x", "/b/notes", "folder").source
    assert elsewhere is not None and elsewhere.label == "notes"


def test_only_a_resolved_absolute_root_is_registered(shared_ws: Workspace, group: str) -> None:
    for bad in ("notes", "/a/../etc", "/a/./b", "/a/b/", "/a\x00b"):
        with pytest.raises(InvalidParamsError, match="resolved absolute path"):
            resolve_source(shared_ws, group, bad, "folder")
    assert _registered(shared_ws, group) == []


def test_create_false_registers_nothing_and_touch_records_the_last_sync(
    shared_ws: Workspace, group: str
) -> None:
    assert resolve_source(shared_ws, group, "/x/notes", "folder", create=False).source is None
    assert _registered(shared_ws, group) == []
    first = resolve_source(shared_ws, group, "/x/notes", "folder").source
    assert first is not None
    resolve_source(shared_ws, group, "/x/notes", "folder")  # known: nothing recorded
    assert len(_registered(shared_ws, group)) == 1
    touched = resolve_source(shared_ws, group, "/x/notes/a.md", "file", touch=True).source
    assert touched is not None and touched.synced_at >= first.synced_at
    events = _registered(shared_ws, group)
    assert [(e.root, e.label) for e in events] == [("/x/notes", "notes")] * 2
    with shared_ws.reading():
        assert registered_sources(shared_ws, group) == [touched]


def test_a_forgotten_source_frees_its_label(shared_ws: Workspace, group: str) -> None:
    resolve_source(shared_ws, group, "/x/notes", "folder")
    assert forget_source(shared_ws, group, "/x/notes")
    assert not forget_source(shared_ws, group, "/x/notes")
    assert list_sources(shared_ws, [group]) == []
    again = resolve_source(shared_ws, group, "/y/notes", "folder").source
    assert again is not None and again.label == "notes"
