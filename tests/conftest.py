"""Shared fixtures: a temporary workspace, telemetry kept off the test output, ``--reverse``,
and the hypothesis profiles (``default``; ``deep`` for ``make test-deep``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import _hypothesis_profiles
from lcg import telemetry

# Before any test module is imported: ``--hypothesis-profile=deep`` (``make test-deep``) is
# loaded over the default when hypothesis' plugin configures, still before collection.
_hypothesis_profiles.register()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reverse",
        action="store_true",
        help="run the collected tests in reverse order: a test that needs state an earlier "
        "test left in a module-scoped service fails",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Reversed, each module's tests still run together, so module-scoped fixtures stay shared.
    if config.getoption("--reverse"):
        items.reverse()
    # The files that hold a test marked ``long`` go first, whole and in their order: a parallel
    # run (``make test``: pytest-xdist, a file per worker at a time) starts them at once
    # instead of waiting on one of them at the end (ADR 0187).
    long_files = {item.path for item in items if item.get_closest_marker("long")}
    items.sort(key=lambda item: item.path not in long_files)


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
