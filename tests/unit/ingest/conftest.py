"""Fixtures of the ingest decision tests: a real workspace (Kuzu, BM25, hnswlib, stream) on a
temporary folder, with the hash embedder (TEST DOUBLE), and the events a group's stream holds.

``ws`` is a fresh workspace per test; ``shared_ws`` is one workspace per test module, for tests
whose decisions are confined to a group: each takes a fresh ``group`` of it, which saves the
open and close of a workspace per test. The only other fake is the scripted extractor
(``lcg.extract.scripted``, a TEST DOUBLE), which the extraction tests build per test.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lcg.config import Config
from lcg.events.model import Event
from lcg.workspace import Workspace

#: The hash embedder, no telemetry, no fsync: what a unit test of a decision needs.
ENV = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off", "LCG_WAL_FSYNC": "off"}

_GROUPS = itertools.count(1)


def _config(root: Path) -> Config:
    return Config.from_env(root, env={**ENV, "LIMINIS_WORKSPACE_ROOT": str(root)})


@pytest.fixture
def config(tmp_path: Path) -> Config:
    """A workspace config rooted at ``tmp_path`` (also its ``LIMINIS_WORKSPACE_ROOT``)."""
    return _config(tmp_path)


@pytest.fixture
def ws(config: Config) -> Iterator[Workspace]:
    """A real workspace, closed after the test."""
    w = Workspace.open(config)
    yield w
    w.close()


@pytest.fixture(scope="module")
def shared_ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """One real workspace for a whole test module (each test in its own ``group``)."""
    w = Workspace.open(_config(tmp_path_factory.mktemp("shared")))
    yield w
    w.close()


@pytest.fixture
def group() -> str:
    """A group id no other test of the session uses."""
    return f"t{next(_GROUPS)}"


def read_events(ws: Workspace, group_id: str) -> list[Event]:
    """The events the group's stream holds (none for a group never written)."""
    if group_id not in ws.store.groups():
        return []
    return list(ws.store.reader(group_id).events())


@pytest.fixture
def events_of(ws: Workspace) -> Callable[[str], list[Event]]:
    """``events_of(group)``: the events the group's stream holds."""
    return lambda group_id: read_events(ws, group_id)
