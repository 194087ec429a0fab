"""Concurrency: many appenders share one writer; a second writer, anywhere, is refused."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lcg.errors import StreamLockedError
from lcg.events.codec import decode_line
from lcg.events.model import EpisodeAdded, Event
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.segments import list_segments
from lcg.events.writer import FsyncPolicy, StreamWriter

THREADS = 8
APPENDS = 40
#: A recorded time (events carry only times in this form, ADR 0150).
TS = "2024-05-01T12:00:00.000000Z"


@pytest.mark.parametrize("policy", ["always", "batch", "off"])
def test_eight_threads_get_contiguous_seqs_and_whole_lines(
    wal_root: Path, policy: FsyncPolicy
) -> None:
    results: dict[int, list[Event]] = {}
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    with StreamWriter(wal_root, "g", fsync=policy, max_events_per_file=37) as writer:

        def run(k: int) -> None:
            try:
                barrier.wait()
                mine: list[Event] = []
                for i in range(APPENDS):
                    chunk = [
                        EpisodeAdded(
                            group_id="g", uuid=f"{k}-{i}-{j}", name="n", content="y" * (k * 50),
                            created_at="2024-05-01T12:00:00.000000Z",
                        )
                        for j in range(1 + (i + k) % 3)
                    ]  # fmt: skip
                    mine.extend(writer.append(chunk))
                results[k] = mine
            except BaseException as exc:  # surfaced below: a thread must not fail silently
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    gdir = wal_root / "g"
    every = sorted((e for evs in results.values() for e in evs), key=lambda e: e.seq)
    assert [e.seq for e in every] == list(range(len(every)))
    # Each chunk got consecutive seqs, and each thread saw its own appends in order.
    for evs in results.values():
        assert [e.seq for e in evs] == sorted(e.seq for e in evs)
    # Whole lines only: every file ends on a newline and every line decodes.
    for seg in list_segments(gdir):
        data = seg.path.read_bytes()
        assert data.endswith(b"\n")
        for line in data.splitlines():
            assert decode_line(line).event is not None
    report = ReadReport()
    assert list(StreamReader(gdir).events(report=report)) == every
    assert report.bad_lines == 0 and not report.torn_tail


SECOND_WRITER = """
import sys
from pathlib import Path
from lcg.errors import StreamLockedError
from lcg.events.writer import StreamWriter
try:
    StreamWriter(Path(sys.argv[1]), "g", fsync="off").close()
except StreamLockedError as exc:
    print(f"locked: {exc}")
    sys.exit(3)
print("opened")
"""


def _second_process(wal_root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SECOND_WRITER, str(wal_root)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_second_process_gets_a_clear_error(wal_root: Path) -> None:
    with StreamWriter(wal_root, "g", fsync="off") as writer:
        writer.append([EpisodeAdded(group_id="g", uuid="u", name="n", content="c", created_at=TS)])
        done = _second_process(wal_root)
        assert done.returncode == 3, done.stderr
        assert "locked: group 'g' already has a writer" in done.stdout
        assert ".writer.lock is held" in done.stdout
        with pytest.raises(StreamLockedError):
            StreamWriter(wal_root, "g", fsync="off")
    # Released with the writer: now the other process may open it.
    done = _second_process(wal_root)
    assert (done.returncode, done.stdout.strip()) == (0, "opened")
