"""The page's markup builder (ADR 0224): text is escaped on its way into a page, in children
and attributes alike, unless it is markup the builder made; JSON for the page's scripts
cannot close its element; query words are marked in escaped text."""

from __future__ import annotations

import json
import re

import pytest

from lcg.ui.html import Html, el, esc, href, json_block, marked, page

HOSTILE = "<script>alert(1)</script> & \"quoted\" 'single'"


def test_children_and_attributes_are_escaped() -> None:
    made = el("a", HOSTILE, href=HOSTILE, title=HOSTILE, cls="file")
    assert "<script>" not in made
    assert made.count("&lt;script&gt;") == 3
    assert '"quoted"' not in made and "&quot;quoted&quot;" in made
    assert made.startswith('<a href="&lt;script&gt;') and made.endswith("</a>")
    # Markup the builder made is kept; the same text as a plain str is not.
    inner = el("b", "bold")
    assert el("p", inner) == "<p><b>bold</b></p>"
    assert el("p", str(inner)) == "<p>&lt;b&gt;bold&lt;/b&gt;</p>"
    assert esc(None) == "" and isinstance(esc("x"), Html)


def test_names_that_are_not_names_are_refused() -> None:
    with pytest.raises(ValueError):
        el("a onclick=x", "text")
    with pytest.raises(ValueError):
        el("a", "text", **{"on click": "x"})


def test_boolean_and_absent_attributes() -> None:
    assert el("input", name="q", autofocus=True, hidden=False, value=None) == (
        '<input name="q" autofocus>'
    )
    assert el("div", data_cell="g|n", cls="x") == '<div data-cell="g|n" class="x"></div>'


def test_json_for_a_script_cannot_end_it() -> None:
    block = json_block("graph-data", {"name": "</script><script>alert(1)</script>&"})
    body = block.removeprefix('<script type="application/json" id="graph-data">')
    body = body.removesuffix("</script>")
    assert "<" not in body and ">" not in body and "&" not in body
    assert json.loads(body) == {"name": "</script><script>alert(1)</script>&"}


def test_marked_words_are_in_escaped_text() -> None:
    out = marked("Oxygen <b>plant</b> oxygenates", ["oxygen", "plant"])
    assert out == (
        "<mark>Oxygen</mark> &lt;b&gt;<mark>plant</mark>&lt;/b&gt; <mark>oxygenates</mark>"
    )
    assert marked("<i>", []) == "&lt;i&gt;"


def test_a_page_loads_only_its_own_files() -> None:
    text = page(HOSTILE, el("p", HOSTILE), scripts=("graph.js",)).decode()
    assert "<script>alert" not in text
    sources = re.findall(r'(?:src|href)="([^"]*)"', text)
    assert all(s.startswith("/") or s == "data:," for s in sources), sources
    assert href("/source", group="g", file="notes/a b.md", tree=None) == (
        "/source?group=g&file=notes/a%20b.md"
    )
