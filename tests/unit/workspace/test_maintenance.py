"""The streams' maintenance rules (``workspace/maintenance``): marks and checkpoints, on real
streams and a real workspace, as both the service's methods and ``lcg mark`` use them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from event_samples import entities as _entities
from lcg.config import Config
from lcg.errors import MarkError
from lcg.events import list_segments
from lcg.extract.embedders import HashEmbedder
from lcg.workspace import (
    Workspace,
    close_segments,
    create_applied_mark,
    create_stream_mark,
    delete_group_mark,
    group_marks,
)
from lcg.workspace.factory import projection_dirs


def _cfg(root: Path) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash"})


def test_an_applied_mark_names_the_applied_seq_and_the_streams_generation(
    tmp_path: Path,
) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        ws.store.append("g", _entities(4))
        ws.catch_up()
        record = create_applied_mark(ws, "g", "before-import")
        assert (record.name, record.seq) == ("before-import", 3)
        assert record.wal_generation == ws.store.generation("g") is not None
        [listed] = group_marks(ws.config, "g")
        assert (listed.name, listed.seq, listed.reachable) == ("before-import", 3, True)
        assert listed.generation == record.wal_generation
        with pytest.raises(MarkError, match='checkpoint "before-import" already exists'):
            create_applied_mark(ws, "g", "before-import")


def test_a_group_never_written_takes_no_mark_and_gains_no_directory(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        with pytest.raises(MarkError, match="has never been written"):
            create_applied_mark(ws, "nothing", "m")
        assert not (ws.config.wal_dir / "nothing").exists()


def test_a_stream_not_applied_yet_takes_no_applied_mark_but_a_stream_mark(
    tmp_path: Path,
) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", _entities(3))
    for path in projection_dirs(cfg):  # the projections are gone; the stream is whole
        shutil.rmtree(path, ignore_errors=True)
    with Workspace.open(cfg, HashEmbedder(), catch_up=False) as ws:
        with pytest.raises(MarkError, match="no applied position yet; wait for the service"):
            create_applied_mark(ws, "g", "m")
        generation = ws.store.generation("g")
    # With no service, a mark names the stream's last seq: what a service applies on opening.
    record = create_stream_mark(cfg, "g", "at-end")
    assert (record.seq, record.wal_generation) == (2, generation)
    assert create_stream_mark(cfg, "g", "at-one", seq=1).seq == 1
    assert [(m.name, m.seq) for m in group_marks(cfg, "g")] == [("at-end", 2), ("at-one", 1)]


def test_a_stream_mark_past_the_end_is_refused_in_the_one_wording(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", _entities(3))
    with pytest.raises(MarkError) as refused:
        create_stream_mark(cfg, "g", "m", seq=3)
    assert str(refused.value) == "seq 3 is past the end of the stream of group 'g' (max seq 2)"
    assert group_marks(cfg, "g") == []


def test_a_deleted_mark_is_gone_and_its_name_is_free_again(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", _entities(2))
    create_stream_mark(cfg, "g", "m", seq=0)
    delete_group_mark(cfg, "g", "m")
    assert group_marks(cfg, "g") == []
    with pytest.raises(MarkError, match='checkpoint "m" not found'):
        delete_group_mark(cfg, "g", "m")
    assert create_stream_mark(cfg, "g", "m").seq == 1


def test_a_mark_of_a_replaced_stream_is_listed_unreachable(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", _entities(3))
        old = ws.store.generation("g")
    create_stream_mark(cfg, "g", "old")
    # The stream is replaced by one of another generation; the marks directory stays.
    gdir = cfg.wal_dir / "g"
    for path in gdir.iterdir():
        if path.name != ".checkpoints":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    with Workspace.open(cfg, HashEmbedder(), catch_up=False) as ws:
        ws.store.append("g", _entities(5, start=10))
        assert ws.store.generation("g") != old
    [listed] = group_marks(cfg, "g")
    assert (listed.name, listed.seq, listed.generation, listed.reachable) == ("old", 2, old, False)


def test_closing_segments_counts_what_it_closed_and_the_files_there_are(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        ws.store.append("g", _entities(2))
        gdir = ws.store.group_dir("g")
        assert len(list_segments(gdir)) == 1
        first = close_segments(ws)
        assert (first.files_flushed, first.files_total) == (1, 1)
        again = close_segments(ws)  # nothing is open any more
        assert (again.files_flushed, again.files_total) == (0, 1)
        ws.store.append("g", _entities(1, start=2))  # the next append starts a new file
        assert len(list_segments(gdir)) == 2
        last = close_segments(ws)
        assert (last.files_flushed, last.files_total) == (1, 2)
