"""Regenerate the named WAL fixtures of this directory: ``python wal-fixtures/make_fixtures.py``.

Each fixture ``<name>/`` holds a WAL root (``wal/``) with one group stream and ``expected.json``,
what a reader (and a writer opening the stream) must report. Lines are written with lcg's own
codec from fixed values, so the output is byte-for-byte reproducible; a test regenerates them
into a temporary directory and compares with the committed files.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import msgspec

from lcg.events.codec import CHECKSUM_FIELD, encode_event, seal
from lcg.events.generation import GenerationFile
from lcg.events.groups import encode_group
from lcg.events.layout import GENERATION_FILE, segment_name
from lcg.events.model import EntityAsserted, EntityRecord, EpisodeAdded, Event

HERE = Path(__file__).resolve().parent
GEN_A = "a" * 32
GEN_B = "b" * 32
TS = "2024-05-01T12:00:00.000000Z"

#: A golden ``EpisodeAdded`` v1 line, kept literal: v1 named the episode text ``body`` and had
#: no ``content_hash``. It must never change, whatever becomes of the current version.
V1_EPISODE_ADDED = (
    b'{"type":"EpisodeAdded","seq":0,"ts":"2024-05-01T12:00:00.000000Z",'
    b'"gen":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","v":1,"group_id":"liminis","uuid":"ep0",'
    b'"name":"episode 0","source":"text","source_description":"",'
    b'"created_at":"2024-05-01T12:00:00.000000Z","valid_at":null,"body":"Episode number 0."}\n'
)

#: Golden lines as lcg wrote them before ADR 0150, kept literal (their checksums are computed
#: by ``seal``, as that lcg did): ``strftime("%Y")`` wrote years below 1000 unpadded, so a
#: relationship valid from year 1 and a chunk of year 999 carry ``1-…`` and ``999-…``.
UNPADDED_YEARS = [
    b'{"type":"EntityAsserted","seq":0,"ts":"2024-05-01T12:00:00.000000Z",'
    b'"gen":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","v":1,"group_id":"liminis","entity":{"uuid":"e1",'
    b'"name":"Ada","labels":["Entity"],"summary":"","attributes":"{}",'
    b'"created_at":"2024-05-01T12:00:00.000000Z"},"created":true}',
    b'{"type":"EntityAsserted","seq":1,"ts":"2024-05-01T12:00:00.000000Z",'
    b'"gen":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","v":1,"group_id":"liminis","entity":{"uuid":"e2",'
    b'"name":"Bob","labels":["Entity"],"summary":"","attributes":"{}",'
    b'"created_at":"2024-05-01T12:00:00.000000Z"},"created":true}',
    b'{"type":"RelationshipAsserted","seq":2,"ts":"2024-05-01T12:00:00.000000Z",'
    b'"gen":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","v":1,"group_id":"liminis","edge":{"uuid":"r1",'
    b'"name":"KNOWS","source_uuid":"e1","target_uuid":"e2","fact":"Ada KNOWS Bob",'
    b'"relation_type":null,"valid_at":"1-01-01T00:00:00.000000Z","invalid_at":null,'
    b'"expired_at":null,"episodes":[],"attributes":"{}",'
    b'"created_at":"2024-05-01T12:00:00.000000Z"},"created":true}',
    b'{"type":"EpisodeAdded","seq":3,"ts":"2024-05-01T12:00:00.000000Z",'
    b'"gen":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","v":2,"group_id":"liminis","uuid":"ep3",'
    b'"name":"old-chunk","source":"text","source_description":"annals.txt:old-chunk",'
    b'"content":"The annals of the year 999.","created_at":"999-01-01T00:00:00.000000Z",'
    b'"valid_at":"999-01-01T00:00:00.000000Z","content_hash":""}',
]

#: A golden line no projection can apply, as lcg wrote it before ADR 0150 (which took a
#: cross-group edge's ``valid_at`` unparsed): seq 1's ``valid_at`` is not a time.
UNAPPLIABLE_TIME = (
    b'{"type":"CrossGroupEdgeAdded","seq":1,"ts":"2024-05-01T12:00:00.000000Z",'
    b'"gen":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","v":1,"group_id":"liminis","edge":{"uuid":"x1",'
    b'"name":"KNOWS","source_uuid":"e1","target_uuid":"","fact":"Ada KNOWS someone",'
    b'"relation_type":null,"valid_at":"soon","invalid_at":null,"expired_at":null,'
    b'"episodes":[],"attributes":"{}","created_at":"2024-05-01T12:00:00.000000Z"}}'
)


class Expected(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What a reader must report for one fixture (``expected.json``)."""

    summary: str
    group_id: str
    #: The ``generation`` a reader checks lines against (the sidecar's, else the lines').
    generation: str | None
    seqs: list[int]
    unparseable_lines: int = 0
    unrecognised_lines: int = 0
    failed_lines: int = 0
    generation_mismatch_lines: int = 0
    corrupt_lines: int = 0
    #: The seqs a read skips, as inclusive ``[first, last]`` ranges.
    skipped_seqs: list[list[int]] = []
    seq_gaps: int = 0
    seq_regressions: int = 0
    torn_tail: bool = False
    files: int
    #: A read from this seq (inclusive) must open only ``files_read_from`` files.
    read_from_seq: int = 0
    files_read_from: int = 0
    #: A writer opening a copy: ``"continues"`` at ``next_seq``, or ``"refuses"``.
    writer: Literal["continues", "refuses"] = "continues"
    next_seq: int = 0
    #: Bytes the writer must move to ``.quarantine/`` on open.
    quarantined_bytes: int = 0


