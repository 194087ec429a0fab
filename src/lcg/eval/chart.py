"""A small PNG bar chart of a report's scores, written with ``zlib`` and ``struct`` alone.

One bar per score in [0, 1], left to right in ``chart_metrics`` order: structural checks
(green when perfect, red otherwise), extraction scores (blue), retrieval scores (orange).
Grid lines mark 0.25, 0.5, 0.75 and 1.0. The bar order is listed in the text summary's
metric table, so the chart needs no font.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

__all__ = ["bar_chart_png", "chart_metrics", "report_chart"]

_BAR: Final = 14
_GAP: Final = 6
_HEIGHT: Final = 200
_MARGIN: Final = 12
_BG: Final = (255, 255, 255)
_GRID: Final = (225, 225, 225)
_AXIS: Final = (120, 120, 120)
_COLOURS: Final = {
    "structural": (46, 160, 67),
    "structural-miss": (207, 34, 46),
    "extraction": (31, 111, 235),
    "retrieval": (219, 109, 40),
}
# Counts, tokens, dollars and bytes are not scores in [0, 1].
_SKIP: Final = ("decoys_served", "tokens", "usd", "bytes", "_served", "above_successor")


def chart_metrics(metrics: dict[str, float]) -> list[tuple[str, float]]:
    """The metrics a chart shows: every score in [0, 1], in the report's order."""
    return [
        (k, v) for k, v in metrics.items() if 0.0 <= v <= 1.0 and not any(s in k for s in _SKIP)
    ]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bar_chart_png(bars: list[tuple[float, tuple[int, int, int]]]) -> bytes:
    """PNG bytes of vertical bars (value in [0, 1], RGB colour), on a white background."""
    width = 2 * _MARGIN + max(1, len(bars)) * (_BAR + _GAP)
    height = _HEIGHT + 2 * _MARGIN
    pixels = [[_BG] * width for _ in range(height)]
    base = _MARGIN + _HEIGHT
    for frac in (0.25, 0.5, 0.75, 1.0):
        y = base - round(frac * _HEIGHT)
        for x in range(_MARGIN, width - _MARGIN):
            pixels[y][x] = _GRID
    for i, (value, colour) in enumerate(bars):
        x0 = _MARGIN + _GAP // 2 + i * (_BAR + _GAP)
        # A zero still shows a two-pixel stub, so a failed check is visible as red.
        top = min(base - 2, base - round(max(0.0, min(1.0, value)) * _HEIGHT))
        for y in range(top, base):
            for x in range(x0, x0 + _BAR):
                pixels[y][x] = colour
    for x in range(_MARGIN, width - _MARGIN):
        pixels[base][x] = _AXIS
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def report_chart(metrics: dict[str, float]) -> bytes:
    """The bar chart of a report's mean metrics (``Report.metrics``)."""
    bars = []
    for name, value in chart_metrics(metrics):
        group = name.split(".", 1)[0]
        if group == "structural":
            group = "structural" if value >= 1.0 else "structural-miss"
        bars.append((value, _COLOURS.get(group, _AXIS)))
    return bar_chart_png(bars)
