"""The per-group JSON sidecar the projector keeps its cleared floors and resets in."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from lcg.errors import CorruptFileError
from lcg.projections._group_file import GroupsFile, GroupSidecar, read_groups, write_groups
from lcg.projections._group_records import ClearedFloor, ClearedFloors, DamageBook
from lcg.projections._pending_resets import PendingResets


class _Value(msgspec.Struct, kw_only=True):
    n: int


_DECODER = msgspec.json.Decoder(GroupsFile[_Value])


def _sidecar(path: Path | None) -> GroupSidecar[_Value]:
    return GroupSidecar(path, _DECODER, "delete it")


def test_values_survive_a_reopen_and_an_empty_sidecar_deletes_its_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "values.json"
    side = _sidecar(path)
    assert side.groups == {} and not path.exists()
    side.groups["a"] = _Value(n=1)
    side.groups["b"] = _Value(n=2)
    side._save()
    assert path.read_bytes() == b'{"groups":{"a":{"n":1},"b":{"n":2}}}'
    assert _sidecar(path).groups == {"a": _Value(n=1), "b": _Value(n=2)}
    side.forget("a")
    assert _sidecar(path).groups == {"b": _Value(n=2)}
    side.forget("absent")  # nothing to drop: the file stays as it is
    assert path.exists()
    side.forget()
    assert side.groups == {} and not path.exists()


def test_forget_does_not_write_when_nothing_changes(tmp_path: Path) -> None:
    path = tmp_path / "values.json"
    write_groups(path, {"a": _Value(n=1)})
    side = _sidecar(path)
    path.write_bytes(b"left alone")  # a write would replace these bytes
    side.forget("absent")
    assert path.read_bytes() == b"left alone"
    empty = _sidecar(None)
    empty.forget()
    assert empty.groups == {}


def test_without_a_path_it_lives_in_memory(tmp_path: Path) -> None:
    side = _sidecar(None)
    side.groups["a"] = _Value(n=1)
    side._save()
    side.forget("a")
    assert side.groups == {} and list(tmp_path.iterdir()) == []
    assert read_groups(None, _DECODER, "x") == {}


@pytest.mark.parametrize("data", [b"{not json", b'{"groups":{"a":{"n":"one"}}}', b"\xff\xfe"])
def test_an_undecodable_file_is_an_error_naming_it_and_its_remedy(
    tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "values.json"
    path.write_bytes(data)
    with pytest.raises(CorruptFileError, match=r"values\.json is unreadable .*; delete it"):
        _sidecar(path)


def test_the_projector_sidecars_keep_their_file_formats(tmp_path: Path) -> None:
    resets = PendingResets(tmp_path / "resets.json")
    resets.note("g", "old", "new")
    assert (tmp_path / "resets.json").read_bytes() == (
        b'{"groups":{"g":{"previous_generation":"old","generation":"new"}}}'
    )
    floors = ClearedFloors(tmp_path / "cleared.json")
    floors.record({"g": ClearedFloor(through_seq=4, generation="G"), "h": None})
    assert (tmp_path / "cleared.json").read_bytes() == (
        b'{"groups":{"g":{"through_seq":4,"generation":"G"}}}'
    )
    assert ClearedFloors(tmp_path / "cleared.json").get("g") == floors.get("g")
    floors.forget("g")
    assert not (tmp_path / "cleared.json").exists()
    book = DamageBook(tmp_path / "damaged.json")
    book.set("g", "skipped", "lost seq 3")
    book.set("h", "behind", "not kept")
    assert (tmp_path / "damaged.json").read_bytes() == (
        b'{"groups":{"g":{"kind":"skipped","reason":"lost seq 3"}}}'
    )
    book.forget()  # the damage file stays, empty, once written
    assert (tmp_path / "damaged.json").read_bytes() == b'{"groups":{}}'
    assert DamageBook(tmp_path / "damaged.json").groups == {}
