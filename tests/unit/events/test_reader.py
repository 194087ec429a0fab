"""Reading a group stream: bounds, location by file name, classification, never raising."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from lcg.events.codec import CHECKSUM_FIELD, encode_event, seal
from lcg.events.generation import generation_from_lines
from lcg.events.model import EpisodeAdded
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.writer import StreamWriter

Episode = Callable[..., EpisodeAdded]


@pytest.fixture
def rotated(gdir: Path, make_episode: Episode) -> Path:
    """A stream of seqs 0-24 in five files of five events."""
    with StreamWriter(gdir.parent, "g", fsync="off", max_events_per_file=5) as writer:
        for i in range(25):
            writer.append([make_episode(i)])
    return gdir


def _seqs(
    gdir: Path, lo: int = 0, hi: int | None = None, rep: ReadReport | None = None
) -> list[int]:
    return [e.seq for e in StreamReader(gdir).events(lo, hi, report=rep)]


@pytest.mark.parametrize(
    ("lo", "hi", "files"),
    [(0, None, 5), (0, 0, 1), (7, 12, 2), (10, 10, 1), (14, 15, 2), (24, None, 1), (3, 100, 5)],
)
def test_inclusive_bounds(rotated: Path, lo: int, hi: int | None, files: int) -> None:
    rep = ReadReport()
    top = 24 if hi is None else min(hi, 24)
    assert _seqs(rotated, lo, hi, rep) == list(range(lo, top + 1))
    assert rep.files_read == files
    assert rep.events_read == top - lo + 1


def test_bounds_past_the_end_or_empty(rotated: Path) -> None:
    assert _seqs(rotated, 25) == []
    assert _seqs(rotated, 9, 8) == []
    assert _seqs(rotated.parent / "missing") == []


def test_from_seq_opens_no_earlier_file(rotated: Path) -> None:
    # Wreck every earlier file: a read from seq 15 must not even notice.
    for name in ["000000000000.jsonl", "000000000005.jsonl", "000000000010.jsonl"]:
        (rotated / name).write_bytes(b"garbage that is not JSON\n" * 3)
    rep = ReadReport()
    assert _seqs(rotated, 15, rep=rep) == list(range(15, 25))
    assert rep.files_read == 2
    assert rep.bad_lines == 0


def test_batches_respect_size_and_order(rotated: Path) -> None:
    sizes = [len(b) for b in StreamReader(rotated).batches(3, batch_size=4)]
    assert sizes == [4, 4, 4, 4, 4, 2]
    flat = [e.seq for b in StreamReader(rotated).batches(3, 20, batch_size=4) for e in b]
    assert flat == list(range(3, 21))


def _write(gdir: Path, lines: list[bytes]) -> None:
    gdir.mkdir(parents=True, exist_ok=True)
    (gdir / "000000000000.jsonl").write_bytes(b"".join(lines))


def _line(make_episode: Episode, seq: int, gen: str = "G") -> bytes:
    return encode_event(msgspec.structs.replace(make_episode(seq), seq=seq, ts="t", gen=gen))


def test_every_bad_line_class_is_counted_with_deduplicated_samples(
    gdir: Path, make_episode: Episode
) -> None:
    bad_payload = msgspec.json.decode(_line(make_episode, 4))
    del bad_payload["uuid"], bad_payload[CHECKSUM_FIELD]
    _write(
        gdir,
        [
            _line(make_episode, 0),
            b"not json\n",
            b"not json\n",
            b"  \n",
            seal(b'{"seq": 1}'),
            _line(make_episode, 1),
            seal(b'{"seq":2,"type":"Unknown","v":1}'),
            seal(b'{"seq":3,"type":"EpisodeAdded","v":7,"group_id":"g"}'),
            seal(msgspec.json.encode(bad_payload)),
            _line(make_episode, 5, gen="OTHER"),
            _line(make_episode, 6, gen="OTHER"),
            _line(make_episode, 8),  # gap: 7 is missing
            _line(make_episode, 8),  # regression: 8 again
            _line(make_episode, 9)[:20],  # torn tail
        ],
    )
    rep = ReadReport()
    got = [e.seq for e in StreamReader(gdir, generation="G").events(report=rep)]
    assert got == [0, 1, 8, 8]
    assert rep.unparseable_lines == 3
    assert rep.unrecognised_lines == 2
    assert rep.failed_lines == 1
    assert rep.generation_mismatch_lines == 2
    assert rep.seq_gaps == 1
    assert rep.seq_regressions == 1
    assert rep.torn_tail is True
    assert rep.bad_lines == 8
    assert rep.generations_seen == ["G", "OTHER"]
    by_problem: dict[str, list[int]] = {}
    for sample in rep.samples:
        by_problem.setdefault(sample.problem, []).append(sample.count)
    assert by_problem == {
        "unparseable": [2, 1],  # the two identical lines share one sample
        "unrecognised": [1, 1],
        "failed": [1],
        "generation_mismatch": [1, 1],  # each names its seq
        "seq_gap": [1],
        "seq_regression": [1],
    }
    first = rep.samples[0]
    assert (first.file, first.line_no) == ("000000000000.jsonl", 2)


def test_without_a_generation_every_line_is_read(gdir: Path, make_episode: Episode) -> None:
    _write(gdir, [_line(make_episode, 0, "A"), _line(make_episode, 1, "B")])
    rep = ReadReport()
    assert [e.seq for e in StreamReader(gdir).events(report=rep)] == [0, 1]
    assert rep.generations_seen == ["A", "B"] and rep.generation_mismatch_lines == 0


def test_samples_are_capped_and_overflow_counted(gdir: Path) -> None:
    _write(gdir, [f'{{"seq":{i},"type":"T{i}","v":1}}\n'.encode() for i in range(15)])
    rep = ReadReport()
    assert list(StreamReader(gdir).events(report=rep)) == []
    assert rep.unrecognised_lines == 15
    assert len(rep.samples) == 10 and rep.samples_dropped == 5


def test_garbage_never_raises(gdir: Path, make_episode: Episode) -> None:
    rng = random.Random(7)
    good = [_line(make_episode, i) for i in range(20)]
    for _ in range(30):
        lines = list(good)
        for _ in range(5):
            i = rng.randrange(len(lines))
            blob = bytearray(lines[i])
            for _ in range(rng.randint(1, 8)):
                blob[rng.randrange(len(blob))] = rng.randrange(256)
            lines[i] = bytes(blob)
        _write(gdir, lines)
        rep = ReadReport()
        events = list(StreamReader(gdir, generation="G").events(report=rep))
        assert rep.events_read == len(events)
        assert all(isinstance(e, EpisodeAdded) for e in events)


def test_a_torn_line_in_an_earlier_file_is_a_bad_line_not_a_torn_tail(
    gdir: Path, make_episode: Episode
) -> None:
    gdir.mkdir(parents=True)
    (gdir / "000000000000.jsonl").write_bytes(_line(make_episode, 0) + b'{"torn')
    (gdir / "000000000001.jsonl").write_bytes(_line(make_episode, 1))
    rep = ReadReport()
    assert [e.seq for e in StreamReader(gdir).events(report=rep)] == [0, 1]
    assert rep.unparseable_lines == 1 and not rep.torn_tail


def test_last_seq_and_generation_from_lines(rotated: Path) -> None:
    assert StreamReader(rotated).last_seq() == 24
    with open(rotated / "000000000020.jsonl", "ab") as fh:
        fh.write(b'{"torn')
    assert StreamReader(rotated).last_seq() == 24
    gen = generation_from_lines(rotated)
    assert gen is not None and len(gen) == 32
    assert StreamReader(rotated.parent / "none").last_seq() is None
    assert generation_from_lines(rotated.parent / "none") is None


def test_last_lines_longer_than_the_tail_window(gdir: Path, make_episode: Episode) -> None:
    # read_tail looks at 256 KiB first, then widens: a 600 KB line and a 300 KB torn tail.
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(0), make_episode(1, size=600_000)])
    seg = gdir / "000000000000.jsonl"
    with open(seg, "ab") as fh:
        fh.write(b'{"type":"EpisodeAdded","seq":2,"content":"' + b"y" * 300_000)
    assert StreamReader(gdir).last_seq() == 1
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        assert writer.next_seq == 2
    assert _seqs(gdir) == [0, 1]


def test_skipped_seqs_cover_a_lost_head_a_hole_and_a_bad_tail(
    gdir: Path, make_episode: Episode
) -> None:
    corrupt = _line(make_episode, 6).replace(b"G", b"H", 1)
    _write(
        gdir,
        [
            _line(make_episode, 2),  # seqs 0-1 lost: the stream's head
            _line(make_episode, 3),
            _line(make_episode, 5),  # 4 lost
            corrupt,  # 6 claimed, damaged
            b"garbage\n",  # 7, unreadable
        ],
    )
    rep = ReadReport()
    got = [e.seq for e in StreamReader(gdir).events(report=rep)]
    assert got == [2, 3, 5]
    assert rep.skipped_seqs == [(0, 1), (4, 4), (6, 7)]
    assert rep.seqs_skipped == 5
    assert rep.corrupt_lines == 1 and rep.unparseable_lines == 1
    assert rep.damaged and rep.resume_seq == 8
    # A read from a later seq expects that seq first; a range read clips the tail.
    part = ReadReport()
    assert [e.seq for e in StreamReader(gdir).events(3, 5, report=part)] == [3, 5]
    assert part.skipped_seqs == [(4, 4)]


def test_a_clean_read_skips_nothing(gdir: Path, make_episode: Episode) -> None:
    _write(gdir, [_line(make_episode, s) for s in range(4)])
    rep = ReadReport()
    assert [e.seq for e in StreamReader(gdir).events(report=rep)] == [0, 1, 2, 3]
    assert rep.skipped_seqs == [] and not rep.damaged and rep.resume_seq == 4
