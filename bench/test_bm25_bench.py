"""BM25 side by side: lcg's text projection, tantivy (in memory) and bm25s, on one corpus.

Corpus: LongMemEval dev (``../shared/data/longmemeval-dev``): every turn as a doc (10,866),
every session as a doc (940), every sentence of at least 3 words as a doc (133,199: real
text at the size of a large notes workspace, where per-query costs that grow with the corpus
show), and the turns repeated 4 times (43,464 docs: a synthetic scale-up). Queries: the 231 dev
questions, top 10. Per engine: build time, query p50/p99 (each query runs on every engine in
turn, several passes, so machine noise hits all alike), and session recall@5/@10 and nDCG@10
as a sanity check that the engines answer the same question.

Per-query work counted: ours ``TextProjection.search`` (analyzer, lock, scoring, uuids);
tantivy (lowercase, our stopwords, no positions) ``parse_query`` of the question's words (its
parser rejects raw punctuation; the regex split runs outside the timer) plus ``search``
(``count=False``) and the hit -> id mapping; bm25s
``tokenize`` plus ``retrieve`` (k1=1.2, b=0.75, English stopwords, no progress bars).

Targets (issue 3): our p50 within 5x of tantivy, and at least 10x faster than bm25s.
Run: ``make bench``, or ``.venv/bin/python -m pytest bench/test_bm25_bench.py -s``.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import pytest
import tantivy

from lcg.projections._analyzer import MAX_TOKEN_CHARS, STOPWORDS
from lcg.projections.ops import Op, Upsert
from lcg.projections.text import TextProjection

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "longmemeval-dev"
#: The corpus is not in the repository (it is large); without it these benchmarks cannot run.
pytestmark = pytest.mark.skipif(
    not (DATA / "sessions.jsonl").is_file(),
    reason=f"LongMemEval dev data not found: expected {DATA}/sessions.jsonl and "
    "questions-dev.jsonl (../shared/data/longmemeval-dev beside the checkout)",
)
K = 10
PASSES = 3
GROUP = "bench"

Corpus = tuple[list[str], list[str]]  # (uuids, texts)


class Engine:
    """One engine under test: ``build`` returns a ``search(question, k)``."""

    name = ""

    def build(self, uuids: list[str], texts: list[str], tmp: Path) -> None:
        raise NotImplementedError

    def search(self, question: str, k: int) -> list[str]:
        raise NotImplementedError

    def prepare(self, question: str) -> str:
        """The question as this engine's ``search`` takes it (untimed)."""
        return question


class Ours(Engine):
    name = "lcg"

    def build(self, uuids: list[str], texts: list[str], tmp: Path) -> None:
        self.proj = TextProjection(tmp / "text")
        batch: list[Op] = []
        seq = 0
        for u, t in zip(uuids, texts, strict=True):
            batch.append(Upsert(kind="episode", group_id=GROUP, uuid=u, parts={"content": t}))
            if len(batch) == 256:  # the projector's batches
                seq += 1
                self.proj.apply(GROUP, "gen", seq, batch)
                batch = []
        self.proj.apply(GROUP, "gen", seq + 1, batch)

    def search(self, question: str, k: int) -> list[str]:
        return [u for u, _ in self.proj.search(GROUP, "episode", question, k)]


