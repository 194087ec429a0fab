"""The follower stops a group on a defect rather than guess, and resumes once it is gone."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from lcg.events.codec import CHECKSUM_FIELD
from lcg.events.layout import GENERATION_FILE
from lcg.workspace import Workspace

# Test helpers are imported as plain modules from their folders (as the other suites do).
from replica_support import open_publisher, replica, write_batch

G = "team"


def _publication(pub: Workspace, root: Path) -> Path:
    """A plain directory copy of the publisher's stream (no git needed for these defects)."""
    target = root / G
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(pub.store.group_dir(G), target, ignore=shutil.ignore_patterns(".writer*"))
    return target


def _lines(gdir: Path) -> list[bytes]:
    out: list[bytes] = []
    for seg in sorted(gdir.glob("*.jsonl")):
        out.extend(seg.read_bytes().splitlines(True))
    return out


@pytest.fixture
def pub(tmp_path: Path) -> Iterator[Workspace]:
    ws = open_publisher(tmp_path / "pubws")
    write_batch(ws, G, 4)
    yield ws
    ws.close()


def test_seq_gap_stops_then_heals(pub: Workspace, tmp_path: Path) -> None:
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    seg = sorted(gdir.glob("*.jsonl"))[0]
    lines = seg.read_bytes().splitlines(True)
    # Drop one line in the middle: seq 5 is missing.
    seg.write_bytes(b"".join(lines[:5] + lines[6:]))
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "seq gap" in status.reason
        assert "seq 6 where 5 was expected" in status.reason
        assert status.applied_seq == 4  # the verified prefix is applied
        last = len(lines) - 1
        assert status.source_max_seq == last and status.lag_events == last - 4
        assert status.lag_seconds >= 0.0
        # The publisher republishes the whole file: the group resumes by itself.
        seg.write_bytes(b"".join(lines))
        healed = follower.sync_group(G)
        assert healed.state == "following", healed.reason
        assert follower.ws.digests(G) == pub.digests(G)


def test_seq_regression_in_new_lines_stops(pub: Workspace, tmp_path: Path) -> None:
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    seg = sorted(gdir.glob("*.jsonl"))[-1]
    with replica(tmp_path / "rws", root) as follower:
        assert follower.sync_group(G).state == "following"
        applied = follower.replica_status(G).applied_seq
        # A line already applied shows up again at the end (an old commit merged back?).
        with open(seg, "ab") as fh:
            fh.write(_lines(gdir)[2])
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "seq regression" in status.reason
        assert status.applied_seq == applied


def test_publication_going_backwards_stops(pub: Workspace, tmp_path: Path) -> None:
    root = tmp_path / "pubdir"
    _publication(pub, root)
    with replica(tmp_path / "rws", root) as follower:
        assert follower.sync_group(G).state == "following"
    # Restarted on an older copy of the same generation (fewer lines).
    gdir = _publication(pub, root)
    seg = sorted(gdir.glob("*.jsonl"))[-1]
    seg.write_bytes(b"".join(seg.read_bytes().splitlines(True)[:3]))
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        # The marks saved by the last run see the shrunk file ...
        assert status.reason is not None and "shrank" in status.reason
    # ... and without them the applied position still shows the stream went backwards.
    (tmp_path / "rws" / ".lcg" / "replica" / f"{G}.json").unlink()
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "went backwards" in status.reason