def episode(seq: int, gen: str = GEN_A, group_id: str = "liminis", **kw: object) -> EpisodeAdded:
    """An ``EpisodeAdded`` as stamped by a writer at ``seq``."""
    fields: dict[str, object] = {
        "uuid": f"ep{seq}",
        "name": f"episode {seq}",
        "content": f"Episode number {seq}.",
        "created_at": TS,
    }
    fields.update(kw)
    return EpisodeAdded(group_id=group_id, seq=seq, ts=TS, gen=gen, **fields)  # type: ignore[arg-type]


def lines(events: list[Event]) -> bytes:
    """The events as stream lines."""
    return b"".join(encode_event(e) for e in events)


class Builder:
    """Writes one fixture directory."""

    def __init__(self, root: Path, name: str, group_id: str = "liminis") -> None:
        self.dir = root / name
        self.group_id = group_id
        self.gdir = self.dir / "wal" / encode_group(group_id)
        self.gdir.mkdir(parents=True)

    def generation(self, gen: str = GEN_A) -> Builder:
        """Write the ``.wal-generation.json`` sidecar."""
        data = msgspec.json.encode(GenerationFile(generation=gen))
        (self.gdir / GENERATION_FILE).write_bytes(data)
        return self

    def segment(self, first_seq: int, data: bytes) -> Builder:
        """Write a segment file named by ``first_seq``."""
        (self.gdir / segment_name(first_seq)).write_bytes(data)
        return self

    def expect(self, **kw: object) -> None:
        """Write ``expected.json``."""
        exp = Expected(group_id=self.group_id, **kw)  # type: ignore[arg-type]
        (self.dir / "expected.json").write_bytes(msgspec.json.format(msgspec.json.encode(exp)))


def torn_tail(root: Path) -> None:
    data = lines([episode(0), episode(1), episode(2)])
    torn = lines([episode(3)])[:40]
    Builder(root, "torn-tail").generation().segment(0, data + torn).expect(
        summary="the last line has no newline: 3 events, torn_tail, writer cuts it to .quarantine/",
        generation=GEN_A,
        seqs=[0, 1, 2],
        torn_tail=True,
        files=1,
        next_seq=3,
        quarantined_bytes=len(torn),
    )


def seq_gap(root: Path) -> None:
    data = lines([episode(0), episode(1), episode(3), episode(4)])
    Builder(root, "seq-gap").generation().segment(0, data).expect(
        summary="seq 2 is missing: 4 events, seq_gaps 1, writer continues at 5",
        generation=GEN_A,
        seqs=[0, 1, 3, 4],
        seq_gaps=1,
        skipped_seqs=[[2, 2]],
        files=1,
        next_seq=5,
    )


