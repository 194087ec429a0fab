"""``/``: the workspace at a glance — its path, the service's state, each group with its
counts, and the most recently synced sources with their files, each a link to the file.

The files shown are those of each group's newest episodes (``knowledge_get_episodes``, a
bounded read), so a tree of 10,000 chunks costs the page what a small one does; the reads
are asked at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from lcg.errors import LcgError
from lcg.ui.health import health_data, state_badge
from lcg.ui.html import Html, el, href
from lcg.ui.site import Answer, Query, Site, html_answer
from lcg.ui.trees import file_link, list_sources, recent_files, source_of

__all__ = ["home"]

#: How many of the most recently synced sources the home page lists, and files of each.
RECENT_SOURCES: Final = 5
RECENT_FILES: Final = 20
#: The newest episodes of a group read to find its recent files.
RECENT_EPISODES: Final = 200


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
    unavailable = ""
    with ThreadPoolExecutor(max_workers=2) as pool:
        health_future = pool.submit(health_data, site)
        try:
            sources = list_sources(site, None)
        except LcgError as exc:  # a degraded service still says its state and counts
            sources, unavailable = [], f"sources unavailable: {exc}"
        recent = sorted(sources, key=lambda s: s.synced_at or "", reverse=True)[:RECENT_SOURCES]
        groups = sorted({s.group_id for s in recent})
        by_group = dict(
            zip(
                groups,
                pool.map(lambda g: recent_files(site, g, RECENT_EPISODES), groups),
                strict=True,
            )
        )
        data, status = health_future.result()
    chunks: dict[str, int] = {}
    for s in sources:
        chunks[s.group_id] = chunks.get(s.group_id, 0) + s.chunks
    items = []
    for s in recent:
        mine = [s2 for s2 in sources if s2.group_id == s.group_id]
        files = [f for f in by_group[s.group_id] if source_of(mine, f) is s][:RECENT_FILES]
        links = [el("li", file_link(s.group_id, f)) for f in files]
        rest = s.files - len(files)
        more = (
            el(
                "li",
                el("a", f"… {rest:,} more", href=href("/sources", group=s.group_id, tree=s.prefix)),
                cls="more",
            )
            if rest > 0
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
        el("p", unavailable, id="sources-unavailable") if unavailable else "",
        el("ul", *items, id="recent-sources")
        if items
        else el("p", "no sources yet: `lcg ingest PATH` adds one", id="recent-sources"),
    ]
    return html_answer("Home", *body, scripts=("app.js",))
