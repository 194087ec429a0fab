"""The one line check (events/linecheck.py) and the verifying tail-reader (events/tail.py)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from lcg.events.codec import encode_event
from lcg.events.linecheck import LineCheck
from lcg.events.model import EpisodeAdded
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.tail import TailDefect, VerifiedTail

GEN = "g1"
SEGMENT = "000000000000.jsonl"


def _event(seq: int, gen: str = GEN) -> EpisodeAdded:
    return EpisodeAdded(
        group_id="g",
        uuid=f"ep{seq}",
        name=f"n{seq}",
        content="x",
        created_at="2024-05-01T12:00:00.000000Z",
        seq=seq,
        gen=gen,
        ts="2024-05-01T12:00:00.000000Z",
    )


def _line(seq: int, gen: str = GEN) -> bytes:
    return encode_event(_event(seq, gen))


def _legacy(seq: int) -> bytes:
    """A line as written before checksums existed (no ``crc32`` field)."""
    return msgspec.json.encode(_event(seq)) + b"\n"


def test_a_good_line_passes_with_its_event() -> None:
    checked = LineCheck(GEN).check(_line(3))
    assert checked.problem is None and checked.event is not None
    assert (checked.seq, checked.gen) == (3, GEN)


def test_a_changed_byte_is_corrupt_and_keeps_the_claimed_seq_and_generation() -> None:
    line = _line(4).replace(b'"n4"', b'"m4"')
    checked = LineCheck(GEN).check(line)
    assert checked.event is None and checked.problem == "corrupt"
    assert (checked.seq, checked.gen) == (4, GEN)


def test_a_legacy_line_is_accepted_until_a_checksummed_one_was_seen() -> None:
    check = LineCheck(GEN)
    assert check.check(_legacy(0)).problem is None
    assert check.check(_line(1)).problem is None
    after = check.check(_legacy(2))
    assert after.event is None and after.problem == "corrupt"
    assert "no checksum after lines that carry one" in after.detail


def test_another_generation_is_a_mismatch_with_the_event_kept() -> None:
    checked = LineCheck(GEN).check(_line(5, gen="other"))
    assert checked.problem == "generation_mismatch" and checked.event is not None
    assert checked.gen == "other"
    # Without a stream generation, any generation passes.
    assert LineCheck().check(_line(5, gen="other")).problem is None


def test_undecodable_lines_are_classified_with_the_generation_they_claim() -> None:
    unknown = LineCheck(GEN).check(b'{"seq":1,"type":"Nope","gen":"old","ts":"x"}')
    assert unknown.problem == "unrecognised" and unknown.gen == "old"
    junk = LineCheck(GEN).check(b"not json")
    assert junk.problem == "unparseable" and junk.gen is None and junk.seq is None


def test_wal_verify_and_the_tail_reader_judge_a_legacy_line_alike(tmp_path: Path) -> None:
    """The reader (replay, ``lcg wal verify``) and the tail-reader share the check."""
    gdir = tmp_path / "g"
    gdir.mkdir()
    (gdir / SEGMENT).write_bytes(_line(0) + _line(1) + _legacy(2))
    report = ReadReport()
    assert [e.seq for e in StreamReader(gdir, generation=GEN).events(report=report)] == [0, 1]
    assert report.corrupt_lines == 1
    tail = VerifiedTail("g", gdir, GEN)
    seen: list[int] = []
    with pytest.raises(TailDefect, match="no checksum after lines that carry one"):
        for event in tail.read(yield_after=-1):
            seen.append(event.seq)
    assert seen == [0, 1] and tail.next_seq == 2


def test_the_tail_reader_reads_only_new_complete_lines(tmp_path: Path) -> None:
    gdir = tmp_path / "g"
    gdir.mkdir()
    seg = gdir / SEGMENT
    seg.write_bytes(_line(0) + _line(1))
    tail = VerifiedTail("g", gdir, GEN)
    assert [e.seq for e in tail.read(yield_after=-1)] == [0, 1]
    # A line being appended is not read until it is whole.
    whole = _line(2)
    with open(seg, "ab") as fh:
        fh.write(whole[:10])
    assert list(tail.read(yield_after=-1)) == []
    with open(seg, "ab") as fh:
        fh.write(whole[10:])
    assert [e.seq for e in tail.read(yield_after=-1)] == [2]


def test_the_tail_reader_refuses_a_rewritten_prefix_and_a_gap(tmp_path: Path) -> None:
    gdir = tmp_path / "g"
    gdir.mkdir()
    seg = gdir / SEGMENT
    seg.write_bytes(_line(0) + _line(1))
    tail = VerifiedTail("g", gdir, GEN)
    list(tail.read(yield_after=None))
    seg.write_bytes(_line(0) + _line(1, gen=GEN).replace(b'"n1"', b'"m1"'))
    with pytest.raises(TailDefect, match="rewritten in place"):
        list(tail.read(yield_after=None))
    fresh = VerifiedTail("g", gdir, GEN)
    seg.write_bytes(_line(0) + _line(2))
    with pytest.raises(TailDefect, match="seq gap .* seq 2 where 1 was expected"):
        list(fresh.read(yield_after=None))
