"""Passage search costs (issue 14): the text projection's ingest with stemming and sources,
against the same projection without them, in one run.

Corpus: LongMemEval dev turns (``../shared/data/longmemeval-dev``, 10,866 turns of 940
sessions), as the projector applies them: batches of 256, and one chunk per batch (the live
``process_chunk`` path). Sources are re-indexed by the first source search after the writes;
its time is printed too.

* ``before``: the analyzer without its stemming step and episodes with no ``source`` part
  (what the text projection did before ADR 0090/0091);
* ``after``: stemming, ``source`` and ``time`` parts, the source index.

Printed: turns per second of each and the ratio. The end-to-end ingest rate and query p50 of
the whole engine are measured by ``lcg eval longmemeval`` (docs/benchmarks.md).
Run: ``.venv/bin/python -m pytest bench/test_search_bench.py -s``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lcg.projections import _analyzer
from lcg.projections.ops import Op, Upsert
from lcg.projections.text import TextProjection

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "longmemeval-dev"
GROUP = "bench"

pytestmark = pytest.mark.bench


def _turns() -> list[tuple[str, str, str]]:
    out = []
    for line in (DATA / "sessions.jsonl").read_text().splitlines():
        s = json.loads(line)
        for i, t in enumerate(s["turns"]):
            if t["content"].strip():
                out.append((f"{s['session_id']}#{i}", s["session_id"], t["content"]))
    return out


def _ingest(
    root: Path, turns: list[tuple[str, str, str]], with_sources: bool, batch: int
) -> tuple[float, Callable[[], None]]:
    proj = TextProjection(root)
    ops: list[Op] = []
    seq = 0
    started = time.perf_counter()
    for uuid, session, text in turns:
        parts = {"content": text}
        if with_sources:
            parts.update(source=session, time="2023-05-01T00:00:00Z")
        ops.append(Upsert(kind="episode", group_id=GROUP, uuid=uuid, parts=parts))
        if len(ops) == batch:
            seq += 1
            proj.apply(GROUP, "gen", seq, ops)
            ops = []
    if ops:
        proj.apply(GROUP, "gen", seq + 1, ops)
    proj.save()
    elapsed = time.perf_counter() - started
    if with_sources:
        # The first source search after the writes re-indexes every stale source.
        t0 = time.perf_counter()
        proj.search_sources([GROUP], "what did I say about the river", 10)
        print(f"first source search after {len(turns)} turns: {time.perf_counter() - t0:.3f} s")
    return elapsed, proj.close


@pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data/longmemeval-dev")
def test_text_projection_ingest_with_stems_and_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns = _turns()
    stem = _analyzer.stem
    rows = []
    for batch, subset in ((256, turns), (1, turns[:3000])):
        times = {}
        for label, with_sources in (("before", False), ("after", True)):
            if with_sources:
                monkeypatch.setattr(_analyzer, "stem", stem)
            else:
                monkeypatch.setattr(_analyzer, "stem", lambda tokens: tokens)
            _analyzer._TERMS.clear()  # the word -> term cache of the other analyzer
            best = float("inf")
            for rep in range(2):
                secs, close = _ingest(
                    tmp_path / f"{label}-{batch}-{rep}", subset, with_sources, batch
                )
                close()
                best = min(best, secs)
            times[label] = best
        rows.append((batch, len(subset), times["before"], times["after"]))
    print()
    print("| batch | turns | before turns/s | after turns/s | after ÷ before |")
    print("|---|---|---|---|---|")
    for batch, n, before, after in rows:
        print(f"| {batch} | {n} | {n / before:,.0f} | {n / after:,.0f} | {before / after:.2f}× |")


def test_passage_query_p50_by_fusion(tmp_path: Path) -> None:
    """Query cost of the weighted fusion and its time priors against the reference's RRF.

    A synthetic group (3,000 passages in 300 source files over a year, a 2,000-word
    vocabulary; the hash embedder, a TEST DOUBLE: the same query vector cost in every
    variant) so that it runs without ../shared. The variants run in turn on every query,
    three passes; printed: p50 and the ratio to RRF.
    """
    import random
    import statistics
    from datetime import UTC, datetime, timedelta

    from lcg.config import Config
    from lcg.events.model import EpisodeAdded, Event
    from lcg.extract.embedders import HashEmbedder
    from lcg.query.search import Searcher
    from lcg.workspace import Workspace

    rng = random.Random(14)
    vocab = [f"w{i}{chr(97 + i % 26)}" for i in range(2000)]
    start = datetime(2023, 1, 1, tzinfo=UTC)
    cfg = Config.from_env(tmp_path, env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(cfg, HashEmbedder()) as ws:
        batch: list[Event] = []
        for i in range(3000):
            source = f"doc{i // 10}"
            when = (start + timedelta(days=(i // 10) * 365 / 300)).strftime("%Y-%m-%dT%H:%M:%SZ")
            text = " ".join(rng.choice(vocab) for _ in range(40))
            batch.append(
                EpisodeAdded(
                    group_id=GROUP,
                    uuid=f"{source}#{i % 10}",
                    name=f"{source}#{i % 10}",
                    source_description=f"{source}:{i % 10}",
                    content=text,
                    created_at=when,
                    valid_at=when,
                )
            )
            if len(batch) == 256:
                ws.commit(GROUP, batch)
                batch = []
        ws.commit(GROUP, batch)
        searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
        queries = [" ".join(rng.choice(vocab) for _ in range(6)) for _ in range(200)]
        asked = "2023-12-31T00:00:00Z"
        variants: dict[str, dict[str, object]] = {
            "rrf (the reference's order)": {"fusion": "rrf"},
            "weighted, recency prior off": {"recency_half_life_days": 0.0},
            "weighted (default)": {},
            "weighted, as_of": {"as_of": asked},
            "weighted, as_of, 'last month'": {"as_of": asked, "suffix": " last month"},
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        found = dict.fromkeys(variants, 0)
        for _ in range(3):
            for q in queries:
                for name, kw in variants.items():
                    kw = dict(kw)
                    query = q + str(kw.pop("suffix", ""))
                    t0 = time.perf_counter()
                    rows = searcher.search_passages(query, [GROUP], 10, 0.5, **kw)  # type: ignore[arg-type]
                    times[name].append(time.perf_counter() - t0)
                    found[name] += len(rows)
    base = statistics.median(times["rrf (the reference's order)"])
    print()
    print("| variant | p50 | ÷ rrf |")
    print("|---|---|---|")
    for name, t in times.items():
        p50 = statistics.median(t)
        print(f"| {name} | {p50 * 1000:.2f} ms | {p50 / base:.2f}× |")
    assert all(found.values()), found  # every variant answered
