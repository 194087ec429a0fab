"""The graph projection (real Kuzu) on a full disk (issue 11 item 6; ADR 0081).

Each case runs in a child process, because what it guards against is Kuzu 0.11.3 aborting
the whole process in ``close`` after a failed write:

* with the room reservation, a full disk makes the graph refuse to write
  (``ProjectionIOError``, Kuzu untouched), reads still answer, and once space is back the
  same ``GraphProjection`` writes again;
* without it (the reservation switched off, as if another process filled the disk between
  reservation and write), Kuzu fails a write; the projection refuses every later write
  with the remedy, and ``close`` still lets the process exit 0. The next process reopens the
  database with every transaction committed before the failure.

Mounting a tmpfs needs root (CI runs the suite as root); elsewhere these are skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _tmpfs import small_disk
from lcg.projections.graph import GraphProjection

CHILD = r"""
import json, sys
from pathlib import Path

import msgspec

import lcg.projections.graph.projection as graph_module
from lcg.errors import ProjectionIOError
from lcg.events.model import EpisodeAdded

sys.path.insert(0, sys.argv[3])
from _tmpfs import fill

mode, mnt = sys.argv[1], Path(sys.argv[2])
T0 = "2024-05-01T12:00:00.000000Z"


def event(i):
    ep = EpisodeAdded(group_id="g", uuid=f"ep{i}", name=f"ep{i}", source_description="d",
                      content="x" * 400, created_at=T0, valid_at=T0)
    return msgspec.structs.replace(ep, seq=i)


out = {"refused": [], "applied": []}
if mode == "unreserved":
    graph_module.reserve_room = lambda path: None
graph = graph_module.GraphProjection(mnt / "db")
seq = 0
for _ in range(10):
    graph.apply("g", "gen1", [event(seq)])
    seq += 1
fill(mnt / "filler")
for _ in range(300):
    try:
        graph.apply("g", "gen1", [event(seq)])
        out["applied"].append(seq)
        seq += 1
    except ProjectionIOError as exc:
        out["refused"].append(str(exc))
        if mode == "reserved" or graph.io_failure is not None:
            break
out["io_failure"] = graph.io_failure
out["position_while_full"] = graph.position("g").seq
(mnt / "filler").unlink()
try:
    graph.apply("g", "gen1", [event(seq)])
    out["after_space"] = "applied"
    seq += 1
except ProjectionIOError as exc:
    out["after_space"] = str(exc)
out["position"] = graph.position("g").seq
graph.close()
print(json.dumps(out), flush=True)
"""


def _run_child(mode: str, mnt: Path) -> dict[str, object]:
    tests = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(mnt), tests],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    for abort in ("double free", "corrupted", "invalid pointer", "Fatal Python error"):
        assert abort not in done.stderr, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_full_disk_makes_the_graph_lag_and_the_same_projection_recovers() -> None:
    with small_disk() as (mnt, _):
        out = _run_child("reserved", mnt)
        refused = out["refused"]
        assert isinstance(refused, list) and refused, out
        assert "disk full writing" in refused[0] and "graph.kuzu" in refused[0]
        assert out["io_failure"] is None  # Kuzu never saw the full disk
        assert out["after_space"] == "applied", out
        assert out["position"] == out["position_while_full"] + 1  # type: ignore[operator]
        reopened = GraphProjection(mnt / "db")
        try:
            assert reopened.position("g").seq == out["position"]
        finally:
            reopened.close()


def test_a_kuzu_write_that_failed_never_aborts_the_process() -> None:
    with small_disk() as (mnt, _):
        out = _run_child("unreserved", mnt)
        failure = out["io_failure"]
        assert isinstance(failure, str) and "restart lcg" in failure, out
        # Poisoned for good in this process, even with space back; no abort on close.
        assert isinstance(out["after_space"], str) and "restart lcg" in out["after_space"]
        reopened = GraphProjection(mnt / "db")
        try:
            # The reopened graph is consistent: its position names exactly the events it
            # holds (Kuzu may lose its last commit before the failure; the projection then
            # catches up from the stream, which never depended on it).
            position = reopened.position("g").seq
            assert isinstance(position, int) and 10 <= position <= out["position_while_full"]  # type: ignore[operator]
            held = reopened.query("MATCH (e:Episodic) RETURN count(e)")[0][0]
            assert held == position + 1
        finally:
            reopened.close()
