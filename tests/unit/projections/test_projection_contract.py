"""The ``Projection`` contract, run against every projection the builder opens (ADR 0182).

Each case takes a spec of ``lcg.workspace.factory`` (the record and every other projection)
and checks what the projector, the workspace and verify rely on of any projection: a batch
advances its position, the digest is the state's (not the batching's, nor a reopen's),
a purge forgets one group and no other, its groups are listed, bulk begin/end changes
nothing of the result, and its name and capabilities are declared. Real Kuzu, BM25 and
hnswlib, on real files.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from event_samples import G, H, added, ent, history, stamp
from lcg.events.model import EntityAsserted, Event
from lcg.events.position import Position
from lcg.extract.embedders import HashEmbedder
from lcg.projections.base import Batch, Capabilities, Projection
from lcg.projections.embedding import CachedTextEmbedder
from lcg.projections.ops import derive_ops, texts_to_embed
from lcg.workspace.factory import PROJECTIONS, RECORD, OpenContext, ProjectionSpec

GEN = "0123456789abcdef0123456789abcdef"
SPECS: list[ProjectionSpec[Projection]] = [RECORD, *PROJECTIONS]
_EMBEDDER = CachedTextEmbedder(HashEmbedder(), None)


def _events() -> list[Event]:
    return stamp(history())


def _other_group() -> list[Event]:
    return stamp(
        [
            added("h1", group=H, content="a note of the other group"),
            EntityAsserted(
                group_id=H, entity=ent("h2", "Hank", summary="keeps bees"), created=True
            ),
        ]
    )


class Opened:
    """One projection of a spec, opened (and reopened) in a directory of its own."""

    def __init__(self, spec: ProjectionSpec[Projection], root: Path) -> None:
        self.spec = spec
        self.root = root
        self.proj = self.open()

    def open(self) -> Projection:
        return self.spec.open(self.root / self.spec.name, _ctx(self.root))

    def reopen(self) -> None:
        self.proj.save()
        self.proj.close()
        self.proj = self.open()

    def feed(self, events: Sequence[Event], size: int = 1000) -> None:
        """Apply ``events`` in batches of ``size``, as the projector builds them."""
        for at in range(0, len(events), size):
            chunk = list(events[at : at + size])
            ops = [op for e in chunk for op in derive_ops(e)]
            embeds = self.proj.capabilities.embeds
            vectors = _EMBEDDER.vectors(texts_to_embed(ops)) if embeds else {}
            group = chunk[0].group_id
            self.proj.apply_batch(Batch(group, GEN, chunk, ops, chunk[-1].seq, vectors))


@pytest.fixture(params=SPECS, ids=[s.name for s in SPECS])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opened]:
    one = Opened(request.param, tmp_path / "a")
    yield one
    one.proj.close()


@pytest.fixture
def second(opened: Opened, tmp_path: Path) -> Iterator[Opened]:
    other = Opened(opened.spec, tmp_path / "b")
    yield other
    other.proj.close()


def test_name_and_capabilities_are_declared(opened: Opened) -> None:
    proj = opened.proj
    assert proj.name == opened.spec.name
    assert isinstance(proj.capabilities, Capabilities)
    assert dict(proj.damaged) == {}  # a fresh directory has nothing damaged
    assert proj.position(G) == Position.none(G)
    assert proj.groups() == []


def test_a_batch_advances_the_position_and_lists_the_group(opened: Opened) -> None:
    events = _events()
    opened.feed(events[:3])
    assert opened.proj.position(G) == Position(group_id=G, generation=GEN, seq=2)
    opened.feed(events[3:])
    assert opened.proj.position(G) == Position(group_id=G, generation=GEN, seq=events[-1].seq)
    opened.feed(_other_group())
    assert opened.proj.position(H) == Position(group_id=H, generation=GEN, seq=1)
    assert sorted(opened.proj.groups()) == sorted([G, H])


def test_the_digest_is_the_states_not_the_batchings(opened: Opened, second: Opened) -> None:
    empty = opened.proj.digest(G)
    opened.feed(_events())
    second.feed(_events(), size=2)
    assert opened.proj.digest(G) == second.proj.digest(G)
    assert opened.proj.digest(G) != empty


def test_the_digest_and_position_survive_save_and_reopen(opened: Opened) -> None:
    opened.feed(_events())
    opened.feed(_other_group())
    before = {g: (opened.proj.digest(g), opened.proj.position(g)) for g in (G, H)}
    opened.reopen()
    assert {g: (opened.proj.digest(g), opened.proj.position(g)) for g in (G, H)} == before
    assert sorted(opened.proj.groups()) == sorted([G, H])


def test_a_purge_forgets_one_group_and_no_other(opened: Opened, second: Opened) -> None:
    empty = opened.proj.digest(G)
    opened.feed(_events())
    opened.feed(_other_group())
    kept = opened.proj.digest(H)
    opened.proj.purge_group(G)
    assert opened.proj.position(G) == Position.none(G)
    assert opened.proj.digest(G) == empty
    assert opened.proj.groups() == [H]
    assert opened.proj.digest(H) == kept
    opened.reopen()  # the purge is on disk too
    assert opened.proj.position(G) == Position.none(G)
    assert opened.proj.groups() == [H]
    # A purged group takes its stream again from the start, as a fresh projection does.
    opened.feed(_events())
    second.feed(_events())
    assert opened.proj.digest(G) == second.proj.digest(G)


def test_bulk_begin_and_end_change_nothing_of_the_result(opened: Opened, second: Opened) -> None:
    opened.proj.begin_bulk(G)
    opened.feed(_events(), size=3)
    opened.proj.end_bulk(G)
    second.feed(_events(), size=3)
    assert opened.proj.digest(G) == second.proj.digest(G)
    assert opened.proj.position(G) == second.proj.position(G)
    opened.reopen()
    assert opened.proj.digest(G) == second.proj.digest(G)


def test_the_record_loads_a_group_in_bulk_as_batches_would(tmp_path: Path) -> None:
    # The projection of record has its own bulk path; it must agree with apply_batch.
    record = RECORD.open(tmp_path / "a", _ctx(tmp_path))
    applied = Opened(RECORD, tmp_path / "b")
    try:
        assert record.bulk_loadable(G) and not record.holds_rows(G)
        events = _events()
        assert record.load_group(G, GEN, [events[:4], events[4:]]) == len(events)
        applied.feed(events)
        assert record.digest(G) == applied.proj.digest(G)
        at_end = Position(group_id=G, generation=GEN, seq=events[-1].seq)
        assert record.position(G) == applied.proj.position(G) == at_end
        assert record.holds_rows(G) and not record.bulk_loadable(G)
    finally:
        record.close()
        applied.proj.close()


def _ctx(root: Path) -> OpenContext:
    return OpenContext(
        dim=_EMBEDDER.dim,
        model_id=_EMBEDDER.model_id,
        read_only=False,
        scratch=lambda name: root / "scratch" / name,
    )
