"""Kill -9 ``lcg dump`` after it started writing: no target appears, so nothing that looks like
a valid stream is left (issue 11 item 7, ADR 0077); the next dump to the same target sweeps the
dead one's temporary directory and succeeds."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import _service_fixtures as sf
from _service_fixtures import LCG, serve_env
from lcg.config import Config
from lcg.events.model import EntityAsserted, EntityRecord, Event
from lcg.events.store import WalStore
from lcg.extract.embedders import HashEmbedder
from lcg.workspace import Workspace

GROUPS = 4
PER_GROUP = 2500


def _workspace(root: Path) -> None:
    store = WalStore(root / ".lcg" / "wal", fsync="off")
    for g in range(GROUPS):
        batch: list[Event] = [
            EntityAsserted(
                group_id=f"g{g}",
                entity=EntityRecord(
                    uuid=f"en-{g}-{i:06d}",
                    name=f"entity {g}/{i}",
                    labels=["Entity"],
                    summary=f"summary of entity {i} in group {g}",
                    created_at="2024-01-01T00:00:00.000000Z",
                ),
                created=True,
            )
            for i in range(PER_GROUP)
        ]
        for start in range(0, len(batch), 500):
            store.append(f"g{g}", batch[start : start + 500])
    store.close()
    # Caught up here, so the dump process only dumps.
    cfg = Config.from_env(root, env={"LCG_EMBEDDER": "hash"})
    Workspace.open(cfg, HashEmbedder()).close()


def _written(tmp: Path) -> bool:
    return any(p.stat().st_size > 0 for p in tmp.glob("*/*.jsonl"))


def test_a_killed_dump_leaves_no_target(tmp_path: Path, lcg_main: sf.LcgMain) -> None:
    _workspace(tmp_path)
    target = tmp_path / "out" / "compacted"
    proc = subprocess.Popen(
        [str(LCG), "-C", str(tmp_path), "dump", "--to", str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=serve_env(),
        cwd=str(tmp_path),
    )
    tmp = target.parent / f".{target.name}.dump-{proc.pid}.tmp"
    deadline = time.monotonic() + 120
    try:
        # Kill it once it has written lines into its temporary directory.
        while not (tmp.is_dir() and _written(tmp)):
            if proc.poll() is not None:
                pytest.fail(f"the dump ended ({proc.returncode}) before it could be killed")
            assert time.monotonic() < deadline, "the dump never started writing"
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    assert tmp.is_dir() and _written(tmp)  # the partial dump exists, but not as the target
    assert not target.exists()

    checked = lcg_main(tmp_path, "wal", "verify", env={"LCG_WAL_DIR": str(target)})
    assert ": ok" not in checked.stdout

    # The next dump to the same target removes the dead one's leftovers and completes.
    done = lcg_main(tmp_path, "dump", "--to", str(target))
    assert done.returncode == 0, done.stderr
    assert not tmp.exists()
    checked = lcg_main(tmp_path, "wal", "verify", env={"LCG_WAL_DIR": str(target)})
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(": ok") == GROUPS
