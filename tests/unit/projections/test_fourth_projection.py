"""A fourth projection is its module, one spec in the builder, and its tests (ADR 0182).

``EventCounter`` (how many events of each group it applied) stands for a new projection: it
implements ``Projection`` and nothing else, and is registered as one more ``ProjectionSpec``
in ``lcg.workspace.factory.PROJECTIONS`` (here by ``monkeypatch``, the one line a real one
adds). With no other change it is opened by the workspace, fed by live commits, caught up
from the streams when added to a workspace that had none, replayed by a rebuild, digested,
compared by ``lcg verify``, wiped and closed. The files a real fourth projection touches:

1. ``src/lcg/projections/<name>.py`` - the projection (here: ``EventCounter`` below);
2. ``src/lcg/workspace/factory.py`` - one ``ProjectionSpec`` in ``PROJECTIONS``;
3. ``tests/unit/projections/test_<name>.py`` - its tests, and it joins ``SPECS`` of the
   contract suite (``test_projection_contract.py``) by being in ``PROJECTIONS``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lcg.config import Config
from lcg.events.layout import LCG_DIR
from lcg.events.position import Position
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion, episodes
from lcg.projections.base import Batch, Capabilities
from lcg.workspace import Workspace, factory
from lcg.workspace.factory import OpenContext, ProjectionSpec
from lcg.workspace.verify import verify_workspace


class EventCounter:
    """A tiny projection: the number of events of each group it has applied."""

    name = "counts"
    capabilities = Capabilities()

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._path = directory / "counts.json"
        self.damaged: dict[str, str] = {}
        #: group -> [events applied, applied seq, generation]
        self._state: dict[str, list[int | str]] = (
            json.loads(self._path.read_text()) if self._path.exists() else {}
        )

    def position(self, group_id: str) -> Position:
        """Where it stands in ``group_id``."""
        held = self._state.get(group_id)
        if held is None:
            return Position.none(group_id)
        return Position(group_id=group_id, generation=str(held[2]), seq=int(held[1]))

    def count(self, group_id: str) -> int:
        """The events of ``group_id`` applied."""
        return int(self._state.get(group_id, [0])[0])

    def groups(self) -> list[str]:
        """The groups counted."""
        return sorted(self._state)

    def apply_batch(self, batch: Batch) -> None:
        """Count the batch's events."""
        count = self.count(batch.group_id) + len(batch.events)
        self._state[batch.group_id] = [count, batch.last_seq, batch.generation]

    def purge_group(self, group_id: str) -> None:
        """Forget the group."""
        self._state.pop(group_id, None)

    def digest(self, group_id: str) -> str:
        """The count, hashed."""
        return hashlib.sha256(str(self.count(group_id)).encode()).hexdigest()

    def begin_bulk(self, group_id: str) -> None:
        """Nothing to defer."""

    def end_bulk(self, group_id: str) -> None:
        """Nothing deferred."""

    def save(self) -> None:
        """Write the counts."""
        self._path.write_text(json.dumps(self._state))

    def close(self) -> None:
        """Write the counts."""
        self.save()


def _counter_dir(config: Config) -> Path:
    return config.workspace / LCG_DIR / "counts"


def _open_counter(directory: Path, ctx: OpenContext) -> EventCounter:
    return EventCounter(directory)


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    # The one line a fourth projection adds to the builder.
    spec = ProjectionSpec("counts", _counter_dir, _open_counter)
    monkeypatch.setattr(factory, "PROJECTIONS", (*factory.PROJECTIONS, spec))


def _cfg(root: Path) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash"})


def _fill(ws: Workspace) -> int:
    for i in range(5):
        assertion.assert_entity(ws, name=f"thing {i}", group_id="g", summary=f"about {i}")
    episodes.process_chunk(ws, chunk_text="a note", chunk_id="c", source_file="f", group_id="g")
    end = ws.store.bounds("g").max_seq
    assert end is not None
    return end + 1  # seqs start at 0, without a hole


def _counter(ws: Workspace) -> EventCounter:
    return ws.projections.role("counts", EventCounter)


def test_the_workspace_opens_feeds_digests_and_verifies_it(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        assert ws.projections.names() == ["graph", "text", "vectors", "counts"]
        n = _fill(ws)
        assert _counter(ws).count("g") == n
        assert _counter(ws).position("g") == ws.graph.position("g")
        assert set(ws.digests("g")) == {"graph", "text", "vectors", "counts"}
        report = verify_workspace(ws)
        assert report.ok, report
        (verdict,) = report.groups
        assert verdict.live["counts"] == verdict.replayed["counts"]
        assert verdict.seqs["counts"] == n - 1


def test_a_rebuild_replays_it(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        n = _fill(ws)
        before = ws.digests("g")
        result = ws.projector.rebuild("g", force_clear=True)
        assert result.success and result.mutations_replayed == n
        assert _counter(ws).count("g") == n  # purged, then counted again from the stream
        assert ws.digests("g") == before


def test_added_to_a_workspace_it_is_caught_up_from_the_streams(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        n = _fill(ws)
        graph_before = ws.digests("g")["graph"]
    # As if the workspace predated the projection: its files are not there.
    (_counter_dir(_cfg(tmp_path)) / "counts.json").unlink()
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        assert _counter(ws).count("g") == n
        assert ws.digests("g")["graph"] == graph_before  # the others were not fed again
        assert verify_workspace(ws).ok
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:  # saved on close, reloaded
        assert _counter(ws).count("g") == n


def test_wipe_empties_it(tmp_path: Path) -> None:
    with Workspace.open(_cfg(tmp_path), HashEmbedder()) as ws:
        _fill(ws)
        ws.wipe()
        assert _counter(ws).groups() == []
        assert _counter(ws).position("g") == Position.none("g")
