"""Property tests of the stream: what is read equals what was written, seqs are contiguous.

Strategies build every event type (``event_registry``'s, one per member of the ``Event`` union)
with arbitrary text (newlines, quotes, non-ASCII included), then write them in random chunks
under random rotation limits and read them back between random bounds.
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from event_registry import Values, strategies
from lcg.events.codec import decode_line, encode_event
from lcg.events.layout import segment_name
from lcg.events.model import EpisodeAdded, Event
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.segments import list_segments
from lcg.events.writer import StreamWriter
from lcg.timestamps import to_text

#: A recorded time (events carry only times in this form, ADR 0150).
TS = "2024-05-01T12:00:00.000000Z"

GROUP = "g"
text = st.text(max_size=12)
ids = st.text(alphabet="0123456789abcdef-", min_size=1, max_size=8)
#: Payload times: only the recorded form decodes (ADR 0150), every year 0001-9999.
times = st.datetimes(min_value=datetime(1, 1, 1)).map(to_text)
maybe_time = st.none() | times
small = st.integers(min_value=0, max_value=10**6)


#: Plain values: every text arbitrary, every time in the recorded form.
VALUES = Values(
    group=st.just(GROUP), texts=text, ids=ids, endpoints=ids | st.just(""),
    content=st.text(max_size=200), times=times, maybe_times=maybe_time, ints=small,
    attributes=text,
)  # fmt: skip
EVENT_STRATEGIES: dict[str, st.SearchStrategy[Event]] = strategies(VALUES)

any_event = st.one_of(*EVENT_STRATEGIES.values())
chunks = st.lists(st.lists(any_event, min_size=1, max_size=4), min_size=1, max_size=12)
limits = st.tuples(
    st.integers(min_value=1, max_value=8),  # max events per file
    st.sampled_from([0, 300, 1200, 5000]),  # max bytes per file (0 = off)
)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(event=any_event, seq=st.integers(min_value=0, max_value=2**53), gen=ids, ts=text)
def test_codec_round_trips_every_type(event: Event, seq: int, gen: str, ts: str) -> None:
    stamped = msgspec.structs.replace(event, seq=seq, ts=ts, gen=gen)
    line = encode_event(stamped)
    assert line.count(b"\n") == 1 and line.endswith(b"\n")
    assert decode_line(line).event == stamped


@SETTINGS
@given(
    written=chunks,
    limit=limits,
    reopen_at=st.integers(min_value=0, max_value=12),
    bounds=st.tuples(st.integers(0, 60), st.none() | st.integers(0, 60)),
)
def test_read_equals_written(
    written: list[list[Event]],
    limit: tuple[int, int],
    reopen_at: int,
    bounds: tuple[int, int | None],
) -> None:
    max_events, max_bytes = limit
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stamped: list[Event] = []
        writer = StreamWriter(
            root, GROUP, fsync="off", max_events_per_file=max_events,
            max_bytes_per_file=max_bytes,
        )  # fmt: skip
        try:
            for i, chunk in enumerate(written):
                if i == reopen_at:  # a restart mid-stream continues where it left off
                    writer.close()
                    writer = StreamWriter(
                        root, GROUP, fsync="off", max_events_per_file=max_events,
                        max_bytes_per_file=max_bytes,
                    )  # fmt: skip
                stamped.extend(writer.append(chunk))
        finally:
            writer.close()

        gdir = root / GROUP
        total = sum(len(c) for c in written)
        assert [e.seq for e in stamped] == list(range(total))
        assert len({e.gen for e in stamped}) == 1

        report = ReadReport()
        assert list(StreamReader(gdir).events(report=report)) == stamped
        assert report.bad_lines == 0 and report.seq_gaps == 0 and not report.torn_tail

        # Files are named by their first seq; a file passes a limit only with a single chunk.
        for seg in list_segments(gdir):
            data = seg.path.read_bytes()
            first = decode_line(data.split(b"\n", 1)[0]).seq
            assert seg.path.name == segment_name(first if first is not None else -1)
            n_lines = data.count(b"\n")
            if n_lines > max_events or (max_bytes and len(data) > max_bytes):
                assert any(len(c) == n_lines and seg.first_seq == sum(map(len, written[:k]))
                           for k, c in enumerate(written))  # fmt: skip

        lo, hi = bounds
        want = [e for e in stamped if e.seq >= lo and (hi is None or e.seq <= hi)]
        assert list(StreamReader(gdir).events(lo, hi)) == want


valid_line = st.builds(
    lambda e, seq: encode_event(msgspec.structs.replace(e, seq=seq, ts="t", gen="G")),
    any_event,
    st.integers(0, 50),
)
junk_line = st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ") + b"\n")


@SETTINGS
@given(lines=st.lists(valid_line | junk_line, max_size=30), torn=st.binary(max_size=30))
def test_reader_never_raises_and_accounts_for_every_line(lines: list[bytes], torn: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        gdir = Path(tmp)
        (gdir / segment_name(0)).write_bytes(b"".join(lines) + torn.replace(b"\n", b""))
        report = ReadReport()
        events = list(StreamReader(gdir, generation="G").events(report=report))
        assert report.events_read == len(events)
        non_blank = sum(1 for line in lines if line.strip())
        assert report.events_read + report.bad_lines <= non_blank
        assert report.torn_tail == bool(torn.replace(b"\n", b""))
        assert all(e.gen == "G" for e in events)


bounds_ops = st.lists(
    st.sampled_from(["append", "append3", "corrupt", "drop", "torn", "reopen", "trim"]),
    min_size=1,
    max_size=12,
)


@SETTINGS
@given(ops=bounds_ops, max_events=st.integers(1, 4))
def test_bounds_cache_never_changes_an_answer(ops: list[str], max_events: int) -> None:
    from lcg.events.bounds import read_bounds
    from lcg.events.layout import BOUNDS_FILE

    def episode(i: int) -> EpisodeAdded:
        return EpisodeAdded(group_id=GROUP, uuid=str(i), name="n", content="c", created_at=TS)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        gdir = root / GROUP
        writer = StreamWriter(root, GROUP, fsync="off", max_events_per_file=max_events)
        try:
            for i, op in enumerate(ops):
                if op.startswith("append"):
                    writer.append([episode(i) for _ in range(3 if op == "append3" else 1)])
                elif op == "corrupt":
                    (gdir / BOUNDS_FILE).write_bytes(b'{"min_seq": 7, "max_seq": 99, "files": []}')
                elif op == "drop":
                    (gdir / BOUNDS_FILE).unlink(missing_ok=True)
                elif op in ("torn", "reopen", "trim"):
                    writer.close()
                    segments = list_segments(gdir)
                    if op == "torn" and segments:
                        with open(segments[-1].path, "ab") as fh:
                            fh.write(b'{"torn":')
                    if op == "trim" and len(segments) > 1:
                        segments[0].path.unlink()
                    writer = StreamWriter(root, GROUP, fsync="off", max_events_per_file=max_events)
                cached = read_bounds(gdir)  # whatever the cache holds now
                (gdir / BOUNDS_FILE).unlink(missing_ok=True)
                truth = read_bounds(gdir, write_cache=False)  # from the files alone
                read_bounds(gdir)  # writes a fresh cache
                fresh = read_bounds(gdir)  # answered from it
                for b in (cached, fresh):
                    assert (b.min_seq, b.max_seq, b.file_count, b.byte_size) == (
                        truth.min_seq, truth.max_seq, truth.file_count, truth.byte_size,
                    )  # fmt: skip
        finally:
            writer.close()