def test_rewritten_file_in_the_same_generation_stops(pub: Workspace, tmp_path: Path) -> None:
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    seg = sorted(gdir.glob("*.jsonl"))[0]
    with replica(tmp_path / "rws", root) as follower:
        assert follower.sync_group(G).state == "following"
        data = seg.read_bytes()
        # Same size, one byte of an applied line changed.
        i = data.index(b"Entity 0")
        seg.write_bytes(data[:i] + b"Entity X" + data[i + 8 :])
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "rewritten in place" in status.reason
        # A shrunk file is a regression too.
        seg.write_bytes(data[: len(data) // 2])
        status = follower.sync_group(G)
        assert status.reason is not None and "shrank" in status.reason
        # Put back as it was: the group follows again.
        seg.write_bytes(data)
        assert follower.sync_group(G).state == "following"


def test_vanished_segment_stops(pub: Workspace, tmp_path: Path) -> None:
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    with replica(tmp_path / "rws", root) as follower:
        assert follower.sync_group(G).state == "following"
        seg = sorted(gdir.glob("*.jsonl"))[0]
        seg.rename(tmp_path / "aside.jsonl")
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "disappeared" in status.reason


def test_unknown_generation_after_a_position_is_refused_with_the_remedy(
    pub: Workspace, tmp_path: Path
) -> None:
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    with replica(tmp_path / "rws", root) as follower:
        assert follower.sync_group(G).state == "following"
    # The stream is replaced by lines that name no generation and the sidecar is gone.
    for seg in gdir.glob("*.jsonl"):
        seg.unlink()
    (gdir / GENERATION_FILE).unlink()
    (gdir / "000000000000.jsonl").write_bytes(b'{"seq": 0, "legacy": true}\n')
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None
        assert status.reason.startswith("WAL stream generation unknown")
        assert "republish" in status.reason and "never a *.jsonl copy" in status.reason


def test_partial_middle_segment_waits(tmp_path: Path) -> None:
    pub = open_publisher(tmp_path / "small", LCG_WAL_MAX_EVENTS_PER_FILE="5")
    write_batch(pub, G, 3)
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    segs = sorted(gdir.glob("*.jsonl"))
    assert len(segs) >= 2
    whole = segs[0].read_bytes()
    segs[0].write_bytes(whole[: len(whole) - 7])  # a pull caught half-way through a file
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "partial line" in status.reason
        segs[0].write_bytes(whole)
        status = follower.sync_group(G)
        assert status.state == "following", status.reason
        assert follower.ws.digests(G) == pub.digests(G)
    pub.close()


def test_unreadable_line_stops_rather_than_skip(pub: Workspace, tmp_path: Path) -> None:
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    seg = sorted(gdir.glob("*.jsonl"))[-1]
    gen = pub.store.generation(G)
    nxt = len(_lines(gdir))
    with open(seg, "ab") as fh:
        fh.write(b'{"type":"FromTheFuture","v":1,"seq":%d,"gen":"%s"}\n' % (nxt, gen.encode()))
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "cannot be applied" in status.reason
        assert status.applied_seq == nxt - 1


def _stripped_of_its_checksum(line: bytes, seq: int) -> bytes:
    """``line`` renumbered ``seq`` and written as before checksums existed (no ``crc32``)."""
    raw = msgspec.json.decode(line)
    del raw[CHECKSUM_FIELD]
    raw["seq"] = seq
    return msgspec.json.encode(raw) + b"\n"


def test_a_line_without_checksum_after_checksummed_ones_stops(
    pub: Workspace, tmp_path: Path
) -> None:
    """The follower runs the same line check as ``lcg wal verify``: only lines written before
    checksums existed may lack one, so such a line after checksummed ones was rewritten."""
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    seg = sorted(gdir.glob("*.jsonl"))[-1]
    lines = _lines(gdir)
    nxt = len(lines)
    with open(seg, "ab") as fh:
        fh.write(_stripped_of_its_checksum(lines[-1], nxt))
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "cannot be applied" in status.reason
        assert "no checksum after lines that carry one" in status.reason
        assert status.applied_seq == nxt - 1


def test_a_restarted_follower_still_knows_checksums_were_seen(
    pub: Workspace, tmp_path: Path
) -> None:
    """The saved verification marks carry the line check's state: a restarted replica that
    resumes mid-stream refuses a checksum-less line as the first run would have."""
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    lines = _lines(gdir)
    with replica(tmp_path / "rws", root) as follower:
        assert follower.sync_group(G).state == "following"
    seg = sorted(gdir.glob("*.jsonl"))[-1]
    with open(seg, "ab") as fh:
        fh.write(_stripped_of_its_checksum(lines[-1], len(lines)))
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "no checksum after lines" in status.reason
        assert status.applied_seq == len(lines) - 1


def test_only_stream_files_wake_the_follower(pub: Workspace, tmp_path: Path) -> None:
    root = tmp_path / "pubdir"
    _publication(pub, root)
    with replica(tmp_path / "rws", root) as follower:
        real = root.resolve()
        assert follower.source.relevant(str(real / G / "000000000000.jsonl"))
        assert follower.source.relevant(str(real / G / GENERATION_FILE))
        assert follower.source.relevant(str(real / "newgroup"))
        assert follower.source.relevant(str(follower.source.root / G / "000000000042.jsonl"))
        for ignored in (
            real / ".git" / "index",
            real / G / ".wal-bounds.json",
            real / G / ".wal-bounds.1234.tmp",
            real / G / "000000000000.jsonl.ab12cd34.tmp",
            real / G / ".checkpoints" / "m" / "g1.create.json",
            real / G / ".gitignore",
            tmp_path / "elsewhere.jsonl",
        ):
            assert not follower.source.relevant(str(ignored)), ignored


def test_a_rewrite_while_the_replica_was_down_is_caught(pub: Workspace, tmp_path: Path) -> None:
    root = tmp_path / "pubdir"
    gdir = _publication(pub, root)
    with replica(tmp_path / "rws", root) as follower:
        assert follower.sync_group(G).state == "following"
    seg = sorted(gdir.glob("*.jsonl"))[0]
    data = seg.read_bytes()
    # A normal restart after more events: no false alarm, the new events apply.
    write_batch(pub, G, 1, start=4)
    gdir = _publication(pub, root)
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "following", status.reason
        assert status.applied_seq == pub.projector.applied_seq(G)
        assert follower.ws.digests(G) == pub.digests(G)
    # Now an applied byte changes while the replica is down (same size, same generation).
    data = seg.read_bytes()
    i = data.index(b"Entity 1")
    seg.write_bytes(data[:i] + b"Entity Z" + data[i + 8 :])
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "rewritten in place" in status.reason
    seg.unlink()
    with replica(tmp_path / "rws", root) as follower:
        status = follower.sync_group(G)
        assert status.state == "stopped"
        assert status.reason is not None and "disappeared" in status.reason
