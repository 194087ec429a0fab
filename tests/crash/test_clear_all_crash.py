"""SIGKILL ``knowledge_clear_all`` at its file-system steps: each stream is whole or absent.

``shutil.rmtree`` deletes a stream file by file in directory order, so a kill in the middle
left a stream with a hole (issue 23 item 8). A child process opens a real workspace (real
Kuzu, real files) and runs ``clear_all``; a first run lists every unlink, rmdir and rename it
makes, then one run per chosen step SIGKILLs itself just before it: every rename, and the
first data file deleted in each directory (where ``rmtree`` made its holes). After each kill
every stream (and every group's vector snapshot) is byte-for-byte what it was or gone, and
the next open sweeps the tombstones the kill left (ADR 0156).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from lcg.config import Config
from lcg.events.layout import REMOVING_SUFFIX
from lcg.events.model import EntityAsserted, EntityRecord
from lcg.events.store import WalStore
from lcg.extract.embedders import HashEmbedder
from lcg.workspace import Workspace

#: Events per group; one per segment, so ``alpha`` has a middle segment to lose.
GROUPS = {"alpha": 3, "beta": 1}
ENV = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"}

_CHILD = """
import json, os, signal, sys
from pathlib import Path
from lcg.config import Config
from lcg.ingest.deletion import clear_all
from lcg.workspace import Workspace

ws = Workspace.open(Config.from_env(Path(sys.argv[1]), env={"LCG_EMBEDDER": "hash"}))
kill_at, steps = int(sys.argv[2]), []

def counted(name, fn):
    def call(*args, **kwargs):
        steps.append([name, *(os.fsdecode(a) for a in args if isinstance(a, (str, os.PathLike)))])
        if len(steps) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)
    return call

for name in ("unlink", "remove", "rmdir", "rename", "replace"):
    setattr(os, name, counted(name, getattr(os, name)))
clear_all(ws, confirm=True, preserve_wal=False)
print(json.dumps(steps))
"""


def _template(root: Path) -> None:
    store = WalStore(root / ".lcg" / "wal", fsync="off", max_events_per_file=1)
    for group_id, n in GROUPS.items():
        for i in range(n):
            record = EntityRecord(
                uuid=f"en-{group_id}-{i}",
                name=f"{group_id} entity {i}",
                labels=["Entity"],
                summary=f"entity {i} of {group_id}",
                created_at="2024-01-01T00:00:00.000000Z",
            )
            store.append(group_id, [EntityAsserted(group_id=group_id, entity=record, created=True)])
    store.close()
    # Caught up, so every group also has a graph, text and vector projection to purge.
    Workspace.open(Config.from_env(root, env=ENV), HashEmbedder()).close()


#: What makes a stream: its segments and its generation (opening rewrites the other sidecars).
_STREAM_FILES = ("*.jsonl", ".wal-generation.json")


def _files(directory: Path, patterns: tuple[str, ...] = ("*",)) -> dict[str, bytes]:
    """The files under ``directory`` matching ``patterns``, by relative path."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for pattern in patterns
        for p in sorted(directory.rglob(pattern))
        if p.is_file()
    }


def _snapshot(root: Path) -> dict[str, dict[str, bytes]]:
    lcg = root / ".lcg"
    found = {}
    for g in GROUPS:
        if (lcg / "wal" / g).is_dir():
            found[f"wal/{g}"] = _files(lcg / "wal" / g, _STREAM_FILES)
        if (lcg / "vectors" / g).is_dir():
            found[f"vectors/{g}"] = _files(lcg / "vectors" / g)
    return found


def _run_child(ws: Path, kill_at: int) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD, str(ws), str(kill_at)],
        capture_output=True,
        timeout=120,
        check=False,
    )


def _kill_points(steps: list[list[str]]) -> list[int]:
    """The 1-based steps to kill before: each rename, and the first unlink of a segment or a
    vector file in each directory (``rmtree`` unlinks by name: a bare file name)."""
    points: list[int] = []
    fresh = True  # no data file deleted since the last rename or rmdir
    for i, (op, *args) in enumerate(steps, start=1):
        if op in ("rename", "replace") and any("/wal/" in a or "/vectors/" in a for a in args):
            points.append(i)
            fresh = True
        elif op == "rmdir":
            fresh = True
        elif op == "unlink" and fresh and args[0].endswith((".jsonl", ".npy", ".msgpack")):
            points.append(i)
            fresh = False
    return points


def _tombstones(root: Path) -> list[Path]:
    return list((root / ".lcg").rglob(f".*{REMOVING_SUFFIX}"))


def test_a_killed_clear_all_leaves_every_stream_whole_or_absent(tmp_path: Path) -> None:
    template = tmp_path / "template"
    _template(template)
    before = _snapshot(template)
    assert set(before) == {f"{kind}/{g}" for kind in ("wal", "vectors") for g in GROUPS}
    assert len([f for f in before["wal/alpha"] if f.endswith(".jsonl")]) == 3

    listed = tmp_path / "listed"
    shutil.copytree(template, listed, symlinks=True)
    done = _run_child(listed, 0)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    steps = json.loads(done.stdout.decode().splitlines()[-1])
    assert _snapshot(listed) == {}, "clear_all left stream or vector files"
    points = _kill_points(steps)
    assert len(points) >= 4, steps

    holed: list[str] = []
    left_tombstones = None
    for kill_at in points:
        ws = tmp_path / f"k{kill_at}"
        shutil.copytree(template, ws, symlinks=True)
        done = _run_child(ws, kill_at)
        assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
        for name, files in _snapshot(ws).items():
            if files != before[name]:
                holed.append(f"killed before {steps[kill_at - 1]}: {name} holds {sorted(files)}")
        if left_tombstones is None and _tombstones(ws):
            left_tombstones = ws
        else:
            shutil.rmtree(ws)
    assert not holed, "\n".join(holed)

    # A kill between rename and delete leaves tombstones; the next open deletes them, and
    # whatever survived replays.
    assert left_tombstones is not None, "no kill landed between a rename and its delete"
    with Workspace.open(Config.from_env(left_tombstones, env=ENV), HashEmbedder()) as reopened:
        assert _tombstones(left_tombstones) == []
        for group_id in reopened.store.groups():
            assert reopened.projector.applied_seq(group_id) == GROUPS[group_id] - 1
