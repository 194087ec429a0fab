"""Kill -9 a writer at random moments; every acknowledged event survives, no torn line is read.

A child process runs three threads appending to one group with ``fsync=always`` (so acks go
through group commit) and reports each acknowledged seq on a pipe the moment ``append``
returns. Some chunks are a few hundred kilobytes, so a kill can land inside a multi-page write
and leave a torn tail (rarely: the unit tests and ``wal-fixtures/torn-tail`` pin that path). The
parent kills the child with SIGKILL after a random number of acks,
then checks the stream and opens a writer of its own that must continue at the next seq.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from lcg.events.layout import QUARANTINE_DIR
from lcg.events.model import EpisodeAdded
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.writer import StreamWriter

KILLS = 50
#: A recorded time (events carry only times in this form, ADR 0150).
TS = "2024-05-01T12:00:00.000000Z"

CHILD = r"""
import os, random, sys, threading
from pathlib import Path
from lcg import telemetry
from lcg.events.model import EpisodeAdded
from lcg.events.writer import StreamWriter

telemetry.set_sink(None, enabled=False)
root, seed = Path(sys.argv[1]), int(sys.argv[2])
writer = StreamWriter(root, "g", fsync="always", max_events_per_file=40,
                      max_bytes_per_file=1 << 20)
os.write(1, b"ready\n")

def run(k):
    rng = random.Random(seed * 10 + k)
    while True:
        size = 300_000 if rng.random() < 0.05 else rng.randint(10, 2000)
        chunk = [EpisodeAdded(group_id="g", uuid=f"{seed}-{k}-{i}", name="n",
                              content="x" * size, created_at="2024-05-01T12:00:00.000000Z")
                 for i in range(rng.randint(1, 3))]
        stamped = writer.append(chunk)
        # One write per ack, under PIPE_BUF: lines from the threads never interleave.
        os.write(1, b"".join(b"%d\n" % e.seq for e in stamped))

threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def _check_stream(gdir: Path, acked: set[int]) -> tuple[int, bool]:
    report = ReadReport()
    seqs = [e.seq for e in StreamReader(gdir).events(report=report)]
    assert seqs == list(range(len(seqs))), "seqs must be contiguous from 0"
    assert report.bad_lines == 0 and report.seq_gaps == 0 and report.seq_regressions == 0
    missing = acked - set(seqs)
    assert not missing, f"acknowledged seqs lost: {sorted(missing)[:10]}"
    return len(seqs), report.torn_tail


def test_sigkill_never_loses_an_acknowledged_event(tmp_path: Path) -> None:
    rng = random.Random(20240501)
    root = tmp_path / "wal"
    gdir = root / "g"
    acked: set[int] = set()
    torn_seen = 0
    env = {**os.environ, "LCG_TELEMETRY": "off"}
    for kill in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root), str(kill)],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        # Kill after a random number of acks: sometimes at once, sometimes well into the run.
        target = rng.choice([0, 1, rng.randint(2, 10), rng.randint(10, 30)])
        got = 0
        while got < target:
            line = child.stdout.readline()
            assert line, "the child died on its own"
            acked.add(int(line))
            got += 1
        child.send_signal(signal.SIGKILL)
        # Acks written before the kill are acknowledgements too.
        acked.update(int(x) for x in child.stdout.read().split())
        child.stdout.close()
        assert child.wait() == -signal.SIGKILL

        count, torn = _check_stream(gdir, acked)
        torn_seen += torn
        # A new writer continues at the next seq (cutting any torn tail first).
        with StreamWriter(root, "g", fsync="always") as writer:
            assert writer.next_seq == count
            (e,) = writer.append(
                [EpisodeAdded(group_id="g", uuid=f"p{kill}", name="n", content="c", created_at=TS)]
            )
            assert e.seq == count
        acked.add(count)
        assert _check_stream(gdir, acked) == (count + 1, False)

    quarantined = list((gdir / QUARANTINE_DIR).glob("*.torn")) if torn_seen else []
    assert len(quarantined) == torn_seen
    assert len(acked) > KILLS
