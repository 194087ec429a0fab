"""The unreported resets a catch-up applied (ADR 0173): kept on disk, merged, forgotten."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.errors import CorruptFileError
from lcg.projections._pending_resets import PendingReset, PendingResets


def test_a_noted_reset_survives_a_reopen_and_is_forgotten_once_reported(tmp_path: Path) -> None:
    path = tmp_path / "db" / "resets.json"
    PendingResets(path).note("g", "gen-a", "gen-b")
    reopened = PendingResets(path)
    assert reopened.get("g", "gen-b") == PendingReset(
        previous_generation="gen-a", generation="gen-b"
    )
    assert reopened.get("g", "gen-c") is None  # another generation on disk: not this reset
    reopened.forget("g")
    assert not path.exists()
    assert PendingResets(path).get("g", "gen-b") is None


def test_a_second_reset_before_the_report_keeps_the_first_previous_generation(
    tmp_path: Path,
) -> None:
    resets = PendingResets(tmp_path / "resets.json")
    resets.note("g", "gen-a", "gen-b")
    resets.note("g", "gen-b", "gen-c")
    assert resets.get("g", "gen-c") == PendingReset(previous_generation="gen-a", generation="gen-c")
    # Back to the generation last reported: nothing is left to report.
    resets.note("g", "gen-c", "gen-a")
    assert resets.groups == {}


def test_an_unreadable_file_is_refused_with_the_remedy(tmp_path: Path) -> None:
    path = tmp_path / "resets.json"
    path.write_bytes(b"{not json")
    with pytest.raises(CorruptFileError, match="delete it"):
        PendingResets(path)
