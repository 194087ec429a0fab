"""Fixtures of the ingest decision tests: a real workspace (Kuzu, BM25, hnswlib, stream) on a
temporary folder, with the hash embedder (TEST DOUBLE), and the events a group's stream holds.

The only other fake is the scripted extractor (``lcg.extract.scripted``, a TEST DOUBLE), which
the extraction tests build per test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lcg.config import Config
from lcg.events.model import Event
from lcg.workspace import Workspace

#: The hash embedder, no telemetry, no fsync: what a unit test of a decision needs.
ENV = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off", "LCG_WAL_FSYNC": "off"}

#: The events of one group's stream, oldest first.
EventsOf = Callable[[str], list[Event]]


@pytest.fixture
def config(tmp_path: Path) -> Config:
    """A workspace config rooted at ``tmp_path`` (also its ``LIMINIS_WORKSPACE_ROOT``)."""
    return Config.from_env(tmp_path, env={**ENV, "LIMINIS_WORKSPACE_ROOT": str(tmp_path)})


@pytest.fixture
def ws(config: Config) -> Iterator[Workspace]:
    """A real workspace, closed after the test."""
    w = Workspace.open(config)
    yield w
    w.close()


@pytest.fixture
def events_of(ws: Workspace) -> EventsOf:
    """``events_of(group)``: the events the group's stream holds."""

    def read(group_id: str) -> list[Event]:
        if group_id not in ws.store.groups():
            return []
        return list(ws.store.reader(group_id).events())

    return read
