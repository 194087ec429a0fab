"""``/quality``: the figures of the latest ``lcg eval`` reports (read where ``lcg eval``
writes them, ``<workspace>/.lcg/eval/reports``), each report's scores as an inline SVG bar
chart; "no eval report yet" when there is none. Files of the workspace, not the service:
the reports are never in the graph."""

from __future__ import annotations

from typing import Final

from lcg.errors import LcgError
from lcg.eval import Report, list_reports, load_report, reports_dir
from lcg.ui.html import Html, el
from lcg.ui.site import Answer, Query, Site, html_answer

__all__ = ["bar_chart", "quality_page"]

#: How many of the newest reports are shown.
REPORTS: Final = 5
_BAR: Final = 16
_GAP: Final = 6
_HEIGHT: Final = 160
_LABELS: Final = 150
# Counts, tokens, dollars and bytes are figures, not scores in [0, 1]: table only.
_NOT_SCORES: Final = ("decoys_served", "tokens", "usd", "bytes", "_served", "above_successor")


def _scores(metrics: dict[str, float]) -> list[tuple[str, float]]:
    return [
        (k, v)
        for k, v in metrics.items()
        if 0.0 <= v <= 1.0 and not any(s in k for s in _NOT_SCORES)
    ]


def bar_chart(scores: list[tuple[str, float]]) -> Html:
    """An SVG bar chart of scores in [0, 1]: one bar per score, its name beneath, turned."""
    width = max(1, len(scores)) * (_BAR + _GAP) + _GAP
    height = _HEIGHT + _LABELS
    parts: list[Html] = []
    for frac in (0.25, 0.5, 0.75, 1.0):
        y = _HEIGHT - round(frac * _HEIGHT)
        parts.append(el("line", x1=0, y1=y, x2=width, y2=y, cls="grid"))
    for i, (name, value) in enumerate(scores):
        x = _GAP + i * (_BAR + _GAP)
        h = max(2, round(value * _HEIGHT))
        kind = name.split(".", 1)[0]
        bar = el(
            "rect",
            el("title", f"{name}: {value:.3f}"),
            x=x,
            y=_HEIGHT - h,
            width=_BAR,
            height=h,
            cls=f"bar {kind}" + (" miss" if kind == "structural" and value < 1.0 else ""),
        )
        label = el(
            "text",
            name,
            x=x + _BAR // 2,
            y=_HEIGHT + 6,
            transform=f"rotate(60 {x + _BAR // 2} {_HEIGHT + 6})",
            cls="label",
        )
        parts += [bar, label]
    return el(
        "svg",
        *parts,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {width} {height}",
        width=width,
        height=height,
        role="img",
        cls="chart",
    )


def _report(report: Report, name: str) -> Html:
    rows = [
        el("tr", el("td", k), el("td", f"{v:.3f}", cls="count"))
        for k, v in sorted(report.metrics.items())
    ]
    head = (
        f"{report.stamp}: {report.backend} (model {report.model}), size {report.size}, "
        f"seeds {', '.join(map(str, report.seeds))}, embedder {report.embedder}, structural "
        + ("PASS" if report.structural_passed else "FAIL")
    )
    return el(
        "section",
        el("h2", head),
        el("p", name, cls="meta"),
        bar_chart(_scores(report.metrics)),
        el("table", el("tbody", *rows), cls="metrics"),
        cls="report",
    )


def quality_page(site: Site, q: Query) -> Answer:
    """``/quality``."""
    found = list_reports(reports_dir(site.workspace))[:REPORTS]
    sections: list[Html] = []
    for path in found:
        try:
            sections.append(_report(load_report(path), path.name))
        except LcgError as exc:
            sections.append(el("p", str(exc), cls="unreadable"))
    body = [
        el("h1", "Quality"),
        el("div", *sections, id="reports")
        if sections
        else el("p", "no eval report yet: `lcg eval run` writes one", id="no-reports"),
    ]
    return html_answer("Quality", *body)
