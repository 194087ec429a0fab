"""``/health`` and ``/health.json``: ``lcg status`` as a page — per group its positions,
hydration, counts, extraction and vector backlog and damage; the embedder; the service's
state. ``app.js`` asks ``/health.json`` again (every 2 s while a backlog is moving, else
every 10 s) and writes its cells into the table (each ``td[data-cell]``)."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from lcg.ui.html import Html, el, href
from lcg.ui.site import Answer, Query, Site, html_answer, json_answer

__all__ = ["COLUMNS", "HealthData", "health_data", "health_json", "health_page", "state_badge"]

#: The table's columns: (heading, the status field that fills it).
COLUMNS: Final = (
    ("max seq", "max_seq"),
    ("applied", "applied_seq"),
    ("hydration", "hydration_status"),
    ("generation", "generation_status"),
    ("model", "embedding_model_status"),
    ("entities", "entity_count"),
    ("facts", "relationship_count"),
    ("episodes", "episode_count"),
    ("extraction backlog", "pending_episodes"),
    ("vector backlog", "vectors_pending"),
    ("damage", "damage"),
)


class HealthData(msgspec.Struct, kw_only=True):
    """``/health.json``: the service's state, the total backlog, and each cell's text
    (``"<group>|<field>"``)."""

    state: str
    reason: str | None = None
    backlog: int = 0
    embedder: str = ""
    cells: dict[str, str] = {}


def _damage(g: dict[str, Any]) -> str:
    said = [str(g["degraded_reason"])] if g.get("degraded_reason") else []
    said += [f"snapshot: {n}" for n in g.get("projection_repairs") or []]
    if g.get("reference_stream"):
        said.append(f"reference stream: {g['reference_stream'].get('note', '')}")
    return "; ".join(said) or "none"


def _cell(g: dict[str, Any], field: str) -> str:
    if field == "damage":
        return _damage(g)
    value = g.get(field)
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def health_data(site: Site) -> tuple[HealthData, dict[str, Any]]:
    """The health of the service and the status it gave (empty when it gave none)."""
    health = site.reads.call("health_check")
    status: dict[str, Any] = site.reads.call("knowledge_status") or {}
    groups: dict[str, Any] = status.get("wal_groups") or {}
    cells = {f"{gid}|{f}": _cell(g, f) for gid, g in groups.items() for _, f in COLUMNS}
    backlog = sum(
        int(g.get("pending_episodes") or 0) + int(g.get("vectors_pending") or 0)
        for g in groups.values()
    )
    model = status.get("embedding_model")
    data = HealthData(
        state=str(health.get("state") or "unknown"),
        reason=health.get("reason") or status.get("reason"),
        backlog=backlog,
        embedder=f"{model} ({status.get('embedding_dim')}-d)" if model else "-",
        cells=cells,
    )
    return data, status


def state_badge(data: HealthData) -> Html:
    """The state word, and the reason when there is one."""
    word = el("span", data.state, cls=f"state {data.state}", id="state")
    reason = el("span", f" — {data.reason}", id="reason") if data.reason else ""
    return el("p", "service: ", word, reason, id="health")


def health_page(site: Site, q: Query) -> Answer:
    """``/health``."""
    data, status = health_data(site)
    groups = sorted((status.get("wal_groups") or {}).keys())
    head = el("tr", el("th", "group"), *(el("th", h) for h, _ in COLUMNS))
    rows = [
        el(
            "tr",
            el("td", el("a", gid, href=href("/search", group=gid))),
            *(el("td", data.cells[f"{gid}|{f}"], data_cell=f"{gid}|{f}") for _, f in COLUMNS),
            cls="group",
            data_group=gid,
        )
        for gid in groups
    ]
    problems = [el("li", p) for p in status.get("problems") or []]
    body = [
        el("h1", "Health"),
        state_badge(data),
        el("p", "embedder: ", el("span", data.embedder, id="embedder")),
        el(
            "p",
            "backlog: ",
            el("span", f"{data.backlog:,}", id="backlog"),
            " (extraction and vectors; this page refreshes while it is not zero)",
        ),
        el("table", el("thead", head), el("tbody", *rows), id="groups"),
        el("ul", *problems, id="problems") if problems else "",
    ]
    return html_answer("Health", *body, scripts=("app.js",))


def health_json(site: Site, q: Query) -> Answer:
    """``/health.json``: what ``app.js`` refreshes the page with."""
    data, _ = health_data(site)
    return json_answer(data)
