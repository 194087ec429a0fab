"""Marks (named checkpoints): name rules, exclusive create, reachability, tombstones."""

from __future__ import annotations

import threading
from pathlib import Path

import msgspec
import pytest

from lcg.errors import MarkError
from lcg.events.layout import CHECKPOINTS_DIR
from lcg.events.marks import MarkRecord, create_mark, delete_mark, list_marks, validate_name


@pytest.fixture(autouse=True)
def _stream_dir(gdir: Path) -> None:
    """Marks are made on a stream directory that exists (a group that was written)."""
    gdir.mkdir(parents=True)


def test_a_mark_on_a_group_never_written_is_refused_and_creates_nothing(gdir: Path) -> None:
    missing = gdir.parent / "caseg"
    with pytest.raises(MarkError, match="no stream directory"):
        create_mark(missing, "m", None, None)
    assert not missing.exists()
    # A symlink in place of a stream directory is not one either.
    link = gdir.parent / "linked"
    link.symlink_to(gdir)
    with pytest.raises(MarkError, match="not a real directory"):
        create_mark(link, "m", 1, "G")
    assert not (gdir / CHECKPOINTS_DIR).exists()


def test_mark_files_are_private(gdir: Path) -> None:
    create_mark(gdir, "m", 1, "G")
    mark_dir = gdir / CHECKPOINTS_DIR / "m"
    assert (gdir / CHECKPOINTS_DIR).stat().st_mode & 0o777 == 0o700
    assert mark_dir.stat().st_mode & 0o777 == 0o700
    assert (mark_dir / "g1.create.json").stat().st_mode & 0o777 == 0o600


def _list(gdir: Path, lo: int | None = 0, hi: int | None = 10, gen: str | None = "G") -> dict:
    marks = list_marks(gdir, wal_min_seq=lo, wal_max_seq=hi, generation=gen)
    return {m.name: m for m in marks}


@pytest.mark.parametrize("name", ["", "a b", "a/b", "../x", "é", "x" * 201, ".hidden"])
def test_bad_names_are_refused(gdir: Path, name: str) -> None:
    with pytest.raises(MarkError, match="invalid checkpoint name"):
        create_mark(gdir, name, 1, "G")
    with pytest.raises(MarkError, match="invalid checkpoint name"):
        validate_name(name)


def test_create_records_seq_and_generation(gdir: Path) -> None:
    rec = create_mark(gdir, "before-merge", 7, "G")
    path = gdir / CHECKPOINTS_DIR / "before-merge" / "g1.create.json"
    on_disk = msgspec.json.decode(path.read_bytes(), type=MarkRecord)
    assert on_disk == rec
    assert (rec.name, rec.seq, rec.wal_generation) == ("before-merge", 7, "G")
    assert rec.created_at_ms > 0
    assert list(msgspec.json.decode(path.read_bytes())) == [
        "name",
        "seq",
        "created_at_ms",
        "wal_generation",
    ]


def test_an_active_name_cannot_be_created_twice(gdir: Path) -> None:
    create_mark(gdir, "m", 1, "G")
    with pytest.raises(MarkError, match='checkpoint "m" already exists'):
        create_mark(gdir, "m", 2, "G")


def test_delete_tombstones_and_the_name_can_be_reused(gdir: Path) -> None:
    create_mark(gdir, "m", 1, "G")
    delete_mark(gdir, "m")
    mdir = gdir / CHECKPOINTS_DIR / "m"
    assert sorted(p.name for p in mdir.iterdir()) == ["g1.create.json", "g1.delete.json"]
    assert _list(gdir) == {}
    with pytest.raises(MarkError, match='checkpoint "m" not found'):
        delete_mark(gdir, "m")
    create_mark(gdir, "m", 5, "G")
    assert (mdir / "g2.create.json").is_file()
    assert _list(gdir)["m"].seq == 5
    with pytest.raises(MarkError, match='checkpoint "nope" not found'):
        delete_mark(gdir, "nope")


def test_racing_creators_have_exactly_one_winner(gdir: Path) -> None:
    wins: list[int] = []
    losses: list[str] = []
    barrier = threading.Barrier(8)

    def create(i: int) -> None:
        barrier.wait()
        try:
            create_mark(gdir, "race", i, "G")
            wins.append(i)
        except MarkError as exc:
            losses.append(str(exc))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(losses) == 7
    assert _list(gdir)["race"].seq == wins[0]
    assert len(list((gdir / CHECKPOINTS_DIR / "race").iterdir())) == 1


def test_list_is_sorted_and_computes_reachable(gdir: Path) -> None:
    create_mark(gdir, "b-null", None, "G")
    create_mark(gdir, "a-in", 10, "G")
    create_mark(gdir, "c-past", 11, "G")
    create_mark(gdir, "d-other-gen", 3, "H")
    create_mark(gdir, "e-no-gen", 3, None)
    marks = list_marks(gdir, wal_min_seq=0, wal_max_seq=10, generation="G")
    assert [m.name for m in marks] == ["a-in", "b-null", "c-past", "d-other-gen", "e-no-gen"]
    reach = {m.name: m.reachable for m in marks}
    assert reach == {
        "a-in": True,
        "b-null": True,
        "c-past": False,
        "d-other-gen": False,
        "e-no-gen": True,
    }
    assert all((m.wal_min_seq, m.wal_max_seq) == (0, 10) for m in marks)
    assert {m.name: m.generation for m in marks}["d-other-gen"] == "H"
    # A stream that no longer starts at 0 reaches nothing but null marks.
    trimmed = _list(gdir, lo=2)
    assert [n for n, m in trimmed.items() if m.reachable] == ["b-null"]
    # An empty stream: only null marks.
    empty = _list(gdir, lo=None, hi=None)
    assert [n for n, m in empty.items() if m.reachable] == ["b-null"]
    # Unknown stream generation: the generation check does not apply.
    assert _list(gdir, gen=None)["d-other-gen"].reachable is True


def test_unreadable_and_foreign_entries_are_ignored(gdir: Path) -> None:
    create_mark(gdir, "ok", 1, "G")
    broken = gdir / CHECKPOINTS_DIR / "broken"
    broken.mkdir()
    (broken / "g1.create.json").write_bytes(b"{\xff")
    (gdir / CHECKPOINTS_DIR / "not a name").mkdir()
    (gdir / CHECKPOINTS_DIR / "ok" / "notes.txt").write_text("x")
    assert list(_list(gdir)) == ["ok"]
    assert list_marks(gdir / "none", wal_min_seq=0, wal_max_seq=0, generation=None) == []
