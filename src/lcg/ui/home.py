"""``/``: the workspace at a glance — its path, the service's state, each group with its
counts, and the most recently synced sources with their files, each a link to the file."""

from __future__ import annotations

from typing import Any, Final

from lcg.ui.health import health_data, state_badge
from lcg.ui.html import Html, el
from lcg.ui.site import Answer, Query, Site, html_answer
from lcg.ui.trees import file_link, list_sources, tree_files

__all__ = ["home"]

#: How many of the most recently synced sources the home page lists, and files of each.
RECENT_SOURCES: Final = 5
RECENT_FILES: Final = 20


def _groups_table(status: dict[str, Any], chunks: dict[str, int]) -> Html:
    groups = status.get("wal_groups") or {}
    head = el("tr", *(el("th", h) for h in ("group", "entities", "facts", "episodes", "chunks")))
    rows = []
    for gid in sorted(set(groups) | set(chunks)):
        g = groups.get(gid, {})
        counts = [g.get("entity_count"), g.get("relationship_count"), g.get("episode_count")]
        cells = [el("td", "-" if n is None else f"{n:,}", cls="count") for n in counts]
        cells.append(el("td", f"{chunks.get(gid, 0):,}", cls="count"))
        rows.append(el("tr", el("td", gid, cls="group-id"), *cells, cls="group", data_group=gid))
    return el("table", el("thead", head), el("tbody", *rows), id="groups")


def home(site: Site, q: Query) -> Answer:
    """``/``."""
    data, status = health_data(site)
    sources = list_sources(site, None)
    chunks: dict[str, int] = {}
    for s in sources:
        chunks[s.group_id] = chunks.get(s.group_id, 0) + s.chunks
    recent = sorted(sources, key=lambda s: s.synced_at or "", reverse=True)[:RECENT_SOURCES]
    items = []
    for s in recent:
        files, total = tree_files(site, s, RECENT_FILES)
        links = [el("li", file_link(s.group_id, f)) for f in files]
        more = (
            el("li", el("a", f"… and {total - len(files):,} more", href="/sources"), cls="more")
            if total > len(files)
            else ""
        )
        items.append(
            el(
                "li",
                el("span", s.source, cls="tree"),
                " ",
                el("span", f"[{s.group_id}] {s.files:,} files", cls="meta"),
                el("ul", *links, more, cls="files"),
                cls="source",
            )
        )
    body = [
        el("h1", str(site.workspace)),
        state_badge(data),
        el("h2", "Groups"),
        _groups_table(status, chunks),
        el("h2", "Recently synced sources"),
        el("ul", *items, id="recent-sources")
        if items
        else el("p", "no sources yet: `lcg ingest PATH` adds one", id="recent-sources"),
    ]
    return html_answer("Home", *body, scripts=("app.js",))
