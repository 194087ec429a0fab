"""``lcg ingest`` and ``lcg watch`` on a real tree with MiniLM (issue 22): first ingest,
unchanged re-ingest, one edited file, and watch latency.

Run by ``make bench``. The tree is a copy of this repository's ``docs/`` and
``src/lcg/ingest/`` (Markdown and Python, real files; ``LCG_BENCH_SOURCES`` names other
folders, separated by ``:``). The first ingest runs in this process on the default embedder
(all-MiniLM-L6-v2 int8) and reports files/s, chunks/s and the embedder's share of the time
(its ``embed`` calls, timed). The unchanged re-ingest is the baseline's ratio (target ≥ 50×
faster), then one edited file's re-sync. Watch latency: a real ``lcg watch`` process serving
the same workspace; each of 20 saves writes a new file with an unseen word, and the time from
the save to the first search that finds it is one sample (p50, p95). Nothing about time is
asserted.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lcg.config import Config
from lcg.extract.embedders import LocalEmbedder
from lcg.ingest.sources import DirectBackend, sync_tree
from lcg.rpc.client import Client
from lcg.workspace import Workspace

pytestmark = pytest.mark.bench

REPO = Path(__file__).resolve().parents[1]
SAVES = 20


class _TimedEmbedder:
    """The local embedder, with the seconds spent in ``embed`` added up."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.texts = 0

    def embed(self, texts: Any) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started
            self.texts += len(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _sources() -> list[Path]:
    raw = os.environ.get("LCG_BENCH_SOURCES")
    if raw:
        return [Path(p) for p in raw.split(":")]
    return [REPO / "docs", REPO / "src" / "lcg" / "ingest"]


def _copy_tree(dest: Path) -> Path:
    tree = dest / "tree"
    for src in _sources():
        shutil.copytree(src, tree / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def _watch_latency(ws: Path, tree: Path) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LCG_")}
    env["LCG_EMBEDDER"] = "local"
    log = (ws / "watch.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lcg", "-C", str(ws), "watch", str(tree)],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    samples: list[float] = []
    try:
        deadline = time.monotonic() + 600
        while "watching" not in (ws / "watch.log").read_text():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        with Client(ws / ".lcg" / "service.sock", timeout=120) as c:
            for i in range(SAVES):
                word = f"quixotic{i}zebra"
                saved = time.monotonic()
                (tree / f"saved-{i}.md").write_text(f"# Save {i}\n\nA note that says {word}.\n")
                while True:
                    found = c.search_passages(word, group_ids=["liminis"], min_score=0.0)
                    if any(word in p["content"] for p in found["passages"]):
                        break
                    time.sleep(0.01)
                samples.append(time.monotonic() - saved)
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()
    return samples


def test_ingest_resync_and_watch_latency() -> None:
    with tempfile.TemporaryDirectory(prefix="lcg-src-bench-") as tmp:
        root = Path(tmp)
        tree = _copy_tree(root)
        ws_dir = root / "ws"
        config = Config.from_env(ws_dir, env={"LCG_EMBEDDER": "local"})
        embedder = _TimedEmbedder(LocalEmbedder())
        embedder.inner.load()
        with Workspace.open(config, embedder) as ws:  # type: ignore[arg-type]
            backend = DirectBackend(ws)
            started = time.perf_counter()
            first = sync_tree(backend, tree, "liminis")
            first_s = time.perf_counter() - started
            embed_s = embedder.seconds
            files = first.files_new
            started = time.perf_counter()
            again = sync_tree(backend, tree, "liminis")
            again_s = time.perf_counter() - started
            assert again.chunks_added == 0 and again.chunks_removed == 0
            edited = next(p for p in sorted(tree.rglob("*.md")))
            edited.write_text(edited.read_text() + "\n\nOne more paragraph, edited in.\n")
            started = time.perf_counter()
            one = sync_tree(backend, tree, "liminis")
            one_s = time.perf_counter() - started
        latencies = _watch_latency(ws_dir, tree)
    ratio = first_s / again_s
    print(
        f"\nlcg ingest of a real tree ({files} files, {first.chunks_added} chunks, "
        f"{first.files_skipped} skipped; MiniLM int8, {os.cpu_count()} CPUs):\n"
        f"  first ingest        {first_s:8.2f} s  {files / first_s:7.1f} files/s  "
        f"{first.chunks_added / first_s:7.1f} chunks/s  embedding {embed_s / first_s:5.1%} "
        f"of the time ({embedder.texts} texts)\n"
        f"  unchanged re-ingest {again_s:8.3f} s  {ratio:7.0f}x faster than the first "
        f"(target >= 50x: {'met' if ratio >= 50 else 'NOT met'})\n"
        f"  one edited file     {one_s:8.3f} s  (+{one.chunks_added} / -{one.chunks_removed} "
        f"chunks)\n"
        f"  lcg watch, save -> searchable over {len(latencies)} saves: p50 "
        f"{statistics.median(latencies) * 1000:6.0f} ms  p95 "
        f"{np.percentile(latencies, 95) * 1000:6.0f} ms  max {max(latencies) * 1000:6.0f} ms"
    )


CORPUS = REPO / "examples" / "apollo" / "corpus_prose.jsonl"
N_CHUNKS = 10_000


def test_search_warm_on_10000_chunks() -> None:
    """``lcg search``'s query (``knowledge_search_passages``, no recency prior) on 10,000
    chunks: 500 Markdown files of 20 Apollo paragraphs each, ingested with the hash embedder
    (TEST DOUBLE; MiniLM would embed 10,000 chunks for many minutes here); the query's own
    MiniLM embedding is timed apart and added."""
    import json

    from lcg.extract.embedders import HashEmbedder
    from lcg.query.search import Searcher

    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    paragraphs = [p for r in rows if "prose" in r for p in r["prose"].split("\n") if len(p) > 80]
    titles = [r["title"] for r in rows if "title" in r]
    with tempfile.TemporaryDirectory(prefix="lcg-search-bench-") as tmp:
        tree = Path(tmp) / "notes"
        tree.mkdir()
        per_file = 20
        for f in range(N_CHUNKS // per_file):
            body = [f"# Note {f}"]
            for j in range(per_file):
                body += [f"## Part {j}", paragraphs[(f * per_file + j) % len(paragraphs)]]
            (tree / f"note-{f:04}.md").write_text("\n\n".join(body) + "\n")
        config = Config.from_env(Path(tmp) / "ws", env={"LCG_EMBEDDER": "hash"})
        with Workspace.open(config, HashEmbedder()) as ws:
            report = sync_tree(DirectBackend(ws), tree, "notes")
            searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
            queries = [f"what happened on {t}" for t in titles[:200]]
            for q in queries[:20]:  # warm
                searcher.search_passages(q, ["notes"], 5, 0.0, recency_half_life_days=0.0)
            times = []
            for q in queries:
                started = time.perf_counter()
                with ws.reading():
                    searcher.search_passages(q, ["notes"], 5, 0.0, recency_half_life_days=0.0)
                times.append(time.perf_counter() - started)
    local = LocalEmbedder()
    local.load()
    embeds = []
    for q in queries[:50]:
        started = time.perf_counter()
        local.embed([q])
        embeds.append(time.perf_counter() - started)
    p50, p95 = statistics.median(times) * 1000, np.percentile(times, 95) * 1000
    e50 = statistics.median(embeds) * 1000
    print(
        f"\nlcg search, warm, {report.chunks_added:,} chunks in {report.files_new} files: "
        f"passage query p50 {p50:.1f} ms, p95 {p95:.1f} ms (hash embedder); MiniLM query "
        f"embedding p50 {e50:.1f} ms; total p50 {p50 + e50:.1f} ms (target < 100 ms)"
    )
