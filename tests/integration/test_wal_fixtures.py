"""Every fixture under ``wal-fixtures/`` reads and opens exactly as its ``expected.json`` says."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

import make_fixtures as SCRIPT
import msgspec
import pytest

from lcg.errors import GenerationError
from lcg.events.bounds import read_bounds
from lcg.events.generation import effective_generation, read_generation
from lcg.events.groups import encode_group, list_groups
from lcg.events.layout import QUARANTINE_DIR
from lcg.events.model import EpisodeAdded, RelationshipAsserted
from lcg.events.reader import ReadReport, StreamReader
from lcg.events.writer import StreamWriter

#: A recorded time (events carry only times in this form, ADR 0150).
TS = "2024-05-01T12:00:00.000000Z"

FIXTURES = Path(__file__).resolve().parents[2] / "wal-fixtures"

NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file())


def _expected(name: str) -> msgspec.Struct:
    raw = (FIXTURES / name / "expected.json").read_bytes()
    value: msgspec.Struct = msgspec.json.decode(raw, type=SCRIPT.Expected)
    return value


def test_every_fixture_is_present_and_described() -> None:
    made = [make.__name__.replace("_", "-") for make in SCRIPT.FIXTURES]
    assert sorted(made) == NAMES
    readme = (FIXTURES / "README.md").read_text()
    for name in NAMES:
        assert f"| `{name}` |" in readme, f"README.md has no line for {name}"


def test_the_script_reproduces_the_committed_files(tmp_path: Path) -> None:
    SCRIPT.generate(tmp_path)
    for name in NAMES:
        cmp = filecmp.dircmp(FIXTURES / name, tmp_path / name)
        pending = [cmp]
        while pending:
            d = pending.pop()
            assert not d.left_only and not d.right_only, (name, d.left_only, d.right_only)
            _, mismatch, errors = filecmp.cmpfiles(d.left, d.right, d.common_files, shallow=False)
            assert not mismatch and not errors, (name, mismatch, errors)
            pending.extend(d.subdirs.values())


@pytest.mark.parametrize("name", NAMES)
def test_reader_reports_what_the_fixture_says(name: str) -> None:
    exp = _expected(name)
    wal = FIXTURES / name / "wal"
    assert list_groups(wal) == [exp.group_id]  # type: ignore[attr-defined]
    gdir = wal / encode_group(exp.group_id)  # type: ignore[attr-defined]
    generation = effective_generation(gdir)
    assert generation == exp.generation  # type: ignore[attr-defined]

    report = ReadReport()
    events = list(StreamReader(gdir, generation=generation).events(report=report))
    assert [e.seq for e in events] == exp.seqs  # type: ignore[attr-defined]
    for counter in (
        "unparseable_lines",
        "unrecognised_lines",
        "failed_lines",
        "generation_mismatch_lines",
        "corrupt_lines",
        "seq_gaps",
        "seq_regressions",
        "torn_tail",
    ):
        assert getattr(report, counter) == getattr(exp, counter), counter
    assert [list(r) for r in report.skipped_seqs] == exp.skipped_seqs  # type: ignore[attr-defined]
    assert report.events_read == len(exp.seqs)  # type: ignore[attr-defined]
    assert report.files_read == exp.files  # type: ignore[attr-defined]
    assert all(e.group_id == exp.group_id for e in events)  # type: ignore[attr-defined]

    bounds = read_bounds(gdir, write_cache=False)
    assert bounds.file_count == exp.files  # type: ignore[attr-defined]
    if not exp.seqs:  # type: ignore[attr-defined]
        assert (bounds.min_seq, bounds.max_seq) == (None, None)

    if exp.files_read_from:  # type: ignore[attr-defined]
        partial = ReadReport()
        start = exp.read_from_seq  # type: ignore[attr-defined]
        got = [e.seq for e in StreamReader(gdir).events(from_seq=start, report=partial)]
        assert got == [s for s in exp.seqs if s >= start]  # type: ignore[attr-defined]
        assert partial.files_read == exp.files_read_from  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", NAMES)
def test_writer_opens_the_fixture_as_it_says(name: str, tmp_path: Path) -> None:
    exp = _expected(name)
    wal = tmp_path / "wal"
    shutil.copytree(FIXTURES / name / "wal", wal)
    group_id: str = exp.group_id  # type: ignore[attr-defined]
    if exp.writer == "refuses":  # type: ignore[attr-defined]
        with pytest.raises(GenerationError, match="two generations"):
            StreamWriter(wal, group_id, fsync="off")
        return
    with StreamWriter(wal, group_id, fsync="off") as writer:
        assert writer.next_seq == exp.next_seq  # type: ignore[attr-defined]
        assert writer.generation == exp.generation  # type: ignore[attr-defined]
        new = EpisodeAdded(group_id=group_id, uuid="new", name="n", content="c", created_at=TS)
        (stamped,) = writer.append([new])
    gdir = wal / encode_group(group_id)
    assert stamped.seq == exp.next_seq  # type: ignore[attr-defined]
    assert read_generation(gdir) == exp.generation  # type: ignore[attr-defined]
    quarantined = sum(p.stat().st_size for p in (gdir / QUARANTINE_DIR).glob("*"))
    assert quarantined == exp.quarantined_bytes  # type: ignore[attr-defined]
    report = ReadReport()
    seqs = [e.seq for e in StreamReader(gdir).events(report=report)]
    assert seqs == [*exp.seqs, exp.next_seq]  # type: ignore[attr-defined]
    assert not report.torn_tail


def test_v1_golden_line_is_upcast() -> None:
    gdir = FIXTURES / "v1-episode-added" / "wal" / "liminis"
    raw = (gdir / "000000000000.jsonl").read_bytes().splitlines()[0]
    assert b'"v":1' in raw and b'"body":' in raw and b'"content"' not in raw
    first = next(iter(StreamReader(gdir).events()))
    assert isinstance(first, EpisodeAdded)
    assert first.v == 2
    assert first.content == "Episode number 0."
    assert first.content_hash == ""


def test_unpadded_years_are_upcast_to_four_digits() -> None:
    # ADR 0150: lines written while strftime("%Y") left years below 1000 unpadded replay.
    gdir = FIXTURES / "unpadded-years" / "wal" / "liminis"
    raw = (gdir / "000000000000.jsonl").read_bytes()
    assert b'"valid_at":"1-01-01T' in raw and b'"created_at":"999-01-01T' in raw
    report = ReadReport()
    events = {e.seq: e for e in StreamReader(gdir).events(report=report)}
    assert report.failed_lines == 0 and sorted(events) == [0, 1, 2, 3]
    edge = events[2]
    assert isinstance(edge, RelationshipAsserted)
    assert edge.edge.valid_at == "0001-01-01T00:00:00.000000Z"
    episode = events[3]
    assert isinstance(episode, EpisodeAdded)
    assert episode.created_at == episode.valid_at == "0999-01-01T00:00:00.000000Z"


def test_a_time_no_projection_can_store_is_a_failed_line() -> None:
    gdir = FIXTURES / "unappliable-time" / "wal" / "liminis"
    report = ReadReport()
    assert [e.seq for e in StreamReader(gdir).events(report=report)] == [0, 2]
    (sample,) = report.samples
    assert (sample.problem, sample.seq, sample.line_no) == ("failed", 1, 2)
    assert "$.edge.valid_at" in sample.detail and "0001-9999" in sample.detail