class Tantivy(Engine):
    name = "tantivy"

    def build(self, uuids: list[str], texts: list[str], tmp: Path) -> None:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw")
        # Our analyzer's features (lowercase, the same stopwords, long tokens dropped, term
        # frequencies without positions), so tantivy scores the same terms we do.
        sb.add_text_field("body", stored=False, tokenizer_name="lcg", index_option="freq")
        self.index = tantivy.Index(sb.build())  # no path: in memory
        analyzer = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS + 1))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.custom_stopword(sorted(STOPWORDS)))
            .build()
        )
        self.index.register_tokenizer("lcg", analyzer)
        writer = self.index.writer(heap_size=500_000_000, num_threads=1)
        for u, t in zip(uuids, texts, strict=True):
            writer.add_document(tantivy.Document(id=u, body=t))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        self.uuids = uuids
        # One segment written in order: doc addresses are insertion order, so hits map to
        # ids without fetching stored docs (checked here; otherwise fetch them).
        self.direct = self.searcher.num_segments == 1 and all(
            self.searcher.doc(tantivy.DocAddress(0, i))["id"][0] == uuids[i]
            for i in (0, len(uuids) // 2, len(uuids) - 1)
        )

    def prepare(self, question: str) -> str:
        # tantivy's query parser rejects raw punctuation (quotes, '?', ':'): keep the words.
        # One token per word for its simple tokenizer (which also splits on "_").
        return " ".join(re.findall(r"[^\W_]+", question))

    def search(self, question: str, k: int) -> list[str]:
        query = self.index.parse_query(question, ["body"])
        # count=False: no total hit count, so tantivy may skip docs (block-max WAND).
        hits = self.searcher.search(query, k, count=False).hits
        if self.direct:
            return [self.uuids[a.doc] for _, a in hits]
        return [self.searcher.doc(a)["id"][0] for _, a in hits]


class Bm25s(Engine):
    name = "bm25s"

    def build(self, uuids: list[str], texts: list[str], tmp: Path) -> None:
        self.model = bm25s.BM25(k1=1.2, b=0.75)
        self.model.index(
            bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False
        )
        self.uuids = uuids

    def search(self, question: str, k: int) -> list[str]:
        tokens = bm25s.tokenize(question, stopwords="en", show_progress=False)
        docs, _ = self.model.retrieve(tokens, k=k, show_progress=False)
        return [self.uuids[i] for i in docs[0].tolist()]


def _questions() -> list[dict[str, Any]]:
    with open(DATA / "questions-dev.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _sessions() -> Iterator[dict[str, Any]]:
    with open(DATA / "sessions.jsonl", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def turns_corpus(copies: int = 1) -> Corpus:
    uuids: list[str] = []
    texts: list[str] = []
    for s in _sessions():
        for i, turn in enumerate(s["turns"]):
            for c in range(copies):
                uuids.append(f"{s['session_id']}#{i}" + (f"~{c}" if c else ""))
                texts.append(turn["content"])
    return uuids, texts


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences_corpus() -> Corpus:
    """Every sentence (of 3 words or more) of every turn, as ``<session>#<turn>.<n>``."""
    uuids: list[str] = []
    texts: list[str] = []
    for s in _sessions():
        for i, turn in enumerate(s["turns"]):
            n = 0
            for para in turn["content"].split("\n"):
                for sentence in _SENTENCE_END.split(para):
                    if len(sentence.split()) >= 3:
                        uuids.append(f"{s['session_id']}#{i}.{n}")
                        texts.append(sentence)
                        n += 1
    return uuids, texts


def sessions_corpus() -> Corpus:
    sessions = list(_sessions())
    return (
        [s["session_id"] for s in sessions],
        ["\n".join(t["content"] for t in s["turns"]) for s in sessions],
    )


def session_of(uuid: str) -> str:
    return uuid.split("#", 1)[0]


def quality(engine: Engine, questions: list[dict[str, Any]], turn_level: bool) -> tuple[float, ...]:
    """Session recall@5, recall@10 and nDCG@10 (turn hits mapped to their sessions)."""
    r5 = r10 = ndcg = 0.0
    for q in questions:
        hits = engine.search(engine.prepare(q["question"]), 100 if turn_level else K)
        ranked = list(dict.fromkeys(session_of(u) for u in hits))[:K]
        gold = set(q["answer_session_ids"])
        r5 += len(gold & set(ranked[:5])) / len(gold)
        r10 += len(gold & set(ranked)) / len(gold)
        dcg = sum(1 / math.log2(i + 2) for i, s in enumerate(ranked) if s in gold)
        ndcg += dcg / sum(1 / math.log2(i + 2) for i in range(min(len(gold), K)))
    n = len(questions)
    return r5 / n, r10 / n, ndcg / n


def measure(
    corpus_name: str, corpus: Corpus, tmp: Path, turn_level: bool
) -> dict[str, dict[str, float]]:
    uuids, texts = corpus
    questions = _questions()
    engines: list[Engine] = [Ours(), Tantivy(), Bm25s()]
    rows: dict[str, dict[str, float]] = {}
    for e in engines:
        t0 = time.perf_counter()
        e.build(uuids, texts, tmp / e.name)
        rows[e.name] = {"build_s": time.perf_counter() - t0}
    # Every engine returns k results for the same questions (sanity, untimed).
    prepared = {e.name: [e.prepare(q["question"]) for q in questions] for e in engines}
    for e in engines:
        for text in prepared[e.name]:
            assert 0 < len(e.search(text, K)) <= K
    samples: dict[str, list[float]] = {e.name: [] for e in engines}
    clock = time.perf_counter
    for _ in range(PASSES):
        for i in range(len(questions)):
            for e in engines:
                text = prepared[e.name][i]
                t0 = clock()
                e.search(text, K)
                samples[e.name].append(clock() - t0)
    for e in engines:
        lat = np.array(samples[e.name]) * 1e6
        rows[e.name]["p50_us"] = float(np.percentile(lat, 50))
        rows[e.name]["p99_us"] = float(np.percentile(lat, 99))
        # Each question's fastest pass: what the code costs, with less of the host's noise.
        best = lat.reshape(PASSES, len(questions)).min(axis=0)
        rows[e.name]["best_p50_us"] = float(np.percentile(best, 50))
        r = quality(e, questions, turn_level)
        rows[e.name].update({"r@5": r[0], "r@10": r[1], "ndcg@10": r[2]})
    ours = engines[0]
    assert isinstance(ours, Ours)
    t0 = time.perf_counter()
    ours.proj.save()
    rows["lcg"]["save_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    reopened = TextProjection(tmp / "lcg" / "text")
    rows["lcg"]["load_s"] = time.perf_counter() - t0
    assert reopened.search(GROUP, "episode", questions[0]["question"], K) == ours.proj.search(
        GROUP, "episode", questions[0]["question"], K
    )
    snap = next((tmp / "lcg" / "text").iterdir())
    rows["lcg"]["snapshot_mb"] = snap.stat().st_size / 1e6
    _print(corpus_name, len(uuids), rows)
    return rows


def _print(corpus_name: str, n_docs: int, rows: dict[str, dict[str, float]]) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n## BM25, {corpus_name}: {n_docs:,} docs, 231 questions, top {K}, {PASSES} passes")
    print(f"(cpus {os.cpu_count()}, load average {load})")
    head = ("engine", "build s", "p50 us", "p99 us", "best p50", "R@5", "R@10", "nDCG@10")
    print(
        f"{head[0]:8} {head[1]:>8} {head[2]:>8} {head[3]:>8} {head[4]:>9} {head[5]:>6} "
        f"{head[6]:>6} {head[7]:>8}"
    )
    for name, r in rows.items():
        print(
            f"{name:8} {r['build_s']:8.2f} {r['p50_us']:8.1f} {r['p99_us']:8.1f} "
            f"{r['best_p50_us']:9.1f} {r['r@5']:6.3f} {r['r@10']:6.3f} {r['ndcg@10']:8.3f}"
        )
    ours, tv, bs = rows["lcg"], rows["tantivy"], rows["bm25s"]
    for label, key in (("p50", "p50_us"), ("best-of-passes p50", "best_p50_us")):
        vs_tantivy = ours[key] / tv[key]
        vs_bm25s = bs[key] / ours[key]
        met_tantivy = "met" if vs_tantivy <= 5 else "MISSED"
        met_bm25s = "met" if vs_bm25s >= 10 else "MISSED"
        print(
            f"{label}: lcg/tantivy = {vs_tantivy:.2f}x (target <= 5: {met_tantivy}); "
            f"bm25s/lcg = {vs_bm25s:.1f}x (target >= 10: {met_bm25s})"
        )
    print(
        f"lcg snapshot {ours['snapshot_mb']:.1f} MB, save {ours['save_s']:.2f} s, "
        f"load {ours['load_s']:.2f} s; build lcg/tantivy {ours['build_s'] / tv['build_s']:.1f}x, "
        f"lcg/bm25s {ours['build_s'] / bs['build_s']:.1f}x"
    )


@pytest.mark.bench
def test_bm25_turns(tmp_path: Path) -> None:
    rows = measure("turns as docs", turns_corpus(), tmp_path, turn_level=True)
    # Our ranking quality is in bm25s' league (same formula, similar analyzer).
    assert rows["lcg"]["r@10"] >= rows["bm25s"]["r@10"] - 0.05


@pytest.mark.bench
def test_bm25_sessions(tmp_path: Path) -> None:
    rows = measure("sessions as docs", sessions_corpus(), tmp_path, turn_level=False)
    assert rows["lcg"]["r@10"] >= rows["bm25s"]["r@10"] - 0.05


@pytest.mark.bench
def test_bm25_sentences(tmp_path: Path) -> None:
    rows = measure("sentences as docs", sentences_corpus(), tmp_path, turn_level=True)
    assert rows["lcg"]["r@10"] >= rows["bm25s"]["r@10"] - 0.05


@pytest.mark.bench
def test_bm25_turns_x4(tmp_path: Path) -> None:
    rows = measure(
        "turns x4 (synthetic scale-up)", turns_corpus(copies=4), tmp_path, turn_level=True
    )
    assert rows["lcg"]["p50_us"] > 0
