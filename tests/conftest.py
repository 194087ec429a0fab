"""Shared fixtures: a temporary workspace, and telemetry kept off the test output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lcg import telemetry


@pytest.fixture(autouse=True)
def _quiet_telemetry() -> Iterator[None]:
    telemetry.set_sink(None, enabled=False)
    yield
    telemetry.set_sink(None, enabled=True)


@pytest.fixture
def wal_root(tmp_path: Path) -> Path:
    """An empty WAL root inside a temporary workspace."""
    root = tmp_path / ".lcg" / "wal"
    root.mkdir(parents=True)
    return root
