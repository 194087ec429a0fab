"""The guarded open (ADR 0154): no symlink, regular files only, a FIFO never blocks, bounded."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from lcg.events.guarded import UnsafeFileError, check_real_dir, open_regular, read_small


@pytest.fixture
def gdir(tmp_path: Path) -> Path:
    d = tmp_path / "wal" / "g"
    d.mkdir(parents=True)
    return d


def test_a_regular_file_opens_and_a_hard_link_is_read_bounded(gdir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"x" * 100)
    os.link(outside, gdir / "000000000000.jsonl")
    with open_regular(gdir / "000000000000.jsonl", max_bytes=100) as fh:
        assert fh.read() == b"x" * 100
    with pytest.raises(UnsafeFileError, match="100 bytes, larger than the 99 bytes allowed"):
        open_regular(gdir / "000000000000.jsonl", max_bytes=99)


def test_a_symlinked_file_is_refused_naming_its_target(gdir: Path) -> None:
    (gdir / "000000000000.jsonl").symlink_to("/dev/zero")
    with pytest.raises(UnsafeFileError, match=r"is a symlink \(to /dev/zero\)"):
        open_regular(gdir / "000000000000.jsonl")
    assert read_small(gdir / "missing.json", 10) is None


def test_a_file_in_a_symlinked_directory_is_refused(gdir: Path, tmp_path: Path) -> None:
    (gdir / "000000000000.jsonl").write_bytes(b"{}\n")
    link = tmp_path / "wal" / "linked"
    link.symlink_to(gdir, target_is_directory=True)
    with pytest.raises(UnsafeFileError, match="linked is a symlink"):
        open_regular(link / "000000000000.jsonl")
    with pytest.raises(UnsafeFileError, match="is a symlink"):
        check_real_dir(link)
    check_real_dir(gdir)
    check_real_dir(tmp_path / "absent")  # missing passes: the caller decides


def test_the_stream_root_may_be_reached_through_a_link(gdir: Path, tmp_path: Path) -> None:
    (gdir / "000000000000.jsonl").write_bytes(b"{}\n")
    root_link = tmp_path / "root-link"
    root_link.symlink_to(gdir.parent, target_is_directory=True)
    with open_regular(root_link / "g" / "000000000000.jsonl") as fh:
        assert fh.read() == b"{}\n"


def test_a_fifo_neither_blocks_nor_opens(gdir: Path) -> None:
    os.mkfifo(gdir / "000000000000.jsonl")
    # No writer: a plain open() would block here for good.
    with pytest.raises(UnsafeFileError, match=r"not a regular file \(a FIFO\)"):
        open_regular(gdir / "000000000000.jsonl")
    with pytest.raises(UnsafeFileError, match="a FIFO"):
        read_small(gdir / "000000000000.jsonl", 4096)


def test_a_device_a_directory_and_a_socket_are_refused(gdir: Path) -> None:
    with pytest.raises(UnsafeFileError, match="a character device"):
        open_regular(Path("/dev/zero"))
    (gdir / "sub.jsonl").mkdir()
    with pytest.raises(UnsafeFileError, match="a directory"):
        open_regular(gdir / "sub.jsonl")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(gdir / "s.jsonl"))
        with pytest.raises(UnsafeFileError, match="a socket"):
            open_regular(gdir / "s.jsonl")
    finally:
        sock.close()


def test_read_small_reads_at_most_its_limit(gdir: Path) -> None:
    (gdir / "side.json").write_bytes(b"a" * 10)
    assert read_small(gdir / "side.json", 10) == b"a" * 10
    with pytest.raises(UnsafeFileError, match="larger than the 9 bytes allowed"):
        read_small(gdir / "side.json", 9)
