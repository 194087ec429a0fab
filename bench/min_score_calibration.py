"""Where should an embedder's default ``min_score`` floor sit? (ADR 0198)

Not a pytest benchmark: a script, ``python bench/min_score_calibration.py [local|hash]``. It
measures two distributions of cosines under one embedder and prints, for a grid of floors, how
much of each a floor keeps:

* **evidence** — (question, the passage that answers it): the LongMemEval dev questions and
  their answer turns (``../shared/data/longmemeval-dev``, i.e. ``shared/data/longmemeval-dev``
  beside this checkout, as ``bench/lme_fusion_cv.py``); a question *keeps its evidence* when at
  least one of its answer turns reaches the floor;
* **unrelated** — (question, a turn of a conversation that is not its own): a fixed random pool
  of turns from the other questions' sessions (seed 7).

and, as a second, harder corpus, the Apollo articles of ``examples/apollo`` (one domain, so
the unrelated passages are on the same subject): each article's title as the query, its own
opening as the evidence, the other articles' openings as the unrelated passages.

Vectors are cached under ``--cache`` (default ``/tmp/lcg-min-score-cache``), so a second run
embeds nothing. The floor chosen from these tables is each embedder's ``default_min_score``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from lcg.eval.longmemeval import _load, _turns
from lcg.extract import Embedder, make_embedder
from lcg.projections.cache import EmbeddingCache, embed_with_cache

ROOT = Path(__file__).resolve().parents[1]
LME = ROOT.parent / "shared" / "data" / "longmemeval-dev"
APOLLO = ROOT / "examples" / "apollo" / "corpus_prose.jsonl"
FLOORS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
#: Characters of an article's opening (about one chunk of ``lcg ingest``).
OPENING = 1200

Matrix = npt.NDArray[np.float32]


def _vectors(emb: Embedder, cache: EmbeddingCache, texts: Sequence[str]) -> Matrix:
    out = embed_with_cache(emb, cache, list(texts))
    cache.flush()
    return out


def _quantiles(values: npt.NDArray[np.floating]) -> str:
    qs = np.quantile(values, [0.1, 0.5, 0.9, 0.99, 0.999])
    return " / ".join(f"{q:.3f}" for q in qs)


def longmemeval(emb: Embedder, cache: EmbeddingCache, pool_size: int, seed: int) -> None:
    """The LongMemEval dev table: questions keeping an answer turn, unrelated pairs kept."""
    sessions, _ = _load(LME)
    # The answer turns are in the raw lines only (the harness scores sessions).
    questions = [
        json.loads(line)
        for line in (LME / "questions-dev.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    turns = _turns(sessions)
    text_of = {t[0]: t[3] for t in turns}
    session_of = {t[0]: t[1] for t in turns}
    evidence = sorted({t for q in questions for t in q["answer_turn_ids"] if t in text_of})
    rng = random.Random(seed)
    pool = rng.sample(sorted(text_of), pool_size)
    print(f"embedding {len(questions)} questions, {len(evidence)} answer turns, "
          f"{len(pool)} pool turns with {emb.model_id} ...", flush=True)  # fmt: skip
    qmat = _vectors(emb, cache, [q["question"] for q in questions])
    emat = dict(zip(evidence, _vectors(emb, cache, [text_of[t] for t in evidence]), strict=True))
    pmat = _vectors(emb, cache, [text_of[t] for t in pool])
    pool_sessions = np.array([session_of[t] for t in pool])
    best_evidence: list[float] = []
    turn_cos: list[float] = []
    unrelated: list[npt.NDArray[np.float32]] = []
    for i, q in enumerate(questions):
        own = [float(np.dot(emat[t], qmat[i])) for t in q["answer_turn_ids"] if t in emat]
        if own:
            best_evidence.append(max(own))
            turn_cos.extend(own)
        mine = np.isin(pool_sessions, list(q["answer_session_ids"]))
        unrelated.append((pmat[~mine] @ qmat[i]).astype(np.float32))
    best = np.array(best_evidence)
    turns_c = np.array(turn_cos)
    noise = np.concatenate(unrelated)
    print(f"\nLongMemEval dev: {len(best)} questions, {len(turns_c)} answer turns, "
          f"{len(noise)} unrelated pairs")  # fmt: skip
    print("quantiles p10 / p50 / p90 / p99 / p99.9 of the cosine:")
    print(f"  best answer turn per question: {_quantiles(best)}")
    print(f"  every answer turn:             {_quantiles(turns_c)}")
    print(f"  unrelated turn:                {_quantiles(noise)}")
    print("\n| floor | questions keeping an answer turn | answer turns kept | unrelated kept |")
    print("|---|---|---|---|")
    for f in FLOORS:
        print(f"| {f:.2f} | {np.mean(best >= f):.3f} | {np.mean(turns_c >= f):.3f} "
              f"| {np.mean(noise >= f):.4f} |")  # fmt: skip


def apollo(emb: Embedder, cache: EmbeddingCache) -> None:
    """The Apollo table: each title against its own opening and the other articles'."""
    rows = [json.loads(line) for line in APOLLO.read_text(encoding="utf-8").splitlines()]
    articles = [r for r in rows if not r.get("_header") and r.get("prose", "").strip()]
    titles = [str(a["title"]) for a in articles]
    openings = [str(a["prose"])[:OPENING] for a in articles]
    print(f"\nembedding {len(titles)} Apollo titles and openings ...", flush=True)
    sims = _vectors(emb, cache, titles) @ _vectors(emb, cache, openings).T
    own = np.diag(sims).copy()
    others = sims[~np.eye(len(titles), dtype=bool)]
    print(f"Apollo: {len(own)} titles, {len(others)} (title, other article) pairs")
    print("quantiles p10 / p50 / p90 / p99 / p99.9 of the cosine:")
    print(f"  own article:   {_quantiles(own)}")
    print(f"  other article: {_quantiles(others)}")
    print("\n| floor | titles keeping their article | other articles kept |")
    print("|---|---|---|")
    for f in FLOORS:
        print(f"| {f:.2f} | {np.mean(own >= f):.3f} | {np.mean(others >= f):.4f} |")


def main() -> None:
    """Print the tables for one embedder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("embedder", nargs="?", default="local", choices=("local", "hash"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/lcg-min-score-cache"))
    parser.add_argument("--pool", type=int, default=1500, help="unrelated turns sampled")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not (LME / "sessions.jsonl").is_file():
        sys.exit(f"LongMemEval dev data not found: expected {LME}/sessions.jsonl (../shared/data)")
    emb = make_embedder(args.embedder)
    cache = EmbeddingCache.for_embedder(args.cache, emb)
    print(f"{emb.model_id} ({emb.dim}-d); default_min_score now {emb.default_min_score}")
    longmemeval(emb, cache, args.pool, args.seed)
    apollo(emb, cache)
    emb.close()


if __name__ == "__main__":
    main()
