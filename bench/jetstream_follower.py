"""One JetStream follower in a process of its own, for ``bench/test_jetstream_bench.py``.

``python bench/jetstream_follower.py URL WORKDIR GROUP COUNT MODE OUT`` follows ``GROUP`` at
``URL`` until it holds seq ``COUNT - 1``, then writes ``{seq: wall-clock time}`` to ``OUT``
(JSON) and exits. It prints ``ready`` once its consumer is connected. ``MODE``:

* ``full`` - what ``lcg follow nats://…`` runs, in process: the ``JetStreamPuller`` mirrors
  checked lines into the replica's ``.lcg``, the ``Follower`` applies them to real Kuzu, BM25
  and hnswlib projections (hash embedder); the time of a seq is the end of the follower pass
  that applied it (``Follower.on_sync``), so a lag is never understated;
* ``mirror`` - the puller alone (every line checked and fsynced into the mirror, nothing
  applied): the time of a seq is when its batch was fsynced.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from lcg import telemetry
from lcg.events.guarded import ReadLimits
from lcg.extract.embedders import HashEmbedder
from lcg.replication import Follower, ReplicaStatus
from lcg.replication.jetstream import JetStreamTarget
from lcg.replication.jetstream_follow import JetStreamPuller, MirrorSource, mirror_root
from lcg.replication.service import replica_config
from lcg.workspace import Workspace

HASH = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"}


class _TimedPuller(JetStreamPuller):
    """The puller, noting the wall-clock time at which each seq became durable in the mirror."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.durable_at: dict[int, float] = {}

    def _flush(self, group, lines, first, stream_seq):  # type: ignore[no-untyped-def]
        super()._flush(group, lines, first, stream_seq)
        now = time.time()
        for seq in range(first, first + len(lines)):
            self.durable_at[seq] = now


def main(url: str, workdir: Path, group: str, count: int, mode: str, out: Path) -> None:
    """Follow until seq ``count - 1`` is held, then write the per-seq times to ``out``."""
    telemetry.set_sink(None, enabled=False)
    root = mirror_root(workdir.resolve(), JetStreamTarget.parse(url))
    root.mkdir(parents=True, exist_ok=True)
    puller = _TimedPuller(url, root, [group])
    done = threading.Event()
    applied_at: dict[int, float] = {}
    ws: Workspace | None = None
    follower: Follower | None = None
    if mode == "full":
        ws = Workspace(
            replica_config(workdir, root, env=HASH), HashEmbedder(), publication=ReadLimits()
        )
        follower = Follower(ws, [group], source=MirrorSource(puller, limits=ws.store.limits))
        last = [-1]

        def on_sync(statuses: dict[str, ReplicaStatus]) -> None:
            status = statuses.get(group)
            if status is None or status.applied_seq is None:
                return
            now = time.time()
            for seq in range(last[0] + 1, status.applied_seq + 1):
                applied_at[seq] = now
            last[0] = max(last[0], status.applied_seq)
            if last[0] >= count - 1:
                done.set()

        follower.on_sync = on_sync
    puller.start()
    while not puller.connected:
        time.sleep(0.01)
    if follower is not None:
        # The step and rescan `lcg follow` uses (replication.service defaults).
        follower.start(step_ms=50, rescan_ms=2000)
    print("ready", flush=True)
    try:
        while not done.is_set():
            if mode == "mirror" and len(puller.durable_at) >= count:
                break
            time.sleep(0.01)
    finally:
        if follower is not None:
            follower.stop()
        puller.stop()
        if ws is not None:
            ws.close()
    times = puller.durable_at if mode == "mirror" else applied_at
    out.write_text(json.dumps({str(k): v for k, v in times.items()}))


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], Path(a[1]), a[2], int(a[3]), a[4], Path(a[5]))
