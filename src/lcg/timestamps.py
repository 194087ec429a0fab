"""Timestamps: one format in, one format out, and the reference's two rendered forms.

Every timestamp lcg records (events, sidecars, jobs, cassettes) is RFC 3339 UTC with
microseconds, ``2024-05-01T12:00:00.000000Z`` (``to_text``, ``now``). What it reads is RFC 3339
/ ISO 8601 (``parse``), a naive value taken as UTC. Where the reference's wire shows a database
timestamp it renders ``YYYY-MM-DD HH:MM:SS`` (``render_seconds``) or, for the oldest episode in
``knowledge_status``, ``YYYY-MM-DDTHH:MM:SSZ`` (``render_seconds_z``).

This module imports nothing of lcg's (ADR 0116): every package may use it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

__all__ = ["normalize", "now", "parse", "render_seconds", "render_seconds_z", "to_text"]

_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%fZ"


def to_text(value: datetime) -> str:
    """``value`` (naive = UTC) as RFC 3339 UTC with microseconds: ``…T12:00:00.000000Z``."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.strftime(_FORMAT)


def now() -> str:
    """The current time in the one recorded format (``to_text``)."""
    return to_text(datetime.now(UTC))


def parse(text: str) -> datetime:
    """An RFC 3339 / ISO 8601 timestamp as an aware UTC datetime (naive = UTC).

    Raises ``ValueError`` for text that is not one; callers say which field it was.
    """
    stripped = text.strip()
    # ``datetime.fromisoformat`` takes an upper-case "Z" only; RFC 3339 allows either case.
    if stripped.endswith("z"):
        stripped = stripped[:-1] + "Z"
    parsed = datetime.fromisoformat(stripped)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def normalize(text: str) -> str:
    """``text`` (RFC 3339 / ISO 8601) in the one recorded format; ``ValueError`` if it is not."""
    return to_text(parse(text))


def render_seconds(value: datetime) -> str:
    """``value`` (naive = UTC) as the reference renders database times: ``YYYY-MM-DD HH:MM:SS``."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%d %H:%M:%S")


def render_seconds_z(value: datetime) -> str:
    """``value`` (naive = UTC) as ``YYYY-MM-DDTHH:MM:SSZ`` (seconds, UTC designator)."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")
