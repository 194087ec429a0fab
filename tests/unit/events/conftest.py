"""Fixtures for the event-stream unit tests: one sample event of every type (event_registry)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from event_registry import sample_events
from event_samples import episode
from lcg.events.model import EpisodeAdded, Event


@pytest.fixture
def events() -> list[Event]:
    """One sample event of every type, for group ``g``."""
    return sample_events()


@pytest.fixture
def make_episode() -> Callable[..., EpisodeAdded]:
    """A factory of small numbered ``EpisodeAdded`` events."""
    return episode


@pytest.fixture
def gdir(wal_root: Path) -> Path:
    """The (not yet created) stream directory of group ``g``."""
    return wal_root / "g"
