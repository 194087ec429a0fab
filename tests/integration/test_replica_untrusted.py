"""A hostile publication stops only the group it damages (ADR 0154): real files, real Kuzu,
the real follower in-process. The git and ``lcg follow`` cases are in
tests/e2e/test_hostile_publication.py.
"""

from __future__ import annotations

import os
import shutil
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lcg.events.guarded import ReadLimits
from lcg.events.layout import GENERATION_FILE, REMOVING_SUFFIX, segment_name
from lcg.extract.embedders import HashEmbedder
from lcg.replication import Follower, replica_config
from lcg.workspace import Workspace
from lcg.workspace.status import build_status
from replica_support import HASH, open_publisher, write_batch

GOOD, BAD = "good", "bad"
LIMITS = ReadLimits(max_segment_bytes=1 << 20, max_line_bytes=64 * 1024, max_sidecar_bytes=4096)


@pytest.fixture
def pub(tmp_path: Path) -> Iterator[Workspace]:
    ws = open_publisher(tmp_path / "pubws")
    write_batch(ws, GOOD, 2)
    write_batch(ws, BAD, 2)
    yield ws
    ws.close()


def _publication(pub: Workspace, root: Path) -> Path:
    """A plain directory copy of both groups' streams."""
    for group in (GOOD, BAD):
        shutil.copytree(
            pub.store.group_dir(group), root / group, ignore=shutil.ignore_patterns(".writer*")
        )
    return root


@contextmanager
def follower(workspace: Path, source: Path, limits: ReadLimits = LIMITS) -> Iterator[Follower]:
    """A replica workspace opened on ``source`` as a publication, and its follower."""
    ws = Workspace(replica_config(workspace, source, env=HASH), HashEmbedder(), publication=limits)
    try:
        yield Follower(ws, source_label=str(source))
    finally:
        ws.close()


def _next_segment(pub: Workspace, root: Path, group: str) -> Path:
    return root / group / segment_name((pub.projector.applied_seq(group) or 0) + 1)


def _assert_only_bad_stopped(f: Follower, pub: Workspace, match: str) -> None:
    statuses = f.sync()
    assert statuses[BAD].state == "stopped"
    assert statuses[BAD].reason is not None and match in statuses[BAD].reason, statuses[BAD]
    assert "the others go on" in statuses[BAD].reason or "stops" in statuses[BAD].reason
    assert statuses[GOOD].state == "following", statuses[GOOD].reason
    assert f.ws.digests(GOOD) == pub.digests(GOOD)


def test_a_huge_file_without_newlines_is_refused_reading_one_line_at_most(
    pub: Workspace, tmp_path: Path
) -> None:
    root = _publication(pub, tmp_path / "pubdir")
    with follower(tmp_path / "rws", root) as f:
        assert f.sync()[BAD].state == "following"
        # Within the segment limit, but one 900 KB "line": only 64 KB + a chunk may be held.
        with open(_next_segment(pub, root, BAD), "wb") as fh:
            fh.truncate(900 * 1024)
        tracemalloc.start()
        try:
            _assert_only_bad_stopped(f, pub, "longer than the 65,536 bytes a line may hold")
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 8 * 1024 * 1024, peak
        # knowledge_status reads the publication too: bounded, and the group's own entry.
        report = build_status(f.ws)
        assert "cannot be read" in (report.wal_groups[BAD].degraded_reason or "")
        assert report.wal_groups[GOOD].degraded_reason is None


def test_a_segment_over_the_default_limit_is_refused_without_reading_it(
    pub: Workspace, tmp_path: Path
) -> None:
    root = _publication(pub, tmp_path / "pubdir")
    with open(_next_segment(pub, root, BAD), "wb") as fh:
        fh.truncate(ReadLimits().max_segment_bytes + 1)  # sparse: costs no disk
    with follower(tmp_path / "rws", root, ReadLimits()) as f:
        _assert_only_bad_stopped(f, pub, "larger than the 268,435,456 bytes allowed")