def unknown_event_type(root: Path) -> None:
    odd = b'{"type":"EpisodeFrobnicated","seq":1,"ts":"' + TS.encode() + b'","gen":"'
    odd = seal(odd + GEN_A.encode() + b'","v":1,"group_id":"liminis"}')
    data = lines([episode(0)]) + odd + lines([episode(2)])
    Builder(root, "unknown-event-type").generation().segment(0, data).expect(
        summary="seq 1 has a type this build does not know: 2 events, unrecognised_lines 1",
        generation=GEN_A,
        seqs=[0, 2],
        unrecognised_lines=1,
        skipped_seqs=[[1, 1]],
        files=1,
        next_seq=3,
    )


def newer_version(root: Path) -> None:
    future = msgspec.json.decode(encode_event(episode(1)))
    future["v"] = 99
    del future[CHECKSUM_FIELD]
    data = lines([episode(0)]) + seal(msgspec.json.encode(future)) + lines([episode(2)])
    Builder(root, "newer-version").generation().segment(0, data).expect(
        summary="seq 1 is EpisodeAdded v99, newer than this build: 2 events, unrecognised_lines 1",
        generation=GEN_A,
        seqs=[0, 2],
        unrecognised_lines=1,
        skipped_seqs=[[1, 1]],
        files=1,
        next_seq=3,
    )


def two_generations(root: Path) -> None:
    data = lines([episode(0), episode(1), episode(2, gen=GEN_B), episode(3, gen=GEN_B)])
    Builder(root, "two-generations").generation(GEN_A).segment(0, data).expect(
        summary="seqs 2-3 carry another generation than the sidecar: 2 events, "
        "generation_mismatch_lines 2, writer refuses",
        generation=GEN_A,
        seqs=[0, 1],
        generation_mismatch_lines=2,
        skipped_seqs=[[2, 3]],
        files=1,
        writer="refuses",
    )


def rotated_files(root: Path) -> None:
    b = Builder(root, "rotated-files").generation()
    for first in (0, 4, 8):
        b.segment(first, lines([episode(s) for s in range(first, min(first + 4, 10))]))
    b.expect(
        summary="10 events in 3 files named by first seq; a read from seq 5 opens 2 files",
        generation=GEN_A,
        seqs=list(range(10)),
        files=3,
        read_from_seq=5,
        files_read_from=2,
        next_seq=10,
    )


def percent_encoded_group(root: Path) -> None:
    group = "team a/ß%"
    data = lines([episode(0, group_id=group), episode(1, group_id=group)])
    Builder(root, "percent-encoded-group", group).generation().segment(0, data).expect(
        summary="group 'team a/ß%' lives in 'team%20a%2F%C3%9F%25': 2 events",
        generation=GEN_A,
        seqs=[0, 1],
        files=1,
        next_seq=2,
    )


def dot_files_dropped(root: Path) -> None:
    data = lines([episode(0), episode(1), episode(2)])
    Builder(root, "dot-files-dropped").segment(0, data).expect(
        summary="no .wal-generation.json (a glob copy): generation read from the lines, "
        "3 events, writer restores the sidecar",
        generation=GEN_A,
        seqs=[0, 1, 2],
        files=1,
        next_seq=3,
    )


def empty_stream(root: Path) -> None:
    Builder(root, "empty-stream").generation().expect(
        summary="a generation and no segment: 0 events, bounds null, writer starts at 0",
        generation=GEN_A,
        seqs=[],
        files=0,
        next_seq=0,
    )


def bad_lines(root: Path) -> None:
    bad_payload = msgspec.json.decode(encode_event(episode(2)))
    del bad_payload["content"], bad_payload[CHECKSUM_FIELD]
    data = (
        lines([episode(0)])
        + b"this is not json\n"
        + b"this is not json\n"
        + b"\n"
        + lines([episode(1)])
        + seal(b'{"no":"envelope"}')
        + seal(msgspec.json.encode(bad_payload))
        + lines([episode(3)])
    )
    Builder(root, "bad-lines").generation().segment(0, data).expect(
        summary="two non-JSON lines, a blank one, one without envelope, one failing "
        "validation: 3 events, unparseable_lines 3, failed_lines 1",
        generation=GEN_A,
        seqs=[0, 1, 3],
        unparseable_lines=3,
        failed_lines=1,
        skipped_seqs=[[2, 2]],
        files=1,
        next_seq=4,
    )


