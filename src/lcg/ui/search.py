"""``/search?q=Q&group=G``: passages (file, heading path, the query's words marked), entities
and facts — the same calls as ``lcg search`` with its defaults (``num_results`` 5, the
service's own similarity floor), so the page and the terminal show the same hits."""

from __future__ import annotations

from typing import Any, Final

from lcg.events import attributes_of, chunk_file
from lcg.ingest import heading_of
from lcg.ui.html import Html, el, href, marked, query_terms
from lcg.ui.site import Answer, Query, Site, html_answer
from lcg.ui.trees import file_link

__all__ = ["attributes", "entity_link", "fact_item", "passage_file", "search_page", "validity"]

#: ``lcg search``'s default number of hits.
DEFAULT_N: Final = 5
#: The most characters of a passage shown in a hit.
_SNIPPET: Final = 600


def attributes(row: dict[str, Any]) -> dict[str, Any]:
    """A row's attributes as a mapping (a read gives them as JSON text)."""
    raw = row.get("attributes")
    return raw if isinstance(raw, dict) else attributes_of(raw)


def passage_file(row: dict[str, Any]) -> str:
    """The file a passage is a chunk of (its ``source_description`` is ``<file>:<chunk id>``)."""
    return chunk_file(str(row.get("name", "")), str(row.get("source_description", ""))) or ""


def entity_link(row: dict[str, Any], group: str | None = None) -> Html:
    """A link to an entity's page."""
    gid = group or str(row.get("group_id", ""))
    return el("a", str(row.get("name", "")), href=href(f"/entity/{row.get('uuid', '')}", group=gid))


def validity(row: dict[str, Any], superseded: frozenset[str] = frozenset()) -> str:
    """``ended`` (an end of validity), ``superseded`` (a successor named, or an end that is a
    document in ``superseded``), else ``current``."""
    if row.get("invalid_at"):
        return "ended"
    ends = {row.get("source_node_uuid"), row.get("target_node_uuid")}
    if attributes(row).get("superseded_by") or ends & superseded:
        return "superseded"
    return "current"


def fact_item(row: dict[str, Any], superseded: frozenset[str] = frozenset()) -> Html:
    """A fact as a list item: its sentence, relation type and validity (``superseded``: the
    entities another document supersedes)."""
    state = validity(row, superseded)
    relation = str(row.get("relation_type") or row.get("name") or "")
    since = f" since {row['valid_at']}" if row.get("valid_at") else ""
    until = f" until {row['invalid_at']}" if row.get("invalid_at") else ""
    return el(
        "li",
        el("span", str(row.get("fact", "")), cls="fact-text"),
        " ",
        el("span", relation, cls="relation"),
        " ",
        el("span", state, cls=f"validity {state}", title=f"{state}{since}{until}"),
        cls="fact",
    )


def _passage(row: dict[str, Any], terms: list[str]) -> Html:
    content = str(row.get("content", ""))
    heading = heading_of(content)
    body = content.partition("\n\n")[2] if heading else content
    text = " ".join(body.split())
    if len(text) > _SNIPPET:
        text = text[:_SNIPPET].rsplit(" ", 1)[0] + " …"
    path = passage_file(row)
    gid = str(row.get("group_id", ""))
    where = file_link(gid, path) if path else el("span", str(row.get("source_description", "")))
    score = float(row.get("fused_score", row.get("score", 0.0)))
    return el(
        "li",
        where,
        " ",
        el("span", heading, cls="heading"),
        " ",
        el("span", f"rank {score:.2f} [{gid}]", cls="meta"),
        el("p", marked(text, terms), cls="text"),
        cls="passage",
    )


def search_page(site: Site, q: Query) -> Answer:
    """``/search``."""
    text = q.get("q")
    group = q.get("group") or site.group
    n = q.count("n", DEFAULT_N, 1, 100)
    form = el(
        "form",
        el(
            "input",
            type="search",
            name="q",
            value=text,
            placeholder="what to look for",
            autofocus=True,
        ),
        el("input", type="text", name="group", value=group or "", placeholder="every group"),
        el("button", "Search", type="submit"),
        id="search-form",
        action="/search",
        method="get",
    )
    body: list[object] = [el("h1", "Search"), form]
    if text:
        groups = [group] if group else None
        params: dict[str, Any] = {"query": text, "group_ids": groups, "num_results": n}
        found = site.reads.call("knowledge_search_passages", params)
        nodes = site.reads.call("knowledge_find_entities", params)["nodes"]
        facts = site.reads.call("knowledge_find_relationships", params)["facts"]
        terms = query_terms(text)
        passages = [_passage(r, terms) for r in found["passages"]]
        floor = int(found.get("filtered_by_min_score", 0))
        body += [
            el("h2", "Passages"),
            el("ol", *passages, id="passages")
            if passages
            else el("p", "no passage matches", id="passages"),
            el(
                "p",
                f"{floor} of the best passages left out: similarity under the floor",
                cls="meta",
            )
            if floor
            else "",
            el("h2", "Entities"),
            el(
                "ul",
                *(el("li", entity_link(r), " ", _labels(r), cls="entity") for r in nodes),
                id="entities",
            ),
            el("h2", "Facts"),
            el("ul", *(fact_item(r) for r in facts), id="facts"),
        ]
    return html_answer(f"Search {text}" if text else "Search", *body)


def _labels(row: dict[str, Any]) -> Html:
    labels = [str(x) for x in row.get("labels") or [] if x != "Entity"]
    return el("span", ", ".join(labels), cls="labels") if labels else Html("")
