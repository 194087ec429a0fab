"""``lcg.events.files``: the one atomic durable file write, used by every snapshot (ADR 0117).

Real files throughout. Before, the text and vector snapshots, the hnswlib index and the
generation sidecar each hand-rolled a temp/fsync/rename, and the projections' files were left
with the umask's mode; now all go through ``atomic_write``/``atomic_file`` and are private.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from lcg.events.files import (
    FILE_MODE,
    atomic_file,
    atomic_write,
    remove_tree,
    remove_trees,
    sweep_removals,
)
from lcg.events.layout import REMOVING_SUFFIX, TEMP_SUFFIX
from lcg.projections.ops import Upsert
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_atomic_write_replaces_privately(tmp_path: Path) -> None:
    target = tmp_path / "meta.json"
    target.write_bytes(b"old")
    target.chmod(0o644)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new" and _mode(target) == FILE_MODE
    atomic_write(target, b"newer", sync_dir=False)
    assert target.read_bytes() == b"newer"
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]


def test_atomic_file_lets_a_library_write_the_file(tmp_path: Path) -> None:
    target = tmp_path / "v.npy"
    with atomic_file(target) as tmp, open(tmp, "wb") as fh:
        assert tmp.parent == tmp_path and tmp.name.endswith(TEMP_SUFFIX)
        np.save(fh, np.arange(3, dtype=np.float32), allow_pickle=False)
    assert np.load(target).tolist() == [0.0, 1.0, 2.0]
    assert _mode(target) == FILE_MODE
    assert [p.name for p in tmp_path.iterdir()] == ["v.npy"]


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "snapshot"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_file(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("the library failed mid-write")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot"]


def test_projection_snapshots_are_private(tmp_path: Path) -> None:
    ops = [Upsert(kind="entity", group_id="g", uuid="e", parts={"name": "Kepler"})]
    text = TextProjection(tmp_path / "text")
    text.apply("g", "gen", 0, ops)
    text.save()
    vectors = VectorProjection(tmp_path / "vectors", 4, "test-model", exact_below=1)
    vec = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    vectors.apply("g", "gen", 0, ops, {"Kepler": vec})
    vectors.save()
    written = _files(tmp_path)
    assert {p.suffix for p in written} >= {".npy", ".hnsw"}  # the hnswlib index too
    assert {p.name: _mode(p) for p in written} == {p.name: FILE_MODE for p in written}


def test_remove_trees_renames_then_deletes_and_sweep_finishes_what_a_crash_left(
    tmp_path: Path,
) -> None:
    """ADR 0156: a directory goes in one step (a rename) before its files are deleted."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "000000000000.jsonl").write_bytes(b"{}\n")
    (tmp_path / "c.bm25").write_bytes(b"x")
    removed = remove_trees([tmp_path / "a", tmp_path / "c.bm25", tmp_path / "missing"])
    assert removed == [tmp_path / "a", tmp_path / "c.bm25"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    assert remove_tree(tmp_path / "a") is False

    # What a kill between the rename and the delete leaves: swept by name, and only ours.
    (tmp_path / f".db.1234abcd{REMOVING_SUFFIX}").mkdir()
    (tmp_path / f".db.1234abcd{REMOVING_SUFFIX}" / "f").write_bytes(b"x")
    (tmp_path / f".text.1234abcd{REMOVING_SUFFIX}").write_bytes(b"x")
    (tmp_path / "user.removing").mkdir()
    assert sweep_removals(tmp_path, of="db") == 1
    assert sweep_removals(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "user.removing"]
