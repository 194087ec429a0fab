"""The cost of the per-line checksum (ADR 0075), as ratios measured in the same run.

* encode: ``encode_events`` (msgspec ``encode_into`` + CRC-32 + the ``crc32`` field) against
  the same loop without the checksum (what the codec did before);
* decode: ``decode_line`` on the lines (checksum verified, then the typed decode) against
  ``decode_line`` on the same lines without the field (legacy lines: no verification);
* append: ``StreamWriter.append`` under ``LCG_WAL_FSYNC=off`` (no disk wait hides the CPU
  cost) against the same writer with the encoder swapped for the one without a checksum.

Run by ``make bench``; every number is the median of ``REPEATS`` interleaved runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from lcg.events import writer as writer_module
from lcg.events.codec import decode_line, encode_events
from lcg.events.model import EntityAsserted, EntityRecord, EpisodeAdded, Event
from lcg.events.writer import StreamWriter

TS = "2024-05-01T12:00:00.000000Z"
N = 20_000
REPEATS = 5
_enc = msgspec.json.Encoder()


def _events() -> list[Event]:
    out: list[Event] = []
    for i in range(N):
        if i % 2:
            out.append(
                EpisodeAdded(
                    group_id="bench", seq=i, ts=TS, gen="a" * 32, uuid=f"{i:032x}",
                    name=f"notes.md#{i}", content=("Ada Lovelace wrote a program. " * 8),
                    created_at=TS,
                )
            )  # fmt: skip
        else:
            record = EntityRecord(uuid=f"e{i}", name="Ada Lovelace", labels=["Entity"],
                                  summary="Mathematician.", created_at=TS)  # fmt: skip
            out.append(
                EntityAsserted(group_id="bench", seq=i, ts=TS, gen="a" * 32, entity=record,
                               created=True)
            )  # fmt: skip
    return out


def _plain(events: list[Event]) -> bytes:
    buf = bytearray()
    for event in events:
        _enc.encode_into(event, buf, -1)
        buf.extend(b"\n")
    return bytes(buf)


def _pair(without: Callable[[], object], with_: Callable[[], object]) -> tuple[float, float]:
    """Median seconds of each, runs interleaved so that a drifting machine load hits both."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(REPEATS):
        for fn, out in ((without, a), (with_, b)):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(a), statistics.median(b)


def test_checksum_cost(tmp_path: Path) -> None:
    events = _events()
    sealed = encode_events(events).splitlines(keepends=True)
    plain = _plain(events).splitlines(keepends=True)
    assert all(decode_line(x).checksummed for x in sealed[:100])
    assert not any(decode_line(x).checksummed for x in plain[:100])

    rows: list[tuple[str, float, float]] = []
    rows.append(("encode", *_pair(lambda: _plain(events), lambda: encode_events(events))))
    rows.append(
        (
            "decode",
            *_pair(
                lambda: [decode_line(x) for x in plain], lambda: [decode_line(x) for x in sealed]
            ),
        )
    )

    runs = iter(range(1_000_000))

    def writer_append() -> None:
        with StreamWriter(tmp_path / f"wal{next(runs)}", "bench", fsync="off") as writer:
            for start in range(0, N, 64):
                writer.append(events[start : start + 64])

    def plain_append() -> None:
        # The same writer, its encoder swapped for the one without a checksum.
        real = writer_module.encode_events
        writer_module.encode_events = _plain
        try:
            writer_append()
        finally:
            writer_module.encode_events = real

    rows.append(("append (fsync off)", *_pair(plain_append, writer_append)))

    print(f"\n\nPer-line CRC-32 (median of {REPEATS}, {N:,} events; ratio = with / without)")
    for name, without, with_ in rows:
        print(
            f"  {name:<20} without {N / without:>10,.0f} ev/s   with {N / with_:>10,.0f} ev/s"
            f"   ratio {with_ / without:.2f}x"
        )
