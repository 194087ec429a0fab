"""Helpers the commands share: ids, clocks, name normalisation, timestamp parsing."""

from __future__ import annotations

import re
import unicodedata
import uuid
from datetime import datetime
from typing import Any

import msgspec

from lcg import timestamps
from lcg.errors import InvalidParamsError

__all__ = [
    "attributes_text",
    "new_uuid",
    "normalize_name",
    "parse_timestamp",
    "strip_control",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def new_uuid() -> str:
    """A fresh random uuid (decided by a command, recorded in its event)."""
    return str(uuid.uuid4())


def strip_control(text: str) -> str:
    """``text`` without ASCII control characters."""
    return _CONTROL.sub("", text)


def normalize_name(name: str) -> str:
    """The key names are matched by: NFKC, control characters removed, trimmed, lowercased,
    inner whitespace collapsed."""
    spaced = re.sub(r"[\t\n\r\v\f]", " ", name)
    text = unicodedata.normalize("NFKC", strip_control(spaced))
    return " ".join(text.split()).lower()


def parse_timestamp(raw: str, *, field: str) -> str:
    """Parse RFC 3339 or ``YYYY-MM-DD HH:MM:SS`` (as UTC) into RFC 3339 UTC with µs.

    ``InvalidParamsError`` (-32602) names ``field`` for text that is not a timestamp of years
    0001-9999 in UTC: what passes is what every projection can store (ADR 0150).
    """
    text = raw.strip()
    candidate = text.replace("Z", "+00:00").replace("z", "+00:00")
    try:
        if "T" in candidate or "t" in candidate:
            parsed = datetime.fromisoformat(candidate.replace("t", "T"))
        else:
            parsed = datetime.strptime(candidate, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise InvalidParamsError(
            f"{field} '{raw}' is not a valid RFC-3339 or 'YYYY-MM-DD HH:MM:SS' timestamp"
        ) from None
    try:
        return timestamps.to_text(parsed)  # naive (the space form, no offset) is UTC
    except ValueError:
        # An offset can carry year 1 or 9999 past the calendar's end in UTC (ADR 0150).
        raise InvalidParamsError(
            f"{field} '{raw}' is outside years 0001-9999 once converted to UTC"
        ) from None


def attributes_text(value: Any) -> str:
    """Attributes as the JSON object text rows store (non-objects become ``"{}"``)."""
    if isinstance(value, dict):
        return msgspec.json.encode(value, order="sorted").decode()
    return "{}"
