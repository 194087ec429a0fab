"""``/entity/<uuid>?group=G``: an entity — name, summary, labels, attributes — its
neighbourhood drawn as a graph (``graph.js`` from the JSON embedded in the page; the same
JSON at ``/entity/<uuid>/graph.json``), its facts with their validity, and the episodes and
files that mention it, each a link to the text."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import msgspec

from lcg.ui.html import Html, el, href, json_block
from lcg.ui.neighbourhood import MAX_NODES, first_hop, neighbourhood
from lcg.ui.search import attributes, fact_item
from lcg.ui.site import Answer, Query, Site, html_answer, json_answer, not_found
from lcg.ui.trees import file_link

__all__ = ["declared_file", "entity_route", "find_entity"]

#: The most mentions listed.
MAX_MENTIONS: Final = 50
_GRAPH_JSON: Final = "/graph.json"


def find_entity(site: Site, uuid: str, group: str | None) -> dict[str, Any] | None:
    """The entity ``uuid`` (in ``group`` when given), with its mentions; ``None`` if none."""
    found = site.reads.call(
        "knowledge_get_entities_by_uuids",
        {"uuids": [uuid], "group_ids": [group] if group else None},
    )
    nodes: list[dict[str, Any]] = found["nodes"]
    return nodes[0] if nodes else None


def declared_file(attrs: dict[str, Any]) -> str | None:
    """The file that declares a document (``<source>/<path>``), ``None`` for other rows."""
    source, path = attrs.get("source"), attrs.get("path")
    if attrs.get("origin") != "declared" or not source or not path:
        return None
    return str(source) if source == path else f"{source}/{path}"


def _mentions(row: dict[str, Any], group: str) -> list[Html]:
    items: list[Html] = []
    declared = declared_file(attributes(row))
    if declared:
        items.append(el("li", "declared in ", file_link(group, declared), cls="declared"))
    seen: set[str] = set()
    pairs = zip(row.get("episode_uuids") or [], row.get("source_descriptions") or [], strict=False)
    for episode, description in pairs:
        if len(items) >= MAX_MENTIONS:
            break
        file, sep, _chunk = str(description).rpartition(":")
        if sep and file and "#" in _chunk:
            if file in seen:
                continue
            seen.add(file)
            items.append(el("li", file_link(group, file), cls="file-mention"))
        else:
            link = el("a", description or episode, href=href(f"/episode/{episode}", group=group))
            items.append(el("li", link, cls="episode-mention"))
    return items


def _relation(edge: dict[str, Any]) -> str:
    return str(edge.get("relation_type") or edge.get("name") or "")


def _attributes_list(attrs: dict[str, Any]) -> Html:
    items = [
        el("div", el("dt", key), el("dd", msgspec.json.encode(value).decode()))
        for key, value in sorted(attrs.items())
    ]
    return el("dl", *items, id="attributes")


def entity_route(site: Site, q: Query) -> Answer:
    """``/entity/<uuid>`` and ``/entity/<uuid>/graph.json``."""
    uuid = q.rest.removesuffix(_GRAPH_JSON)
    as_json = q.rest.endswith(_GRAPH_JSON)
    if not uuid or "/" in uuid:
        return not_found(f"no entity {q.rest}")
    group = q.get("group") or None
    first: dict[str, Any] | None = None
    if group:
        # The page names the group: the centre and its first hop are asked at once.
        with ThreadPoolExecutor(max_workers=1) as pool:
            hop = pool.submit(first_hop, site, uuid, group)
            row = find_entity(site, uuid, group)
            first = hop.result()
    else:
        row = find_entity(site, uuid, group)
    if row is None:
        return not_found(f"no entity {uuid}" + (f" in group {group}" if group else ""))
    data, own, far = neighbourhood(site, row, group, first)
    # A fact touching a superseded document is superseded (SUPERSEDES is not: it says so).
    superseded = frozenset(
        str(n["uuid"]) for n in [row, *far] if attributes(n).get("superseded_by")
    )
    if as_json:
        return json_answer(data)
    gid = group or str(row.get("group_id", ""))
    labels = [str(x) for x in row.get("labels") or [] if x != "Entity"]
    note = (
        el(
            "p",
            f"The graph shows {len(data.nodes)} nodes: the neighbourhood is larger "
            f"(capped at {MAX_NODES}).",
            id="graph-capped",
        )
        if data.capped
        else ""
    )
    mentions = _mentions(row, gid)
    body = [
        el("h1", str(row.get("name", "")), id="entity-name"),
        el("p", ", ".join(labels) or "Entity", id="labels"),
        el("p", str(row.get("summary") or "") or "(no summary)", id="summary"),
        el("h2", "Attributes"),
        _attributes_list(attributes(row)),
        el("h2", "Neighbourhood"),
        note,
        el("div", id="graph", data_centre=uuid),
        json_block("graph-data", data),
        el("h2", "Facts"),
        el(
            "ul",
            *(
                fact_item(r, frozenset() if _relation(r) == "SUPERSEDES" else superseded)
                for r in own
            ),
            id="facts",
        ),
        el("h2", "Mentioned in"),
        el("ul", *mentions, id="mentions") if mentions else el("p", "no mentions", id="mentions"),
    ]
    return html_answer(str(row.get("name", "Entity")), *body, scripts=("graph.js",))
