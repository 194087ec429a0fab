"""Shared set-up of the benchmarks (``make bench``): telemetry stays off the printed tables."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lcg import telemetry


@pytest.fixture(autouse=True)
def _quiet_telemetry() -> Iterator[None]:
    telemetry.set_sink(None, enabled=False)
    yield
    telemetry.set_sink(None, enabled=True)
