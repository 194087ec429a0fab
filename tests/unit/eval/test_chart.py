"""The hand-written PNG: a valid file whose pixels show the bars."""

from __future__ import annotations

import struct
import zlib

from lcg.eval.chart import bar_chart_png, chart_metrics


def _decode(png: bytes) -> tuple[int, int, bytes]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(png):
        (n,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + n]
        (crc,) = struct.unpack(">I", png[pos + 8 + n : pos + 12 + n])
        assert crc == zlib.crc32(kind + data)
        if kind == b"IHDR":
            width, height = struct.unpack(">II", data[:8])
        if kind == b"IDAT":
            idat += data
        pos += 12 + n
    return width, height, zlib.decompress(idat)


def test_png_is_valid_and_bars_have_their_heights() -> None:
    png = bar_chart_png([(1.0, (255, 0, 0)), (0.5, (0, 0, 255)), (0.0, (0, 255, 0))])
    width, height, raw = _decode(png)
    stride = 1 + 3 * width
    assert len(raw) == stride * height

    def column(x: int) -> int:
        return sum(
            1
            for y in range(height)
            if raw[y * stride + 1 + 3 * x : y * stride + 4 + 3 * x]
            in (b"\xff\x00\x00", b"\x00\x00\xff", b"\x00\xff\x00")
        )

    first, second, third = (12 + 3 + i * 20 + 5 for i in range(3))
    assert column(first) == 200
    assert column(second) == 100
    assert column(third) == 2  # a zero still shows a stub


def test_chart_keeps_scores_only() -> None:
    shown = chart_metrics(
        {
            "structural.verify_clean": 1.0,
            "extraction.input_tokens": 5000.0,
            "extraction.facts_f1": 0.5,
            "retrieval.withdrawn_served": 0.0,
        }
    )
    assert shown == [("structural.verify_clean", 1.0), ("extraction.facts_f1", 0.5)]
