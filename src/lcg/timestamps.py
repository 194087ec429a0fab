"""Timestamps: one format in, one format out, and the reference's two rendered forms.

Every timestamp lcg records (events, sidecars, jobs, cassettes) is RFC 3339 UTC with
microseconds and a four-digit year, ``2024-05-01T12:00:00.000000Z`` (``to_text``, ``now``),
for every year 0001–9999 (``RECORDED_PATTERN`` matches exactly those texts). What it reads is
RFC 3339 / ISO 8601 (``parse``), a naive value taken as UTC, and the unpadded year lcg wrote
for years below 1000 before ADR 0150 (``1-01-01T…``). A value outside years 0001–9999 once
converted to UTC (``9999-12-31T23:59:59-01:00``) is a ``ValueError`` like any other bad text.
Where the reference's wire shows a database timestamp it renders ``YYYY-MM-DD HH:MM:SS``
(``render_seconds``) or, for the oldest episode in ``knowledge_status``,
``YYYY-MM-DDTHH:MM:SSZ`` (``render_seconds_z``).

This module imports nothing of lcg's (ADR 0116): every package may use it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

__all__ = [
    "RECORDED_PATTERN",
    "is_recorded",
    "normalize",
    "now",
    "parse",
    "render_seconds",
    "render_seconds_z",
    "to_text",
]

# Day-of-month by month, and 29 February in leap years only (Gregorian: every 4th year but
# centuries, every 400th century). ``[0-9]`` rather than ``\d``: ``\d`` matches every Unicode
# digit, which no parser downstream reads.
_D = "[0-9]"
_NON_LEAP_DAY: Final = (
    f"(?:0[13578]|1[02])-(?:0[1-9]|[12]{_D}|3[01])"
    f"|(?:0[469]|11)-(?:0[1-9]|[12]{_D}|30)"
    f"|02-(?:0[1-9]|1{_D}|2[0-8])"
)
_LEAP_YEAR: Final = f"(?:{_D}{_D}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
#: Exactly the texts ``to_text`` writes: every instant of years 0001–9999, UTC, microseconds.
#: Event payloads are validated against it when a line is decoded (``lcg.events.model``).
RECORDED_PATTERN: Final = (
    rf"\A(?!0000)(?:{_D}{{4}}-(?:{_NON_LEAP_DAY})|{_LEAP_YEAR}-02-29)"
    rf"T(?:[01]{_D}|2[0-3]):[0-5]{_D}:[0-5]{_D}\.{_D}{{6}}Z\Z"
)
_RECORDED: Final = re.compile(RECORDED_PATTERN)
# The spelling ``strftime("%Y")`` gave years below 1000 before ADR 0150: ``999-01-01T…``.
_UNPADDED_YEAR: Final = re.compile(r"([0-9]{1,3})(?=-[0-9]{2}-[0-9]{2}(?:[T t]|\Z))")


def _year(value: datetime) -> str:
    # ``strftime("%Y")`` leaves years below 1000 unpadded on glibc ("1", "999"), which
    # ``datetime.fromisoformat`` and RFC 3339 readers refuse: always four digits.
    return f"{value.year:04d}"


def _utc_naive(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value
    try:
        return value.astimezone(UTC).replace(tzinfo=None)
    except OverflowError:
        raise ValueError(f"{value.isoformat()} is outside years 0001-9999 in UTC") from None


def to_text(value: datetime) -> str:
    """``value`` (naive = UTC) as RFC 3339 UTC with microseconds: ``…T12:00:00.000000Z``.

    ``ValueError`` when an aware ``value`` falls outside years 0001–9999 in UTC.
    """
    value = _utc_naive(value)
    return _year(value) + value.strftime("-%m-%dT%H:%M:%S.%fZ")


def now() -> str:
    """The current time in the one recorded format (``to_text``)."""
    return to_text(datetime.now(UTC))


def is_recorded(text: str) -> bool:
    """Whether ``text`` is in the one recorded format (what ``to_text`` writes)."""
    return _RECORDED.match(text) is not None


def parse(text: str) -> datetime:
    """An RFC 3339 / ISO 8601 timestamp as an aware UTC datetime (naive = UTC).

    Also reads the unpadded year of lines written before ADR 0150 (``1-01-01T…``). Raises
    ``ValueError`` for text that is not a timestamp of years 0001–9999 in UTC; callers say
    which field it was.
    """
    stripped = text.strip()
    # ``datetime.fromisoformat`` takes an upper-case "Z" only; RFC 3339 allows either case.
    if stripped.endswith("z"):
        stripped = stripped[:-1] + "Z"
    legacy = _UNPADDED_YEAR.match(stripped)
    if legacy is not None:
        stripped = legacy.group(1).zfill(4) + stripped[legacy.end() :]
    parsed = datetime.fromisoformat(stripped)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text.strip()!r} is outside years 0001-9999 in UTC") from None


def normalize(text: str) -> str:
    """``text`` (RFC 3339 / ISO 8601) in the one recorded format; ``ValueError`` if it is not."""
    if _RECORDED.match(text) is not None:
        return text  # already recorded: the common case on replay, spared a parse
    return to_text(parse(text))


def render_seconds(value: datetime) -> str:
    """``value`` (naive = UTC) as the reference renders database times: ``YYYY-MM-DD HH:MM:SS``."""
    value = _utc_naive(value)
    return _year(value) + value.strftime("-%m-%d %H:%M:%S")


def render_seconds_z(value: datetime) -> str:
    """``value`` (naive = UTC) as ``YYYY-MM-DDTHH:MM:SSZ`` (seconds, UTC designator)."""
    value = _utc_naive(value)
    return _year(value) + value.strftime("-%m-%dT%H:%M:%SZ")
