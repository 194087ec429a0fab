"""``events.reference_files``: ``*.jsonl`` files of a group directory lcg did not name are
another writer's stream (ADR 0212), found by name, their seq read as the reference writes it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lcg.events import reference_segments, reference_stream, segment_name, stream_files_missing


def _five_key(seq: int) -> str:
    return json.dumps({"seq": seq, "ts": "t", "db": "", "cypher": "CREATE (:X)", "params": {}})


def test_only_names_lcg_did_not_give_are_a_reference_stream(tmp_path: Path) -> None:
    gdir = tmp_path / ".lcg" / "wal" / "g"
    gdir.mkdir(parents=True)
    (gdir / segment_name(0)).write_text("")  # ours
    (gdir / ".wal-bounds.json").write_text("{}")
    (gdir / ".hidden.jsonl").write_text("")
    (gdir / "sub.jsonl").mkdir()
    assert reference_segments(gdir) == []
    assert reference_stream(gdir, "g") is None
    assert stream_files_missing(gdir, "g") == f"No WAL files found at {gdir}"
    (gdir / "20240501_090000_a1b2c3_0000.jsonl").write_text(
        _five_key(0) + "\n" + _five_key(7) + "\n"
    )
    (gdir / "mine.jsonl").write_text(_five_key(3) + "\n")
    found = reference_stream(gdir, "g")
    assert found is not None
    assert reference_segments(gdir) == ["20240501_090000_a1b2c3_0000.jsonl", "mine.jsonl"]
    assert (found.file_count, found.max_seq) == (2, 7)
    assert found.import_command == (f"lcg -C {tmp_path} import-reference {gdir} --group g --force")
    assert stream_files_missing(gdir, "g") == found.note


def test_a_link_is_counted_never_followed(tmp_path: Path) -> None:
    gdir = tmp_path / "g"
    gdir.mkdir()
    outside = tmp_path / "outside.jsonl"
    outside.write_text(_five_key(99) + "\n")
    os.symlink(outside, gdir / "a.jsonl")
    os.mkfifo(gdir / "b.jsonl")  # opened for reading would block
    found = reference_stream(gdir, "g")
    assert found is not None and found.file_count == 2
    assert found.max_seq is None  # neither was read
