"""The group's effective generation, decided in one place (ADR 0115)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lcg.events.generation import (
    StreamGeneration,
    effective_generation,
    stream_generation,
    write_generation,
)
from lcg.events.layout import GENERATION_FILE
from lcg.events.model import EpisodeAdded
from lcg.events.writer import StreamWriter

Episode = Callable[..., EpisodeAdded]


def test_an_unwritten_stream_has_no_generation(gdir: Path) -> None:
    assert stream_generation(gdir) == StreamGeneration(sidecar=None, lines=None)
    assert stream_generation(gdir).source is None
    assert effective_generation(gdir) is None


def test_sidecar_then_lines(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(0)])
        gen = writer.generation
    both = stream_generation(gdir)
    assert (both.sidecar, both.lines, both.effective, both.source) == (gen, gen, gen, "sidecar")
    assert not both.split
    (gdir / GENERATION_FILE).unlink()  # a glob copy drops the dot-files
    lines_only = stream_generation(gdir)
    assert (lines_only.effective, lines_only.source, lines_only.split) == (gen, "lines", False)
    assert effective_generation(gdir) == gen


def test_a_split_is_seen_and_the_sidecar_stays_effective(gdir: Path, make_episode: Episode) -> None:
    with StreamWriter(gdir.parent, "g", fsync="off") as writer:
        writer.append([make_episode(0)])
        gen = writer.generation
    write_generation(gdir, "f" * 32)
    witnesses = stream_generation(gdir)
    assert witnesses.split and witnesses.lines == gen
    assert witnesses.effective == effective_generation(gdir) == "f" * 32
