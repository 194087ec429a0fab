"""Kill -9 during a replay, reopen: positions and digests are consistent, and a second replay
finishes the job with the same digests as an uninterrupted one."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from lcg.config import Config
from lcg.events.model import EntityAsserted, EntityRecord, EpisodeAdded, Event
from lcg.events.store import WalStore
from lcg.extract.embedders import HashEmbedder
from lcg.workspace import Workspace

N = 1500

CHILD = """
import sys
from pathlib import Path
from lcg import telemetry
from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.workspace import Workspace
telemetry.set_sink(None, enabled=False)
env = {"LCG_EMBEDDER": "hash", "LCG_REPLAY_BATCH_SIZE": "16"}
cfg = Config.from_env(Path(sys.argv[1]), env=env)
ws = Workspace.open(cfg, HashEmbedder(), catch_up=False)
def progress(p):
    print(p.last_seq, flush=True)
ws.projector.rebuild("big", force_clear=True, progress=progress)
ws.close()
print("done", flush=True)
"""


def _write_stream(root: Path) -> None:
    store = WalStore(root / ".lcg" / "wal", fsync="off", max_events_per_file=1000)
    batch: list[Event] = []
    for i in range(N):
        if i % 3 == 0:
            batch.append(
                EpisodeAdded(
                    group_id="big",
                    uuid=f"ep-{i:06d}",
                    name=f"c{i}",
                    content=f"episode {i} text",
                    created_at="2024-01-01T00:00:00.000000Z",
                )
            )
        else:
            batch.append(
                EntityAsserted(
                    group_id="big",
                    entity=EntityRecord(
                        uuid=f"en-{i:06d}",
                        name=f"entity {i}",
                        labels=["Entity"],
                        summary=f"summary {i % 97}",
                        created_at="2024-01-01T00:00:00.000000Z",
                    ),
                    created=True,
                )
            )
        if len(batch) == 500:
            store.append("big", batch)
            batch = []
    if batch:
        store.append("big", batch)
    store.close()


def test_kill_during_replay_then_replay_again(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    _write_stream(reference)
    cfg_ref = Config.from_env(reference, env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(cfg_ref, HashEmbedder()) as ws:
        expected = ws.digests("big")

    victim = tmp_path / "victim"
    shutil.copytree(reference / ".lcg" / "wal", victim / ".lcg" / "wal")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(victim)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    seen = -1
    deadline = time.monotonic() + 120
    while seen < N // 3 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.strip().isdigit():
            seen = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert 0 <= seen < N - 1, "the replay was not interrupted mid-way"

    cfg = Config.from_env(victim, env={"LCG_EMBEDDER": "hash"})
    ws = Workspace(cfg, HashEmbedder())
    try:
        positions = ws.projector.positions("big")
        graph_seq = positions["graph"].seq
        # A rebuild of an empty group loads the graph in one transaction: after the kill it is
        # either wholly absent or (incremental path) at a committed batch boundary.
        assert graph_seq is None or graph_seq >= seen
        for pos in positions.values():
            assert pos.generation in (None, ws.store.generation("big"))
            assert pos.seq is None or pos.seq <= N - 1
        ws.catch_up()
        assert ws.digests("big") == expected
        assert all(p.seq == N - 1 for p in ws.projector.positions("big").values())
    finally:
        ws.close()
