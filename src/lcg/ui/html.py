"""HTML built so that text can only ever be text: ``Html`` marks markup this module made, and
every other string that reaches a page is escaped on the way in.

``el("a", "Moon <b>", href="/x")`` escapes the child and the attribute; a child that is
``Html`` (another ``el``'s result) is kept as it is. No view writes markup by hand with a value
in it, so a file named ``<script>…`` shows as its name (the guard is the builder, not a list
of bad strings). JSON for the page's scripts goes through ``json_block``, which escapes the
characters that could end a ``<script>`` element.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import quote, urlencode

import msgspec

__all__ = [
    "Html",
    "el",
    "esc",
    "href",
    "join",
    "json_block",
    "marked",
    "page",
    "query_terms",
]

#: The nav bar: (label, path), on every page.
NAV: Final = (
    ("Home", "/"),
    ("Search", "/search"),
    ("Sources", "/sources"),
    ("Health", "/health"),
    ("Quality", "/quality"),
)
#: Elements with no closing tag.
_VOID: Final = frozenset({"br", "hr", "img", "input", "link", "meta"})
_NAME: Final = re.compile(r"^[a-z][a-z0-9-]*$")
_ATTR: Final = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]*$")


class Html(str):
    """Markup made by this module: kept as it is when it is a child of another element."""

    __slots__ = ()


def esc(value: object) -> Html:
    """``value`` as text: its ``&<>"'`` escaped (``Html`` is kept as it is)."""
    if isinstance(value, Html):
        return value
    return Html(html.escape("" if value is None else str(value), quote=True))


def join(children: Iterable[object]) -> Html:
    """The children one after another, each escaped unless it is ``Html``."""
    return Html("".join(esc(c) for c in children if c is not None))


def el(name: str, /, *children: object, **attrs: object) -> Html:
    """An element: ``name`` with escaped attributes (``cls`` is ``class``, ``data_x`` is
    ``data-x``; ``None`` and ``False`` leave an attribute out, ``True`` writes it bare) and
    escaped children."""
    if not _NAME.match(name):
        raise ValueError(f"not an element name: {name!r}")
    parts = [name]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        attr = "class" if key == "cls" else key.rstrip("_").replace("_", "-")
        if not _ATTR.match(attr):
            raise ValueError(f"not an attribute name: {attr!r}")
        parts.append(attr if value is True else f'{attr}="{esc(value)}"')
    opening = f"<{' '.join(parts)}>"
    if name in _VOID:
        return Html(opening)
    return Html(f"{opening}{join(children)}</{name}>")


def href(path: str, **params: str | int | None) -> str:
    """A URL of this page: ``path`` (its characters outside the URL's safe set quoted) and
    the parameters that are not ``None``."""
    kept = {k: v for k, v in params.items() if v is not None and v != ""}
    url = quote(path, safe="/")
    return f"{url}?{urlencode(kept, safe='/', quote_via=quote)}" if kept else url


def json_block(element_id: str, value: object) -> Html:
    """A ``<script type="application/json">`` holding ``value`` (data, never run: the page's
    policy runs only its own files); ``<``, ``>`` and ``&`` written as ``\\u`` escapes, so
    nothing in it can close the element."""
    text = msgspec.json.encode(value).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Html(f'<script type="application/json" id="{esc(element_id)}">{text}</script>')


_STOP: Final = frozenset(
    "a an and are as at be by did do does for from has have how i in is it of on or that the "
    "this to was were what when where which who why will with".split()
)


def query_terms(query: str) -> list[str]:
    """The words of a query worth marking: lower-cased, de-duplicated, stop words left out."""
    words = [w.lower() for w in re.findall(r"\w+", query)]
    return [w for w in dict.fromkeys(words) if w not in _STOP and len(w) > 1]


def marked(text: str, terms: list[str]) -> Html:
    """``text`` escaped, with each word starting with a query term in ``<mark>``."""
    if not terms:
        return esc(text)
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, terms)) + r")\w*", re.I)
    out: list[str] = []
    last = 0
    for m in pattern.finditer(text):
        out.append(esc(text[last : m.start()]))
        out.append(el("mark", m.group(0)))
        last = m.end()
    out.append(esc(text[last:]))
    return Html("".join(out))


def page(title: str, *body: object, scripts: Iterable[str] = ()) -> bytes:
    """A whole page: the head (its own stylesheet, ``scripts`` deferred), the nav bar and
    ``body``; UTF-8 bytes."""
    nav = el("nav", *(el("a", label, href=path) for label, path in NAV), id="nav")
    head = join(
        [
            Html('<meta charset="utf-8">'),
            el("meta", name="viewport", content="width=device-width, initial-scale=1"),
            el("title", f"{title} · lcg"),
            el("link", rel="stylesheet", href="/assets/app.css"),
            # An empty icon of its own: else the browser asks for /favicon.ico (a 404, logged).
            el("link", rel="icon", href="data:,"),
            *(el("script", src=f"/assets/{s}", defer=True) for s in scripts),
        ]
    )
    doc = "<!doctype html>" + el(
        "html", el("head", head), el("body", nav, el("main", *body)), lang="en"
    )
    return doc.encode("utf-8")
