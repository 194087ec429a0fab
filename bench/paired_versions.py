"""Replay and query cost of two checkouts of lcg, paired in one command.

    python bench/paired_versions.py BEFORE_SRC AFTER_SRC [--events N] [--rounds R]

``BEFORE_SRC`` and ``AFTER_SRC`` are the ``src`` folders of two checkouts (say ``git worktree
add /tmp/before <commit>``). One synthetic stream (``synth_stream.py`` of the BEFORE checkout,
so both versions can read it) is written once and copied into a workspace per version. Each
round runs, for each version in turn (the order alternating from round to round, so a drift of
the machine's speed weighs on both alike):

1. ``lcg replay --group synthetic --force-clear`` in a subprocess: the wall time of the whole
   command (the interpreter's start and the open included, the same for both);
2. ``lcg serve`` on the replayed workspace, 300 episodes added once, then a fixed list of
   queries over the socket, interleaved: ``knowledge_find_entities``,
   ``knowledge_find_relationships`` and ``knowledge_search_passages`` (200 of each, the
   passages with ``min_score`` 0); the p50 of each method's round trip.

Printed: each figure's median over the rounds for both versions and the median of the
per-round ratios AFTER / BEFORE (1.00 = the same; under 1 the after version is faster). The
hash embedder is a TEST DOUBLE here (the same vector cost for both); nothing reads
``../shared``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GROUP = "synthetic"
METHODS = ("knowledge_find_entities", "knowledge_find_relationships", "knowledge_search_passages")


def _env(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "ANTHROPIC_"))}
    env.update({"PYTHONPATH": str(src), "LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"})
    return env


def _write_stream(before: Path, wal: Path, events: int) -> None:
    script = before.parent / "bench" / "synth_stream.py"
    env = _env(before)
    env["PYTHONPATH"] = f"{before}{os.pathsep}{script.parent}"
    subprocess.run([sys.executable, str(script), str(wal), str(events)], env=env, check=True)


class _Rpc:
    """A minimal JSON-RPC client over the service's socket (the same for both versions)."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")
        self.next_id = 0

    def call(self, method: str, params: dict[str, object]) -> dict[str, object]:
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.sock.sendall(json.dumps(line).encode() + b"\n")
        while True:
            answer = json.loads(self.reader.readline())
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result = answer["result"]
                assert isinstance(result, dict)
                return result

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def _replay(src: Path, ws: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "lcg", "-C", str(ws), "replay", "--group", GROUP, "--force-clear"]
        + ["-s", "--json"],
        env=_env(src),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def _queries(src: Path, ws: Path, queries: list[tuple[str, dict[str, object]]]) -> dict[str, float]:
    sock = ws / ".lcg" / "service.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lcg", "-C", str(ws), "serve"],
        env=_env(src),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not sock.exists():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"lcg serve ({src}) did not start")
            time.sleep(0.05)
        rpc = _Rpc(sock)
        while rpc.call("health_check", {}).get("state") != "healthy":
            time.sleep(0.1)
        if not (ws / ".episodes-added").exists():
            rng = random.Random(3)
            for i in range(300):
                words = " ".join(f"w{rng.randrange(2000)}" for _ in range(40))
                rpc.call(
                    "knowledge_add_episode",
                    {"name": f"note-{i}", "episode_body": words, "group_id": GROUP},
                )
            (ws / ".episodes-added").touch()
        times: dict[str, list[float]] = {m: [] for m in METHODS}
        for method, params in queries:
            started = time.perf_counter()
            rpc.call(method, params)
            times[method].append(time.perf_counter() - started)
        rpc.call("knowledge_close", {})
        rpc.close()
        proc.wait(60)
        return {m: statistics.median(t) * 1000 for m, t in times.items()}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the BEFORE checkout's src folder")
    parser.add_argument("after", type=Path, help="the AFTER checkout's src folder")
    parser.add_argument("--events", type=int, default=50_000, help="stream length")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (each runs both)")
    args = parser.parse_args()
    versions = {"before": args.before.resolve(), "after": args.after.resolve()}
    rng = random.Random(11)
    queries: list[tuple[str, dict[str, object]]] = []
    for _ in range(200):
        for method in METHODS:
            text = " ".join(f"w{rng.randrange(2000)}" for _ in range(3))
            params: dict[str, object] = {"query": text, "group_ids": [GROUP], "num_results": 10}
            if method == "knowledge_search_passages":
                # No cosine floor: the hash double's cosines are low, and a floor (0.5 by
                # default since 9b4c7fb) would drop most hits, timing fewer rows, not the search.
                params["min_score"] = 0
            queries.append((method, params))
    with tempfile.TemporaryDirectory(prefix="lcg-paired-") as tmp:
        root = Path(tmp)
        wal = root / "stream"
        _write_stream(versions["before"], wal, args.events)
        spaces = {}
        for name in versions:
            ws = root / name
            shutil.copytree(wal, ws / ".lcg" / "wal")
            spaces[name] = ws
        figures: dict[str, dict[str, list[float]]] = {n: {} for n in versions}
        for round_no in range(args.rounds):
            order = list(versions) if round_no % 2 == 0 else list(reversed(versions))
            for name in order:
                row = {"replay s": _replay(versions[name], spaces[name])}
                p50 = _queries(versions[name], spaces[name], queries)
                row.update({f"{m} p50 ms": v for m, v in p50.items()})
                for label, value in row.items():
                    figures[name].setdefault(label, []).append(value)
            print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{args.events:,} synthetic events, {args.rounds} rounds, hash embedder")
    print(f"{'figure':<44} {'before':>9} {'after':>9} {'after/before':>13}")
    for label in figures["before"]:
        b, a = figures["before"][label], figures["after"][label]
        ratio = statistics.median(x / y for x, y in zip(a, b, strict=True))
        mb, ma = statistics.median(b), statistics.median(a)
        print(f"{label:<44} {mb:>9.2f} {ma:>9.2f} {ratio:>13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
