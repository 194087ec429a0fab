"""What every view is given and gives back: the ``Site`` (the workspace and its reads), a
request's ``Query``, and an ``Answer`` (status, type, body)."""

from __future__ import annotations

from pathlib import Path
from typing import Final, NamedTuple

import msgspec

from lcg.ui.html import el, page
from lcg.ui.reads import Reads

__all__ = ["HTML", "JSON", "Answer", "Query", "Site", "html_answer", "json_answer", "not_found"]

HTML: Final = "text/html; charset=utf-8"
JSON: Final = "application/json"


class Site(NamedTuple):
    """The workspace the page shows and its one way to it."""

    workspace: Path
    reads: Reads
    #: The group searches and files default to (``lcg ui --group``); ``None``: every group.
    group: str | None = None


class Answer(NamedTuple):
    """A view's answer."""

    status: int
    content_type: str
    body: bytes


class Query:
    """A request's query parameters (the first of each name) and the rest of its path."""

    __slots__ = ("params", "rest")

    def __init__(self, params: dict[str, str], rest: str = "") -> None:
        """Parameters and the path after the view's own (``/entity/<rest>``)."""
        self.params = params
        self.rest = rest

    def get(self, name: str, default: str = "") -> str:
        """The parameter ``name``, stripped; ``default`` when absent or blank."""
        value = self.params.get(name, "").strip()
        return value or default

    def count(self, name: str, default: int, low: int, high: int) -> int:
        """The parameter ``name`` as a count from ``low`` to ``high`` (clamped);
        ``default`` when absent or not a number."""
        try:
            value = int(self.params.get(name, ""))
        except ValueError:
            return default
        return max(low, min(high, value))


def html_answer(
    title: str, *body: object, status: int = 200, scripts: tuple[str, ...] = ()
) -> Answer:
    """A page."""
    return Answer(status, HTML, page(title, *body, scripts=scripts))


def json_answer(value: object) -> Answer:
    """A JSON answer (``value`` a msgspec Struct or builtins)."""
    return Answer(200, JSON, msgspec.json.encode(value))


def not_found(what: str) -> Answer:
    """A 404 page saying what was not found."""
    return html_answer(
        "Not found", el("h1", "Not found"), el("p", what, id="not-found"), status=404
    )
