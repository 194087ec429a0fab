"""``lcg.timestamps``: the one recorded format, what it reads, the reference's rendered forms."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from lcg import timestamps

RECORDED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def test_now_is_the_recorded_format_in_utc() -> None:
    before = datetime.now(UTC)
    text = timestamps.now()
    assert RECORDED.fullmatch(text)
    assert before - timedelta(seconds=1) <= timestamps.parse(text) <= datetime.now(UTC)


@pytest.mark.parametrize(
    ("raw", "recorded"),
    [
        ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00.000000Z"),
        ("2024-05-01t12:00:00.5z", "2024-05-01T12:00:00.500000Z"),
        ("2024-05-01T14:00:00+02:00", "2024-05-01T12:00:00.000000Z"),
        ("2024-05-01T12:00:00.123456", "2024-05-01T12:00:00.123456Z"),  # naive = UTC
        (" 2024-05-01 12:00:00 ", "2024-05-01T12:00:00.000000Z"),
        ("2024-05-01T12:00:00.000000Z", "2024-05-01T12:00:00.000000Z"),  # a fixed point
    ],
)
def test_normalize(raw: str, recorded: str) -> None:
    assert timestamps.normalize(raw) == recorded
    assert timestamps.parse(raw).tzinfo is UTC


@pytest.mark.parametrize("raw", ["", "yesterday", "2024-13-01T00:00:00Z", "12:00"])
def test_parse_refuses_what_is_not_a_timestamp(raw: str) -> None:
    with pytest.raises(ValueError):
        timestamps.parse(raw)


def test_to_text_converts_aware_values_to_utc() -> None:
    plus_two = datetime(2024, 5, 1, 14, 0, 0, 7, tzinfo=timezone(timedelta(hours=2)))
    assert timestamps.to_text(plus_two) == "2024-05-01T12:00:00.000007Z"
    assert timestamps.to_text(datetime(2024, 5, 1, 12)) == "2024-05-01T12:00:00.000000Z"


def test_the_reference_rendered_forms() -> None:
    naive = datetime(2024, 5, 1, 12, 3, 4, 999_999)  # database values are naive UTC
    assert timestamps.render_seconds(naive) == "2024-05-01 12:03:04"
    assert timestamps.render_seconds_z(naive) == "2024-05-01T12:03:04Z"
    aware = naive.replace(tzinfo=timezone(timedelta(hours=-1)))
    assert timestamps.render_seconds(aware) == "2024-05-01 13:03:04"
    assert timestamps.render_seconds_z(aware) == "2024-05-01T13:03:04Z"
