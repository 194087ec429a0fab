"""``SnapshotBook``: the per-group bookkeeping the text and vector projections share."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lcg.events.position import Position
from lcg.projections._checksum import DamagedFile
from lcg.projections._snapshots import SnapshotBook


@dataclass
class _State:
    seq: int | None = None
    generation: str | None = None


def _never() -> None:
    raise AssertionError("must not be removed")


def test_applied_groups_are_positioned_changed_until_saved_and_dropped() -> None:
    book: SnapshotBook[_State] = SnapshotBook(read_only=False)
    assert book.position("b") == Position.none("b") and book.names() == []
    for g in ("b", "a"):
        book.states[g] = _State()
        book.applied(g, book.states[g], 3, "G")
    assert book.position("a") == Position(group_id="a", generation="G", seq=3)
    assert [g for g, _ in book.changed()] == ["a", "b"] and book.names() == ["a", "b"]
    book.saved("a")
    assert [g for g, _ in book.changed()] == ["b"]
    book.drop("b")
    assert book.changed() == [] and book.names() == ["a"]
    assert book.position("b") == Position.none("b")


@pytest.mark.parametrize("read_only", [False, True])
def test_open_keeps_what_loads_and_lists_damage(read_only: bool) -> None:
    book: SnapshotBook[_State] = SnapshotBook(read_only=read_only)
    removed: list[str] = []
    book.open("ok", lambda: _State(4, "G"), _never)
    book.open("skip", lambda: None, _never)

    def damaged() -> _State:
        raise DamagedFile("snapshot /x is damaged (bad CRC)")

    def unreadable() -> _State:
        raise DamagedFile("snapshot /y is unreadable (EACCES)", content=False)

    book.open("bad", damaged, lambda: removed.append("bad"))
    book.open("locked", unreadable, lambda: removed.append("locked"))
    assert book.names() == ["ok"] and book.position("ok").seq == 4
    assert book.damaged == {
        "bad": "snapshot /x is damaged (bad CRC)",
        "locked": "snapshot /y is unreadable (EACCES)",
    }
    # A damaged content is deleted (rebuilt from the stream) unless only looked at; a file
    # that could not be read is never deleted.
    assert removed == ([] if read_only else ["bad"])
    assert book.discarded == [] and book.changed() == []


@pytest.mark.parametrize("read_only", [False, True])
def test_discard_lists_and_deletes_unless_read_only(read_only: bool) -> None:
    book: SnapshotBook[_State] = SnapshotBook(read_only=read_only)
    removed: list[str] = []
    book.discard("old", lambda: removed.append("old"))
    assert book.discarded == ["old"] and removed == ([] if read_only else ["old"])
