"""The single writer of a group stream."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from lcg import telemetry, timestamps
from lcg.errors import GenerationError, StreamError, StreamLockedError
from lcg.events.codec import decode_line, encode_event
from lcg.events.generation import read_generation
from lcg.events.layout import GENERATION_FILE, QUARANTINE_DIR, TEMP_SUFFIX
from lcg.events.model import EpisodeAdded, Event
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.segments import list_segments
from lcg.events.writer import StreamWriter

Episode = Callable[..., EpisodeAdded]


def _names(gdir: Path) -> list[str]:
    return [s.path.name for s in list_segments(gdir)]


def _read(gdir: Path) -> tuple[list[Event], ReadReport]:
    report = ReadReport()
    return list(StreamReader(gdir).events(report=report)), report


def test_first_append_creates_the_stream_lazily(wal_root: Path, events: list[Event]) -> None:
    with StreamWriter(wal_root, "g", fsync="always") as writer:
        assert _names(wal_root / "g") == []
        stamped = writer.append(events)
    assert [e.seq for e in stamped] == list(range(len(events)))
    assert {e.gen for e in stamped} == {writer.generation}
    assert len({e.ts for e in stamped}) == 1  # one chunk, one timestamp
    assert _names(wal_root / "g") == ["000000000000.jsonl"]
    got, report = _read(wal_root / "g")
    assert got == stamped
    assert report.bad_lines == 0


def test_generation_is_minted_once_and_stamped(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        gen = writer.generation
        writer.append([make_episode(0)])
    assert read_generation(gdir) == gen and len(gen) == 32
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        assert writer.generation == gen
        (e,) = writer.append([make_episode(1)])
    assert e.gen == gen and e.seq == 1
    raw = msgspec.json.decode((gdir / "000000000000.jsonl").read_bytes().splitlines()[1])
    assert raw["gen"] == gen


def test_ts_is_rfc3339_utc_with_microseconds() -> None:
    ts = timestamps.now()
    assert len(ts) == 27 and ts[10] == "T" and ts.endswith("Z") and ts[19] == "."


def test_rotation_by_events(gdir: Path, make_episode: Episode) -> None:
    sink = io.BytesIO()
    telemetry.set_sink(sink)
    with StreamWriter(gdir.parent, "g", fsync="off", max_events_per_file=3) as writer:
        for i in range(5):
            writer.append([make_episode(i)])
        writer.append([make_episode(5), make_episode(6), make_episode(7), make_episode(8)])
    # 0-2 | 3-4 (+ chunk of 4 would pass 3) | 5-8 (a chunk is never split)
    assert _names(gdir) == ["000000000000.jsonl", "000000000003.jsonl", "000000000005.jsonl"]
    records = [msgspec.json.decode(line) for line in sink.getvalue().splitlines()]
    assert [r["type"] for r in records] == ["wal_rotated", "wal_rotated"]
    assert records[0]["from_file_seq"] == 0 and records[0]["to_file_seq"] == 3
    assert records[0]["closed_events"] == 3
    assert records[0]["closed_bytes"] == (gdir / "000000000000.jsonl").stat().st_size
    assert records[1]["from_file_seq"] == 3 and records[1]["to_file_seq"] == 5
    assert [e.seq for e in _read(gdir)[0]] == list(range(9))


def test_rotation_by_bytes(gdir: Path, make_episode: Episode) -> None:
    sample = msgspec.structs.replace(
        make_episode(0, size=100), seq=0, ts=timestamps.now(), gen="a" * 32
    )
    line = len(encode_event(sample))
    with StreamWriter(
        gdir.parent, "g", fsync="batch", max_bytes_per_file=2 * line + 10, max_events_per_file=99
    ) as writer:
        for i in range(5):
            writer.append([make_episode(i, size=100)])
        # An oversize chunk is written whole into a file of its own.
        writer.append([make_episode(i, size=5000) for i in range(5, 7)])
    assert _names(gdir) == [
        "000000000000.jsonl",
        "000000000002.jsonl",
        "000000000004.jsonl",
        "000000000005.jsonl",
    ]
    assert (gdir / "000000000005.jsonl").read_bytes().count(b"\n") == 2
    assert [e.seq for e in _read(gdir)[0]] == list(range(7))


def test_byte_rotation_zero_means_off(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off", max_bytes_per_file=0) as writer:
        for i in range(20):
            writer.append([make_episode(i, size=1000)])
    assert _names(gdir) == ["000000000000.jsonl"]


def test_reopen_continues_in_the_last_file_and_its_counts(
    gdir: Path, make_episode: Episode
) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off", max_events_per_file=4) as writer:
        for i in range(6):
            writer.append([make_episode(i)])
    with StreamWriter(gdir.parent, "g", fsync="off", max_events_per_file=4) as writer:
        assert writer.next_seq == 6
        writer.append([make_episode(6)])
        writer.append([make_episode(7)])
        writer.append([make_episode(8)])  # the reopened file already held 4-5: 4-7 is full
    assert _names(gdir) == ["000000000000.jsonl", "000000000004.jsonl", "000000000008.jsonl"]


def test_torn_tail_is_truncated_and_kept_in_quarantine(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(0), make_episode(1)])
    seg = gdir / "000000000000.jsonl"
    whole = seg.read_bytes()
    torn = encode_event(make_episode(2))[:25]
    seg.write_bytes(whole + torn)
    assert _read(gdir)[1].torn_tail
    with StreamWriter(gdir.parent, "g", fsync="always") as writer:
        assert writer.next_seq == 2
        (e,) = writer.append([make_episode(2)])
        assert e.seq == 2
    (kept,) = (gdir / QUARANTINE_DIR).iterdir()
    assert kept.read_bytes() == torn
    assert kept.name.startswith(f"000000000000.jsonl.{len(whole)}.")
    got, report = _read(gdir)
    assert [x.seq for x in got] == [0, 1, 2] and not report.torn_tail and report.bad_lines == 0


def test_complete_but_unparseable_last_lines_are_quarantined(
    gdir: Path, make_episode: Episode
) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(0)])
    seg = gdir / "000000000000.jsonl"
    good = seg.read_bytes()
    seg.write_bytes(good + b"\x00\x00\x00\n" + b'{"half":\n')
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        assert writer.next_seq == 1
    assert seg.read_bytes() == good
    kept = sorted(p.read_bytes() for p in (gdir / QUARANTINE_DIR).iterdir())
    assert kept == sorted([b"\x00\x00\x00\n", b'{"half":\n'])


def test_a_repeated_crash_at_one_offset_keeps_every_torn_write(
    gdir: Path, make_episode: Episode
) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(0)])
    seg = gdir / "000000000000.jsonl"
    good = seg.read_bytes()
    for torn in (b'{"first', b'{"second'):
        seg.write_bytes(good + torn)
        StreamWriter(gdir.parent, "g", fsync="off").close()
    kept = sorted(p.read_bytes() for p in (gdir / QUARANTINE_DIR).iterdir())
    assert kept == [b'{"first', b'{"second']


def test_a_whole_torn_file_leaves_an_empty_segment(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off", max_events_per_file=1) as writer:
        writer.append([make_episode(0)])
    (gdir / "000000000001.jsonl").write_bytes(b'{"type":"Epi')
    with StreamWriter(gdir.parent, "g", fsync="off", max_events_per_file=1) as writer:
        assert writer.next_seq == 1
        writer.append([make_episode(1)])
    assert [e.seq for e in _read(gdir)[0]] == [0, 1]


def test_sidecar_is_restored_from_the_lines(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(0)])
        gen = writer.generation
    (gdir / GENERATION_FILE).unlink()
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        assert writer.generation == gen
    assert read_generation(gdir) == gen


def test_blank_or_corrupt_sidecar_on_an_empty_stream_is_replaced(gdir: Path) -> None:
    gdir.mkdir()
    (gdir / GENERATION_FILE).write_text('{"generation": "  "}')
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        gen = writer.generation
    assert gen.strip() and read_generation(gdir) == gen


def test_mixed_generations_are_refused(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(0)])
    (gdir / GENERATION_FILE).write_text('{"generation":"other"}')
    with pytest.raises(GenerationError, match="mixes two generations"):
        StreamWriter(gdir.parent, "g", fsync="off")
    # The lock was released: the stream can be opened once the sidecar is fixed.
    (gdir / GENERATION_FILE).unlink()
    seg = gdir / "000000000000.jsonl"
    other = msgspec.structs.replace(make_episode(1), seq=1, ts="t", gen="other")
    with open(seg, "ab") as fh:
        fh.write(encode_event(other))
    with pytest.raises(GenerationError, match="first line carries generation"):
        StreamWriter(gdir.parent, "g", fsync="off")


def test_second_writer_in_the_same_process_is_refused(gdir: Path) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off"):
        with pytest.raises(StreamLockedError, match="already has a writer") as info:
            StreamWriter(gdir.parent, "g", fsync="off")
    assert ".writer.lock" in str(info.value)
    StreamWriter(gdir.parent, "g", fsync="off").close()  # released on close


def test_wrong_group_and_closed_writer_are_errors(gdir: Path, make_episode: Episode) -> None:
    writer = StreamWriter(gdir.parent, "g", fsync="always")
    with pytest.raises(StreamError, match="event for group 'h'"):
        writer.append([make_episode(0), make_episode(1, group_id="h")])
    assert writer.next_seq == 0
    assert writer.append([]) == []
    writer.close()
    writer.close()  # idempotent
    with pytest.raises(StreamError, match="is closed"):
        writer.append([make_episode(0)])
    assert _names(gdir) == []


def test_close_segment_starts_a_new_file(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="always") as writer:
        assert writer.close_segment() is False
        writer.append([make_episode(0)])
        assert writer.close_segment() is True
        assert writer.close_segment() is False
        writer.append([make_episode(1)])
    assert _names(gdir) == ["000000000000.jsonl", "000000000001.jsonl"]


@pytest.mark.parametrize("policy", ["always", "batch", "off"])
def test_every_policy_writes_before_returning(
    gdir: Path, make_episode: Episode, policy: str
) -> None:
    writer = StreamWriter(gdir.parent, "g", fsync=policy, batch_interval_s=0.001)  # type: ignore[arg-type]
    try:
        writer.append([make_episode(0)])
        # Visible to a reader at once: a killed process would not lose it.
        assert [e.seq for e in _read(gdir)[0]] == [0]
        writer.sync()
    finally:
        writer.close()


def test_stale_temp_files_are_swept(gdir: Path) -> None:
    gdir.mkdir()
    stale = gdir / f".wal-bounds.json.1234{TEMP_SUFFIX}"
    fresh = gdir / f".wal-bounds.json.5678{TEMP_SUFFIX}"
    stale.write_text("x")
    fresh.write_text("x")
    os.utime(stale, (1, 1))
    StreamWriter(gdir.parent, "g", fsync="off").close()
    assert not stale.exists() and fresh.exists()


def test_lines_are_decodable_one_by_one(gdir: Path, events: list[Event]) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append(events)
    for n, line in enumerate((gdir / "000000000000.jsonl").read_bytes().splitlines()):
        assert decode_line(line).seq == n


def test_lines_without_any_generation_are_refused(gdir: Path) -> None:
    gdir.mkdir()
    (gdir / "000000000000.jsonl").write_bytes(b'{"type":"Nope","seq":0,"v":1}\n')
    with pytest.raises(GenerationError, match="holds lines but no generation"):
        StreamWriter(gdir.parent, "g", fsync="off")
    assert not (gdir / GENERATION_FILE).exists()


def _failing(real: Callable[..., object], fail_on: int) -> Callable[..., object]:
    """Fault injection: ``real``, except that call number ``fail_on`` raises ``EIO``."""
    calls = [0]

    def fake(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] == fail_on:
            raise OSError(5, "Input/output error (injected)")
        return real(*args, **kwargs)

    return fake


def _append_concurrently(
    writer: StreamWriter, make_episode: Callable[[int], Episode], n: int
) -> dict[int, str]:
    """Append episodes 1..n from n threads at once; each one's outcome ("ok" or the error)."""
    import threading

    outcomes: dict[int, str] = {}
    barrier = threading.Barrier(n)

    def append(i: int) -> None:
        barrier.wait()
        try:
            writer.append([make_episode(i)])
            outcomes[i] = "ok"
        except StreamError as exc:
            outcomes[i] = str(exc)

    threads = [threading.Thread(target=append, args=(i,)) for i in range(1, n + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a waiter was never released"
    return outcomes


def test_a_failed_fsync_fails_every_waiter_and_breaks_the_writer(
    gdir: Path, make_episode: Episode, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lcg.events.writer as writer_module

    writer = StreamWriter(gdir.parent, "g", fsync="always", max_events_per_file=1)
    writer.append([make_episode(0)])
    # After a failed fsync the page cache cannot be trusted: nothing may follow.
    monkeypatch.setattr(writer_module.os, "fsync", _failing(os.fsync, 1))
    outcomes = _append_concurrently(writer, make_episode, 6)
    monkeypatch.undo()
    assert len(outcomes) == 6 and "ok" not in outcomes.values()
    assert any(
        "Input/output error (injected)" in o or "failed earlier" in o for o in outcomes.values()
    )
    with pytest.raises(StreamError, match="failed earlier"):
        writer.append([make_episode(9)])
    writer.close()
    # Reopening recovers: the stream holds whole lines and seqs stay contiguous.
    with StreamWriter(gdir.parent, "g", fsync="always") as again:
        seqs = [e.seq for e in _read(gdir)[0]]
        assert seqs == list(range(len(seqs)))
        assert again.next_seq == len(seqs)


@pytest.mark.parametrize("target", ["open", "write"])
def test_a_write_that_fails_cleanly_refuses_its_round_and_the_writer_goes_on(
    gdir: Path, make_episode: Episode, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    import lcg.events.writer as writer_module

    writer = StreamWriter(gdir.parent, "g", fsync="always", max_events_per_file=1)
    writer.append([make_episode(0)])
    # The next segment cannot be created, or the next write fails (a full disk): the file
    # still ends on a whole line, so the writer refuses that round and takes the next.
    monkeypatch.setattr(writer_module.os, target, _failing(getattr(os, target), 1))
    outcomes = _append_concurrently(writer, make_episode, 6)
    assert any(o != "ok" for o in outcomes.values())
    assert all(o == "ok" or "nothing was written" in o for o in outcomes.values())
    assert writer.fault is None or "Input/output error" in writer.fault
    writer.append([make_episode(7)])
    assert writer.fault is None
    monkeypatch.undo()
    writer.close()
    events = _read(gdir)[0]
    assert [e.seq for e in events] == list(range(len(events)))
    # Exactly the acknowledged appends are in the stream, in seq order.
    on_disk = sorted(e.uuid for e in events)
    acked = [0, 7] + [i for i, o in outcomes.items() if o == "ok"]
    assert on_disk == sorted(make_episode(i).uuid for i in acked)
