"""``.wal-bounds.json``: a cache whose absence, staleness or corruption never changes an answer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lcg.events.bounds import Bounds, read_bounds
from lcg.events.layout import BOUNDS_FILE
from lcg.events.model import EpisodeAdded
from lcg.events.writer import StreamWriter

Episode = Callable[..., EpisodeAdded]


def _truth(gdir: Path) -> tuple[int | None, int | None, int, int]:
    b = read_bounds(gdir, write_cache=False)
    return b.min_seq, b.max_seq, b.file_count, b.byte_size


def _answer(b: Bounds) -> tuple[int | None, int | None, int, int]:
    return b.min_seq, b.max_seq, b.file_count, b.byte_size


def test_empty_and_missing_streams(gdir: Path) -> None:
    assert _answer(read_bounds(gdir)) == (None, None, 0, 0)
    gdir.mkdir()
    assert _answer(read_bounds(gdir)) == (None, None, 0, 0)


def test_cache_follows_appends_rotations_and_truncation(gdir: Path, make_episode: Episode) -> None:
    writer = StreamWriter(gdir.parent, "g", fsync="off", max_events_per_file=4)
    try:
        for i in range(11):
            writer.append([make_episode(i)])
            got = read_bounds(gdir)  # each call validates and rewrites the cache
            assert _answer(got) == _truth(gdir) == (0, i, i // 4 + 1, got.byte_size)
            assert (gdir / BOUNDS_FILE).is_file()
    finally:
        writer.close()
    # Shrink the last file (as quarantine does): the cached max must not be trusted.
    last = gdir / "000000000008.jsonl"
    last.write_bytes(last.read_bytes().splitlines(keepends=True)[0])
    assert _answer(read_bounds(gdir)) == _truth(gdir) == (0, 8, 3, _truth(gdir)[3])


@pytest.mark.parametrize(
    "cache",
    [
        b"",
        b"{not json",
        b"[]",
        b'{"min_seq": "zero", "max_seq": 3}',
        # A foreign (reference-format) manifest is a miss, not an answer.
        b'{"file_set_fingerprint": 1, "max_seq": 99, "min_seq": 0}',
    ],
)
def test_corrupt_or_foreign_cache_is_a_miss(
    gdir: Path, make_episode: Episode, cache: bytes
) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(i) for i in range(3)])
    (gdir / BOUNDS_FILE).write_bytes(cache)
    assert _answer(read_bounds(gdir)) == _truth(gdir) == (0, 2, 1, _truth(gdir)[3])


def test_stale_cache_for_another_file_set_is_recomputed(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off", max_events_per_file=2) as writer:
        writer.append([make_episode(i) for i in range(2)])
        read_bounds(gdir)
        writer.append([make_episode(2)])
    assert _answer(read_bounds(gdir)) == (0, 2, 2, _truth(gdir)[3])
    # Remove the first file (a trimmed stream): min moves.
    (gdir / "000000000000.jsonl").unlink()
    assert _answer(read_bounds(gdir)) == _truth(gdir) == (2, 2, 1, _truth(gdir)[3])


def test_read_only_directory_is_fine_without_cache(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(0)])
    assert _answer(read_bounds(gdir, write_cache=False))[:2] == (0, 0)
    assert not (gdir / BOUNDS_FILE).exists()


def test_a_cache_that_contradicts_itself_or_the_names_is_a_miss(
    gdir: Path, make_episode: Episode
) -> None:
    gdir.mkdir()
    forged = b'{"min_seq": 7, "max_seq": 99, "files": [], "file_count": 0, "byte_size": 0}'
    (gdir / BOUNDS_FILE).write_bytes(forged)
    assert _answer(read_bounds(gdir)) == (None, None, 0, 0)
    with StreamWriter(gdir.parent, "g", fsync="off", max_events_per_file=2) as writer:
        writer.append([make_episode(i) for i in range(2)])
        writer.append([make_episode(2)])
    good = read_bounds(gdir)
    size0 = (gdir / "000000000000.jsonl").stat().st_size
    size2 = (gdir / "000000000002.jsonl").stat().st_size
    files = f'[["000000000000.jsonl", {size0}], ["000000000002.jsonl", {size2}]]'
    for lo, hi in [(0, 1), (3, 2), (None, 2), (-1, 2)]:
        lie = (
            f'{{"min_seq": {"null" if lo is None else lo}, "max_seq": {hi}, "files": {files}, '
            f'"file_count": 2, "byte_size": {size0 + size2}}}'
        )
        (gdir / BOUNDS_FILE).write_text(lie)
        assert _answer(read_bounds(gdir)) == _answer(good) == (0, 2, 2, size0 + size2)
