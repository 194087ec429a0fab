"""Relative time expressions in a query, resolved to date windows around the asking time.

Passage search turns "last Saturday", "two months ago", "in May", "yesterday", "last week",
"the past 3 days" into windows of dates (``[start, end)``, UTC) relative to the asking time.
Passages whose reference time falls in or near a window get a soft bonus (never a filter:
the words may describe the time of something else). English only; unrecognised phrasing
resolves to nothing, which leaves the ranking as it was.

Independently of the words, ``recency_prior`` halves a bonus for every ``half_life`` days a
passage lies before the asking time (ADR 0094).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import islice
from typing import Final

# Times are read as everything in lcg reads them (one parser, in ``lcg.timestamps``).
from lcg.timestamps import parse as parse_time

__all__ = ["Window", "parse_time", "recency_prior", "resolve_windows", "time_prior"]

Window = tuple[datetime, datetime]

_NUMBERS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "several": 3,
}
_MONTHS: Final = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_WEEKDAYS: Final = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUM: Final = r"(\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"
_UNIT_DAYS: Final = {"day": 1, "week": 7, "month": 30, "year": 365}

_AGO: Final = re.compile(rf"\b{_NUM}\s+(day|week|month|year)s?\s+ago\b")
_PAST: Final = re.compile(rf"\b(?:past|last|previous)\s+{_NUM}\s+(day|week|month|year)s?\b")
_LAST_UNIT: Final = re.compile(r"\b(?:last|previous)\s+(week|month|year|weekend)\b")
_WEEKDAY: Final = re.compile(r"\b(?:last|on|this|past)\s+(" + "|".join(_WEEKDAYS) + r")\b")
_MONTH: Final = re.compile(
    r"\b(?:in|during|since|early|late|mid|of)\s+(" + "|".join(_MONTHS) + r")\b"
)
_MAY_MONTH: Final = re.compile(r"\b(?:in|during|of)\s+may\s*(?:\d|$|[,.?!])")
_DAY: Final = timedelta(days=1)
#: Time expressions read from one query at most.
_MAX_EXPRESSIONS: Final = 16


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def resolve_windows(query: str, now: datetime) -> list[Window]:
    """The date windows the relative time expressions of ``query`` name, relative to ``now``.

    Distinct windows, from the first 16 expressions. Asked within a year of the calendar's
    ends (years 1 and 9999) a window may not exist: it and the expressions after it are left
    out.
    """
    found: dict[Window, None] = {}
    try:
        # At most _MAX_EXPRESSIONS are read: a query is written by anyone (a model, a script),
        # and every window costs each candidate passage a comparison.
        for window in islice(_windows(_shrink(query), _midnight(now)), _MAX_EXPRESSIONS):
            found.setdefault(window)
    except (OverflowError, ValueError):
        pass  # the windows before the one that fell off the calendar still count
    return list(found)


def _shrink(query: str) -> str:
    return " ".join(query.casefold().split())


def _windows(text: str, today: datetime) -> Iterator[Window]:
    if re.search(r"\byesterday\b", text):
        yield (today - _DAY, today)
    for m in _AGO.finditer(text):
        n, unit = _count(m.group(1)), _UNIT_DAYS[m.group(2)]
        center = today - timedelta(days=n * unit)
        # "two months ago" is loose: half a unit either side (at least a day).
        half = timedelta(days=max(1.0, unit / 2))
        yield (center - half, center + half + _DAY)
    for m in _PAST.finditer(text):
        n, unit = _count(m.group(1)), _UNIT_DAYS[m.group(2)]
        yield (today - timedelta(days=n * unit), today + _DAY)
    for m in _LAST_UNIT.finditer(text):
        unit_name = m.group(1)
        if unit_name in ("week", "weekend"):
            monday = today - timedelta(days=today.weekday())
            yield (monday - 7 * _DAY, monday)
        elif unit_name == "month":
            first = today.replace(day=1)
            prev = (first - _DAY).replace(day=1)
            yield (prev, first)
        else:
            yield (
                today.replace(year=today.year - 1, month=1, day=1),
                today.replace(month=1, day=1),
            )
    for m in _WEEKDAY.finditer(text):
        target = _WEEKDAYS.index(m.group(1))
        back = (today.weekday() - target) % 7 or 7
        day = today - timedelta(days=back)
        yield (day, day + _DAY)
    # "may" is mostly the verb: the month only where a date or the end of a clause follows.
    may_is_month = _MAY_MONTH.search(text) is not None
    for m in _MONTH.finditer(text):
        month = _MONTHS.index(m.group(1)) + 1
        if m.group(1) == "may" and not may_is_month:
            continue
        year = today.year if month <= today.month else today.year - 1
        start = today.replace(year=year, month=month, day=1)
        end = (
            start.replace(year=year + 1, month=1) if month == 12 else start.replace(month=month + 1)
        )
        yield (start, end)


def time_prior(when: datetime, windows: list[Window]) -> float:
    """1 inside a window, decaying with the distance outside it (scale: the window's width)."""
    best = 0.0
    for start, end in windows:
        if start <= when < end:
            return 1.0
        width = max((end - start).total_seconds(), 3 * 86400.0)
        gap = (start - when) if when < start else (when - end)
        best = max(best, 1.0 / (1.0 + (gap.total_seconds() / width) ** 2))
    return best


def recency_prior(when: datetime, now: datetime, half_life_days: float) -> float:
    """1 at the asking time, halved every ``half_life_days`` before it; 0 when the half-life is 0.

    A passage referenced after ``now`` (only possible without ``as_of``) counts as new.
    """
    if half_life_days <= 0:
        return 0.0
    age_days = max(0.0, (now - when).total_seconds() / 86400.0)
    return float(2.0 ** (-age_days / half_life_days))
