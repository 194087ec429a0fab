"""``lcg.timestamps``: the one recorded format, what it reads, the reference's rendered forms."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


# ---- every year 0001-9999, one spelling (ADR 0150) -------------------------------------


@pytest.mark.parametrize(
    ("value", "recorded", "seconds"),
    [
        (datetime(1, 1, 1), "0001-01-01T00:00:00.000000Z", "0001-01-01 00:00:00"),
        (datetime(999, 1, 1), "0999-01-01T00:00:00.000000Z", "0999-01-01 00:00:00"),
        (
            datetime(9999, 12, 31, 23, 59, 59, 999_999),
            "9999-12-31T23:59:59.999999Z",
            "9999-12-31 23:59:59",
        ),
    ],
)
def test_years_below_1000_are_written_with_four_digits(
    value: datetime, recorded: str, seconds: str
) -> None:
    # ``strftime("%Y")`` wrote "1-01-01…", which fromisoformat (and every projection) refused.
    assert timestamps.to_text(value) == recorded
    assert timestamps.is_recorded(recorded)
    assert timestamps.parse(recorded) == value.replace(tzinfo=UTC)
    assert timestamps.render_seconds(value) == seconds
    assert timestamps.render_seconds_z(value) == seconds.replace(" ", "T") + "Z"


@pytest.mark.parametrize(
    ("legacy", "recorded"),
    [
        ("1-01-01T00:00:00.000000Z", "0001-01-01T00:00:00.000000Z"),
        ("999-01-01T00:00:00.000000Z", "0999-01-01T00:00:00.000000Z"),
        ("42-02-03T04:05:06.000007Z", "0042-02-03T04:05:06.000007Z"),
    ],
)
def test_the_unpadded_spelling_of_older_lines_is_read(legacy: str, recorded: str) -> None:
    assert not timestamps.is_recorded(legacy)
    assert timestamps.normalize(legacy) == recorded


@pytest.mark.parametrize(
    "raw", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", "0000-06-01T00:00:00Z"]
)
def test_values_outside_the_calendar_in_utc_are_value_errors(raw: str) -> None:
    # Not OverflowError: callers turn ValueError into -32602 with the field's name.
    with pytest.raises(ValueError):
        timestamps.parse(raw)


def test_aware_values_past_the_calendar_are_value_errors() -> None:
    late = datetime(9999, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=-1)))
    with pytest.raises(ValueError, match="0001-9999"):
        timestamps.to_text(late)


@pytest.mark.parametrize(
    "text",
    [
        "2023-02-29T00:00:00.000000Z",  # not a leap year
        "1900-02-29T00:00:00.000000Z",  # a century that is not a leap year
        "2024-04-31T00:00:00.000000Z",
        "2024-05-01T24:00:00.000000Z",
        "0000-01-01T00:00:00.000000Z",
        "2024-05-01T12:00:00.000000Z\n",
        "2024-05-01T12:00:00Z",
        "2024-05-01T12:00:00.000000+00:00",
        "\u0662\u0660\u0662\u0664-05-01T12:00:00.000000Z",  # Arabic-Indic digits
    ],
)
def test_the_recorded_pattern_refuses_all_but_the_one_spelling(text: str) -> None:
    assert not timestamps.is_recorded(text)


@pytest.mark.parametrize(
    "text",
    ["2024-02-29T00:00:00.000000Z", "2000-02-29T00:00:00.000000Z", "0004-02-29T23:59:59.999999Z"],
)
def test_the_recorded_pattern_takes_leap_days(text: str) -> None:
    assert timestamps.is_recorded(text)
    assert timestamps.to_text(timestamps.parse(text)) == text


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime.max))
def test_every_instant_is_written_in_the_recorded_pattern(value: datetime) -> None:
    text = timestamps.to_text(value)
    assert timestamps.is_recorded(text)
    assert timestamps.parse(text) == value.replace(tzinfo=UTC)


@given(st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 24))
def test_the_recorded_pattern_agrees_with_the_calendar(y: int, m: int, d: int, h: int) -> None:
    text = f"{y:04d}-{m:02d}-{d:02d}T{h:02d}:59:59.000000Z"
    try:
        datetime.fromisoformat(text)
    except ValueError:
        valid = False
    else:
        valid = True
    assert timestamps.is_recorded(text) is valid
