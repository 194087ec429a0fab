"""Staging a group for publication: what one publish carries, checked, before any transport.

``stage_group`` reads a group's stream directory as it is now (a service may be appending;
readers take no lock) and answers every transport's questions the same way: the stream's
generation (the sidecar's, else the lines'), its segments up to their last complete line (a
line being appended is not published yet), the provenance sidecars, and - past whatever the
target already holds - the new lines after the one line check (``events.linecheck``): a line
of another generation is refused (replicas report undecodable lines themselves).

Delivering the staged group (a git commit, a message per line) is the transport's
(``replication.transport.Publisher``); nothing here knows where it goes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec

from lcg.errors import GenerationError, StreamError
from lcg.events import (
    CHECKPOINTS_DIR,
    EMBEDDING_MODEL_FILE,
    GENERATION_FILE,
    ONTOLOGY_SIDECAR_FILE,
    LineCheck,
    Segment,
    effective_generation,
    encode_group,
    list_segments,
)

__all__ = ["StagedGroup", "StagedLine", "refuse_other_generation", "stage_group"]


class StagedLine(msgspec.Struct, frozen=True, kw_only=True):
    """One complete, checked line of a staged stream, as a line transport carries it."""

    #: The seq the line claims (``None`` for a line whose seq cannot be read).
    seq: int | None
    #: The line's bytes without its newline, exactly as in the stream.
    data: bytes


def _complete(data: bytes) -> bytes:
    """``data`` up to its last newline: a line being appended is not published yet."""
    return data[: data.rfind(b"\n") + 1]


def refuse_other_generation(group_id: str, previous: str, generation: str) -> GenerationError:
    """The refusal of a publish whose target holds another generation, without ``--reset``."""
    return GenerationError(
        f"the repository's copy of group {group_id!r} has generation {previous!r}, the "
        f"stream being published has {generation!r} (the stream was dumped or replaced); "
        "pass --reset to replace the publication - every replica will rebuild the group"
    )


class StagedGroup:
    """One group's stream, ready to deliver: generation, segments, sidecars, checked lines."""

    def __init__(
        self,
        group_id: str,
        src: Path,
        generation: str,
        segments: list[Segment],
        sidecars: dict[str, bytes],
        marks: Path | None,
    ) -> None:
        self.group_id = group_id
        #: The stream directory staged (the workspace's own: trusted).
        self.src = src
        self.generation = generation
        self.segments = segments
        #: Provenance sidecars that travel (``.wal-ontology.json``, the embedding model's).
        self.sidecars = sidecars
        #: ``.checkpoints/`` when marks travel (``--with-marks``), else ``None``.
        self.marks = marks

    @property
    def names(self) -> list[str]:
        """The segment file names, in seq order."""
        return [s.path.name for s in self.segments]

    def grown(self, name: str, have: int) -> bytes | None:
        """Segment ``name``'s complete bytes if they extend a target copy of ``have`` bytes.

        ``have`` = -1: the target has no copy. ``None``: nothing new. The lines past ``have``
        pass the line check; a target copy longer than the stream is refused (append-only).
        """
        path = self.src / name
        if have == path.stat().st_size:
            return None
        data = _complete(path.read_bytes())
        if len(data) == have:
            return None
        if len(data) < have:
            raise StreamError(
                f"the repository's copy of {name} (group {self.group_id!r}) is longer than "
                "the stream's; a stream is append-only - publish with --reset"
            )
        self._check(name, data[max(have, 0) :], LineCheck(self.generation))
        return data

    def lines(self, after: int | None = None) -> Iterator[StagedLine]:
        """The stream's complete lines with a seq past ``after`` (all with ``None``), checked."""
        check = LineCheck(self.generation)
        for seg in self.segments:
            data = _complete(seg.path.read_bytes())
            for line_no, line in enumerate(data.splitlines(), start=1):
                if not line.strip():
                    continue
                seq = self._check_line(seg.path.name, line_no, line, check)
                if after is None or seq is None or seq > after:
                    yield StagedLine(seq=seq, data=line)

    def _check(self, name: str, data: bytes, check: LineCheck) -> None:
        for line_no, line in enumerate(data.splitlines(), start=1):
            if line.strip():
                self._check_line(name, line_no, line, check)

    def _check_line(self, name: str, line_no: int, line: bytes, check: LineCheck) -> int | None:
        # Only another generation is refused: replicas report undecodable lines themselves,
        # and a bad line's generation is read from its JSON (``CheckedLine.gen``) all the same.
        checked = check.check(line)
        if checked.gen is not None and checked.gen != self.generation:
            raise GenerationError(
                f"the stream of group {self.group_id!r} mixes generations: {name}:{line_no} "
                f"carries {checked.gen!r}, the stream's is {self.generation!r}; refusing to "
                "publish it - dump the group (`lcg dump`) and publish the dumped stream with "
                "--reset"
            )
        return checked.seq


def stage_group(stream_root: Path, group_id: str, *, with_marks: bool = False) -> StagedGroup:
    """Stage ``group_id``'s stream directory under ``stream_root`` for publication."""
    src = stream_root / encode_group(group_id)
    segments = list_segments(src)
    if not segments:
        raise StreamError(f"group {group_id!r} has no stream files under {stream_root}")
    generation = effective_generation(src)
    if generation is None:
        raise GenerationError(
            f"group {group_id!r}: {src} has no readable {GENERATION_FILE} and no line names "
            "a generation; there is nothing a replica could verify - dump the group and publish "
            "the dump"
        )
    sidecars = {
        name: (src / name).read_bytes()
        for name in (ONTOLOGY_SIDECAR_FILE, EMBEDDING_MODEL_FILE)
        if (src / name).is_file()
    }
    marks = src / CHECKPOINTS_DIR if with_marks and (src / CHECKPOINTS_DIR).is_dir() else None
    return StagedGroup(group_id, src, generation, segments, sidecars, marks)
