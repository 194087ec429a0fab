"""Text first, vectors follow (issue 28 item 4, ADR 0201): two checkouts, one run.

    python bench/paired_text_first.py BEFORE_SRC AFTER_SRC [--chunks N] [--embedder local]

``BEFORE_SRC`` and ``AFTER_SRC`` are the ``src`` folders of two checkouts (the baseline is
``git worktree add /tmp/before 7d46494``). One tree of ``N`` one-chunk Markdown files is made
once. For each version: ``lcg serve`` on an empty workspace (MiniLM by default), then ``lcg
ingest`` of the tree through it, while a client asks every 0.2 s for a word only the last
file holds. Measured from the start of the ingest:

* ``first answer``: the first search that finds the last file (the whole tree answerable);
* ``ingest returned``: the command's wall time;
* ``full coverage``: no vector missing (``health_check`` has no ``vectors_pending``, and
  then the group's vector position is the stream's end; ``knowledge_status`` is asked only
  once health says nothing is pending, so that the watching costs the drainer nothing).

Printed: each figure for both versions, chunks per second to full coverage, and the ratios.
Nothing about time is asserted anywhere.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from lcg.errors import LcgError
from lcg.rpc.client import Client

GROUP = "bench"
PROBE = "zyxwvutsrq"


def _env(src: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "ANTHROPIC_"))}
    env.update({"PYTHONPATH": str(src), "LCG_EMBEDDER": embedder, "LCG_TELEMETRY": "off"})
    return env


def _tree(root: Path, chunks: int) -> Path:
    tree = root / "notes"
    tree.mkdir()
    for i in range(chunks):
        last = f" {PROBE}" if i == chunks - 1 else ""
        (tree / f"n{i:05d}.md").write_text(
            f"Note {i} about orbit {i % 97} and lander {i % 31}; thruster valve {i}.{last}\n"
        )
    return tree


def _client(sock: Path) -> Client:
    # The wire is the same for both versions: this checkout's client speaks to either.
    return Client(sock, timeout=600)


def _run(src: Path, tree: Path, scratch: Path, embedder: str, label: str) -> dict[str, float]:
    ws = scratch / label
    ws.mkdir()
    env = _env(src, embedder)
    log = (ws / "serve.log").open("ab")
    serve = subprocess.Popen(
        [sys.executable, "-m", "lcg", "-C", str(ws), "serve"],
        env=env,
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )
    sock = ws / ".lcg" / "service.sock"
    while not sock.exists():
        if serve.poll() is not None:
            raise SystemExit(f"{label}: lcg serve exited: {(ws / 'serve.log').read_text()}")
        time.sleep(0.05)
    out: dict[str, float] = {}
    with _client(sock) as c:
        c.wait_ready(600, starting=True)
        # A search first, so the model is loaded before the clock starts, in both versions.
        c.call("knowledge_search_passages", {"query": "warm up"})
        start = time.monotonic()
        stop = threading.Event()

        def probe() -> None:
            with _client(sock) as pc:
                while not stop.is_set():
                    try:
                        hits = pc.call(
                            "knowledge_search_passages",
                            {"query": PROBE, "group_ids": [GROUP], "min_score": 0.0},
                        )["passages"]
                    except LcgError:
                        hits = []  # the group is not there yet
                    if any(PROBE in h["content"] for h in hits):
                        out["first_answer_s"] = time.monotonic() - start
                        return
                    time.sleep(0.2)

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        ingest = subprocess.run(
            [sys.executable, "-m", "lcg", "-C", str(ws), "ingest", str(tree), "--group", GROUP],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        out["ingest_s"] = time.monotonic() - start
        if ingest.returncode != 0:
            raise SystemExit(f"{label}: lcg ingest failed: {ingest.stderr[-2000:]}")
        print(f"  {label}: {ingest.stdout.strip()[-300:]}", flush=True)
        while True:
            # health_check alone while vectors are pending: knowledge_status reads the graph's
            # counts (about 50 ms of the service's CPU each), and asking it 5 times a second
            # took a tenth of a core from the drainer — from the after version only, since
            # the before version's ingest returns with its vectors made (ADR 0206).
            if "vectors_pending" in c.health_check():
                time.sleep(0.2)
                continue
            status = c.call("knowledge_status", {})
            g = status["wal_groups"].get(GROUP, {})
            if g.get("projections", {}).get("vectors") == g.get("max_seq"):
                break
            time.sleep(0.2)
        out["coverage_s"] = time.monotonic() - start
        prober.join(60)
        stop.set()
        c.call("knowledge_close", {})
    serve.wait(120)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--embedder", default="local")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="lcg-text-first-"))
    try:
        tree = _tree(scratch, args.chunks)
        before = _run(args.before.resolve(), tree, scratch, args.embedder, "before")
        after = _run(args.after.resolve(), tree, scratch, args.embedder, "after")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nlcg ingest of {args.chunks} chunks through lcg serve ({args.embedder} embedder)")
    for key, name in (
        ("first_answer_s", "first answer"),
        ("ingest_s", "ingest returned"),
        ("coverage_s", "full coverage"),
    ):
        b, a = before.get(key, float("nan")), after.get(key, float("nan"))
        print(f"  {name:16} before {b:8.2f} s   after {a:8.2f} s   before/after {b / a:7.1f}x")
    for label, r in (("before", before), ("after", after)):
        print(f"  {label}: {args.chunks / r['coverage_s']:.1f} chunks/s to full coverage")


if __name__ == "__main__":
    main()