def test_a_fifo_sidecar_and_a_symlinked_sidecar_stop_without_blocking(
    pub: Workspace, tmp_path: Path
) -> None:
    root = _publication(pub, tmp_path / "pubdir")
    sidecar = root / BAD / GENERATION_FILE
    sidecar.unlink()
    os.mkfifo(sidecar)
    with follower(tmp_path / "rws", root) as f:
        _assert_only_bad_stopped(f, pub, "a FIFO")
        sidecar.unlink()
        sidecar.symlink_to(root / GOOD / GENERATION_FILE)  # another group's, inside the root
        _assert_only_bad_stopped(f, pub, "is a symlink")
        # Republished as a real file: the group heals by itself.
        shutil.copyfile(pub.store.group_dir(BAD) / GENERATION_FILE, tmp_path / "gen")
        sidecar.unlink()
        shutil.copyfile(tmp_path / "gen", sidecar)
        assert f.sync()[BAD].state == "following"
        assert f.ws.digests(BAD) == pub.digests(BAD)


def test_a_huge_or_malformed_sidecar_stops_its_group(pub: Workspace, tmp_path: Path) -> None:
    root = _publication(pub, tmp_path / "pubdir")
    sidecar = root / BAD / GENERATION_FILE
    good = sidecar.read_bytes()
    with follower(tmp_path / "rws", root) as f:
        sidecar.write_bytes(good + b" " * 5000)
        _assert_only_bad_stopped(f, pub, "larger than the 4,096 bytes allowed")
        sidecar.write_bytes(b'{"generation": 7}')
        _assert_only_bad_stopped(f, pub, "is malformed")


def test_a_segment_replaced_by_a_link_while_the_replica_was_down_stops_it(
    pub: Workspace, tmp_path: Path
) -> None:
    root = _publication(pub, tmp_path / "pubdir")
    with follower(tmp_path / "rws", root) as f:
        assert f.sync()[BAD].state == "following"
    seg = sorted((root / BAD).glob("*.jsonl"))[0]
    shutil.move(seg, tmp_path / "aside.jsonl")
    seg.symlink_to(tmp_path / "aside.jsonl")  # the same bytes, now outside the publication
    with follower(tmp_path / "rws", root) as f:
        _assert_only_bad_stopped(f, pub, "is a symlink")


def test_names_never_reach_outside_the_root(pub: Workspace, tmp_path: Path) -> None:
    root = _publication(pub, tmp_path / "pubdir")
    # "%2E%2E" is the encoded name of the group id "..": a directory inside the root.
    shutil.copytree(root / GOOD, root / "%2E%2E")
    (root / "a%2fb").mkdir()  # lowercase hex: no group encodes to it
    (root / "a%2fb" / segment_name(0)).symlink_to("/dev/zero")
    (root / "\x01ctl").mkdir()
    (root / "README.md").write_text("a publication\n")  # the repository's own: ignored
    (root / BAD / "notes").mkdir()  # not a segment name: never read
    with follower(tmp_path / "rws", root) as f:
        statuses = f.sync()
        assert set(statuses) == {GOOD, BAD, ".."}
        assert f.ws.store.group_dir("..").resolve() == (root / "%2E%2E").resolve()
        assert statuses[GOOD].state == statuses[BAD].state == "following"
        assert set(f.scan.skipped) == {"a%2fb", "\\x01ctl"}
        assert f.scan.skipped_count == 2


def test_the_watcher_never_watches_through_a_link(pub: Workspace, tmp_path: Path) -> None:
    root = _publication(pub, tmp_path / "pubdir")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(root / BAD, elsewhere)
    (root / BAD).symlink_to(elsewhere, target_is_directory=True)
    with follower(tmp_path / "rws", root) as f:
        _assert_only_bad_stopped(f, pub, "is a symlink")
        watched = f.source.watched(f.groups())
        real = root.resolve()
        assert set(watched) == {real, real / GOOD}


def test_a_tombstone_named_entry_in_a_publication_is_never_removed(
    pub: Workspace, tmp_path: Path
) -> None:
    """A replica finishes only its own interrupted removals (ADR 0156): an entry of the
    publication named like a tombstone is the publisher's, and opening the replica leaves it
    (and the groups beside it) as they are."""
    root = _publication(pub, tmp_path / "pubdir")
    planted = root / f".{GOOD}.0123abcd{REMOVING_SUFFIX}"
    shutil.copytree(root / GOOD, planted)
    with follower(tmp_path / "rws", root) as f:
        assert f.sync()[GOOD].state == "following"
    assert planted.is_dir() and sorted(os.listdir(planted)) == sorted(os.listdir(root / GOOD))
