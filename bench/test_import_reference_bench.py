"""``lcg import-reference`` of a 7,300-line reference stream (issue 27, ADR 0194).

Run by ``make bench``. ``reference_stream.py`` writes a reference workspace from the
reference's ingest templates with 768-d vectors (``LCG_BENCH_REFERENCE_LINES`` lines, default
7,300); the import runs in this process on the hash embedder (a TEST DOUBLE: the cost measured
is reading, parsing, the in-memory model and writing the stream, then the catch-up's graph and
text writes). Printed: lines/s of the translation alone (the same stream with one unmappable
line added: read and reported, nothing written), of the whole import, and the resident memory
after it. Nothing about time is asserted; the paired before/after ratio is
``bench/paired_import_reference.py``.
"""

from __future__ import annotations

import os
import resource
import shutil
import time
from pathlib import Path

import pytest
from reference_stream import write_reference_stream

from lcg.config import Config
from lcg.ingest import import_reference

pytestmark = pytest.mark.bench

READ = (
    '{"seq":%d,"ts":"2024-05-01T00:00:00.000000+00:00","db":"","cypher":'
    '"MATCH (n:Entity) RETURN n.name","params":{}}\n'
)


def test_import_of_a_7300_line_reference_stream(tmp_path: Path) -> None:
    lines = int(os.environ.get("LCG_BENCH_REFERENCE_LINES", "7300"))
    source = tmp_path / "reference"
    n = write_reference_stream(source, lines)
    refused = tmp_path / "refused"
    shutil.copytree(source, refused)
    with (refused / ".lcg/wal/liminis/20240502_090000_bbbbbb_0000.jsonl").open("a") as fh:
        fh.write(READ % n)
    env = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"}
    for ws in ("ws", "ws-refused"):
        (tmp_path / ws).mkdir()

    started = time.perf_counter()
    dry = import_reference(Config.from_env(tmp_path / "ws-refused", env=env), refused)
    translate = time.perf_counter() - started
    assert not dry.written and dry.unmapped_total == 1

    started = time.perf_counter()
    result = import_reference(Config.from_env(tmp_path / "ws", env=env), source)
    whole = time.perf_counter() - started
    assert result.success and result.written and result.unmapped_total == 0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    g = result.groups[0]
    print(
        f"\nimport-reference, {n:,} lines ({g.entities} entities, {g.edges} edges, "
        f"{g.episodes} episodes): translate only {translate:.2f} s ({n / translate:,.0f} "
        f"lines/s), whole import {whole:.2f} s ({n / whole:,.0f} lines/s), "
        f"peak RSS {rss_mb:.0f} MB"
    )
