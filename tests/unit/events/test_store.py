"""``WalStore``: the streams of one WAL root, writers opened lazily and kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from lcg.events.codec import decode_line, encode_event
from lcg.events.layout import GENERATION_FILE
from lcg.events.model import EpisodeAdded
from lcg.events.store import WalStore

Episode = Callable[..., EpisodeAdded]


def test_store_appends_reads_and_reports(wal_root: Path, make_episode: Episode) -> None:
    store = WalStore(wal_root, fsync="always", max_events_per_file=2)
    try:
        assert store.groups() == []
        assert not store.has_writer("g")
        store.append("g", [make_episode(0), make_episode(1)])
        store.append("team a", [make_episode(0, group_id="team a")])
        store.append("g", [make_episode(2)])
        assert store.has_writer("g") and store.writer("g") is store.writer("g")
        assert store.groups() == ["g", "team a"]
        assert store.group_dir("team a") == wal_root / "team%20a"
        gen = store.generation("g")
        assert gen is not None and gen != store.generation("team a")
        assert [e.seq for e in store.reader("g").events()] == [0, 1, 2]
        bounds = store.bounds("g")
        assert (bounds.min_seq, bounds.max_seq, bounds.file_count) == (0, 2, 2)
        store.close_writer("g")
        assert not store.has_writer("g")
        assert store.generation("g") == gen  # from the sidecar once the writer is gone
        (wal_root / "g" / GENERATION_FILE).unlink()
        assert store.generation("g") == gen  # from the lines
        assert store.generation("none") is None
        store.close_writer("none")
    finally:
        store.close()
    # Closed: a new store reopens the same streams and continues.
    again = WalStore(wal_root, fsync="off")
    try:
        (e,) = again.append("g", [make_episode(3)])
        assert e.seq == 3 and e.gen == gen
    finally:
        again.close()


def test_reader_skips_other_generations_unless_asked(wal_root: Path, make_episode: Episode) -> None:
    store = WalStore(wal_root, fsync="off")
    store.append("g", [make_episode(0)])
    store.close()
    seg = wal_root / "g" / "000000000000.jsonl"
    first = decode_line(seg.read_bytes()).event
    assert first is not None
    other = msgspec.structs.replace(first, seq=1, gen="x" + first.gen)
    seg.write_bytes(seg.read_bytes() + encode_event(other))
    store = WalStore(wal_root, fsync="off")
    try:
        assert [e.seq for e in store.reader("g").events()] == [0]
        assert [e.seq for e in store.reader("g", check_generation=False).events()] == [0, 1]
    finally:
        store.close()