def v1_episode_added(root: Path) -> None:
    entity = EntityAsserted(
        group_id="liminis",
        seq=1,
        ts=TS,
        gen=GEN_A,
        created=True,
        entity=EntityRecord(uuid="e1", name="Ada", labels=["Entity"], created_at=TS),
    )
    data = V1_EPISODE_ADDED + lines([entity])
    Builder(root, "v1-episode-added").generation().segment(0, data).expect(
        summary="a golden EpisodeAdded v1 line (text in 'body') upcasts to v2 'content': 2 events",
        generation=GEN_A,
        seqs=[0, 1],
        files=1,
        next_seq=2,
    )


def corrupt_line(root: Path) -> None:
    entity = EntityAsserted(
        group_id="liminis",
        seq=1,
        ts=TS,
        gen=GEN_A,
        created=True,
        entity=EntityRecord(uuid="e1", name="Ada Lovelace", labels=["Entity"], created_at=TS),
    )
    damaged = lines([entity]).replace(b"Ada Lovelace", b"Ada Lovelacf")
    data = lines([episode(0)]) + damaged + lines([episode(2)])
    Builder(root, "corrupt-line").generation().segment(0, data).expect(
        summary="one letter of the entity name at seq 1 changed on disk: its checksum fails, "
        "2 events, corrupt_lines 1, seq 1 skipped",
        generation=GEN_A,
        seqs=[0, 2],
        corrupt_lines=1,
        skipped_seqs=[[1, 1]],
        files=1,
        next_seq=3,
    )


def checksum_dropped(root: Path) -> None:
    stripped = lines([episode(1, content="Rewritten.")])
    stripped = stripped[: stripped.rindex(b',"' + CHECKSUM_FIELD.encode())] + b"}\n"
    data = lines([episode(0)]) + stripped + lines([episode(2)])
    Builder(root, "checksum-dropped").generation().segment(0, data).expect(
        summary="seq 1 has no checksum after a line that has one (rewritten by hand): "
        "2 events, corrupt_lines 1, seq 1 skipped",
        generation=GEN_A,
        seqs=[0, 2],
        corrupt_lines=1,
        skipped_seqs=[[1, 1]],
        files=1,
        next_seq=3,
    )


def unpadded_years(root: Path) -> None:
    data = b"".join(seal(line) for line in UNPADDED_YEARS)
    Builder(root, "unpadded-years").generation().segment(0, data).expect(
        summary="golden lines with the unpadded years written before ADR 0150 ('1-01-01T…', "
        "'999-01-01T…') are upcast to four digits: 4 events, no bad line",
        generation=GEN_A,
        seqs=[0, 1, 2, 3],
        files=1,
        next_seq=4,
    )


def unappliable_time(root: Path) -> None:
    entity = EntityAsserted(
        group_id="liminis",
        seq=0,
        ts=TS,
        gen=GEN_A,
        created=True,
        entity=EntityRecord(uuid="e1", name="Ada", labels=["Entity"], created_at=TS),
    )
    data = lines([entity]) + seal(UNAPPLIABLE_TIME) + lines([episode(2)])
    Builder(root, "unappliable-time").generation().segment(0, data).expect(
        summary="seq 1 (written before ADR 0150) has valid_at 'soon', which no projection can "
        "store: 2 events, failed_lines 1, seq 1 skipped",
        generation=GEN_A,
        seqs=[0, 2],
        failed_lines=1,
        skipped_seqs=[[1, 1]],
        files=1,
        next_seq=3,
    )


FIXTURES: list[Callable[[Path], None]] = [
    torn_tail,
    seq_gap,
    unknown_event_type,
    newer_version,
    two_generations,
    rotated_files,
    percent_encoded_group,
    dot_files_dropped,
    empty_stream,
    bad_lines,
    v1_episode_added,
    corrupt_line,
    checksum_dropped,
    unpadded_years,
    unappliable_time,
]


def generate(root: Path) -> list[str]:
    """Write every fixture under ``root`` (replacing them); return their names."""
    names = []
    for make in FIXTURES:
        name = make.__name__.replace("_", "-")
        shutil.rmtree(root / name, ignore_errors=True)
        make(root)
        names.append(name)
    return names


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    for fixture in generate(target):
        print(fixture)
