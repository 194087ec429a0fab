"""``lcg import-reference`` of a 7,300-line reference stream by two checkouts, paired.

    python bench/paired_import_reference.py BEFORE_SRC AFTER_SRC [--lines N] [--rounds R]

``BEFORE_SRC`` and ``AFTER_SRC`` are the ``src`` folders of two checkouts (say ``git worktree
add /tmp/before <commit>``). One synthetic reference workspace (``reference_stream.py``: the
reference's ingest templates, 768-d vectors) is written once, and a copy of it with one more
line that neither version maps (a read). Each round runs, for each version in turn (the order
alternating from round to round, so a drift of the machine's speed weighs on both alike):

1. ``lcg import-reference`` of the stream into an empty workspace: the whole command (reading,
   translating, writing the new stream, the catch-up that embeds and projects it);
2. the same on the copy: the command reads and translates, reports the line and writes
   nothing (exit 1): the part of the import that changed.

Each figure is the wall time of the whole command. Printed: each figure's median over the
rounds for both versions, the median of the per-round ratios AFTER / BEFORE (1.00 = the same;
under 1 the after version is faster), and whether both versions wrote the same events (every
field but the write time, the generation and the checksum over them). The hash embedder is a
TEST DOUBLE here (the same vector cost for both); nothing reads ``../shared``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
READ = '{"seq":%d,"ts":"2024-05-01T00:00:00.000000+00:00","db":"","cypher":"MATCH (n:Entity) RETURN n.name","params":{}}\n'  # noqa: E501


def _env(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "ANTHROPIC_"))}
    env.update({"PYTHONPATH": str(src), "LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"})
    return env


def _import(src: Path, ws: Path, source: Path, expect: int) -> float:
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "lcg", "-C", str(ws), "import-reference", str(source), "-s"],
        env=_env(src),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        raise RuntimeError(f"{src}: exit {done.returncode}: {done.stderr.decode()[-2000:]}")
    return elapsed


def _events(ws: Path) -> list[dict[str, Any]]:
    out = []
    for seg in sorted((ws / ".lcg" / "wal").glob("*/*.jsonl")):
        for raw in seg.read_text().splitlines():
            event = json.loads(raw)
            for volatile in ("ts", "gen", "crc32"):  # the checksum covers ts and gen
                event.pop(volatile, None)
            out.append(event)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the BEFORE checkout's src folder")
    parser.add_argument("after", type=Path, help="the AFTER checkout's src folder")
    parser.add_argument("--lines", type=int, default=7300, help="stream length")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (each runs both)")
    args = parser.parse_args()
    versions = {"before": args.before.resolve(), "after": args.after.resolve()}
    with tempfile.TemporaryDirectory(prefix="lcg-paired-import-") as tmp:
        root = Path(tmp)
        source = root / "reference"
        # reference_stream.py takes the templates from wal-fixtures/ (on pytest's path).
        fixtures = str(HERE.parent / "wal-fixtures")
        subprocess.run(
            [sys.executable, str(HERE / "reference_stream.py"), str(source), str(args.lines)],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": fixtures},
        )
        refused = root / "reference-refused"
        shutil.copytree(source, refused)
        gdir = refused / ".lcg" / "wal" / "liminis"
        with (gdir / "20240502_090000_bbbbbb_0000.jsonl").open("a") as fh:
            fh.write(READ % args.lines)
        figures: dict[str, dict[str, list[float]]] = {n: {} for n in versions}
        events: dict[str, list[dict[str, Any]]] = {}
        for round_no in range(args.rounds):
            order = list(versions) if round_no % 2 == 0 else list(reversed(versions))
            for name in order:
                ws = root / f"ws-{name}"
                row = {"import (whole command) s": _import(versions[name], ws, source, 0)}
                events.setdefault(name, _events(ws))
                row["read + translate only s"] = _import(versions[name], ws, refused, 1)
                for label, value in row.items():
                    figures[name].setdefault(label, []).append(value)
            print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{args.lines:,}-line reference stream, {args.rounds} rounds, hash embedder")
    print(f"{'figure':<34} {'before':>9} {'after':>9} {'after/before':>13}")
    for label in figures["before"]:
        b, a = figures["before"][label], figures["after"][label]
        ratio = statistics.median(x / y for x, y in zip(a, b, strict=True))
        mb, ma = statistics.median(b), statistics.median(a)
        print(f"{label:<34} {mb:>9.2f} {ma:>9.2f} {ratio:>13.2f}")
    same = events["before"] == events["after"]
    print(f"same events written: {'yes' if same else 'NO'} ({len(events['after'])} events)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
