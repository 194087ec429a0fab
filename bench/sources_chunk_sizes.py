"""Offline study of ``lcg ingest``'s chunk size (ADR 0161): retrieval on real files.

Not a pytest benchmark: a script (``python bench/sources_chunk_sizes.py [SIZES...]``). It writes
the Apollo articles of ``examples/apollo/`` as Markdown files in a temporary tree (the title as
``#``, each section title — a short line such as ``Personal life.`` — as ``##``), ingests the
tree with ``lcg ingest``'s own code (MiniLM, the default embedder) once per chunk size, and asks
two questions of every section that has a body, both written from the structure alone before
any result was seen:

* *heading*: the section title and the article title (``Personal life Alan Shepard``);
* *keywords*: the words longer than three letters of the section's last sentence, at most 12
  (a reader recalling what a note said, not its exact words).

A hit is relevant when it comes from the article's file under that section's heading. It prints
recall@1, recall@5 and MRR@10 per question kind and chunk size, with the chunks' count, mean
length and the share longer than MiniLM's 256-token window.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from pathlib import Path

from lcg.config import Config
from lcg.extract.embedders import LocalEmbedder
from lcg.ingest.sources import DirectBackend, heading_of, sync_tree
from lcg.query.search import Searcher
from lcg.workspace import Workspace

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "apollo" / "corpus_prose.jsonl"
#: Sections that are lists of links, not prose.
_SKIP = {"References", "Other websites", "Related pages", "Notes", "Sources", "Gallery"}
_HEADING = re.compile(r"[A-Z][A-Za-z0-9 ,'()-]{0,40}\.")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _markdown(title: str, prose: str) -> tuple[str, dict[str, str]]:
    """The article as Markdown, and each section's body by its title."""
    out = [f"# {title}", ""]
    sections: dict[str, str] = {}
    current: str | None = None
    lines = [line.strip() for line in prose.split("\n") if line.strip()]
    for line in lines:
        if _HEADING.fullmatch(line) and len(line.split()) <= 4:
            current = line[:-1]
            out += [f"## {current}", ""]
            continue
        out += [line, ""]
        if current is not None:
            sections[current] = (sections.get(current, "") + " " + line).strip()
    return "\n".join(out), sections


def _questions(articles: list[tuple[str, dict[str, str]]]) -> list[tuple[str, str, str, str]]:
    """(kind, query, file, heading) of every section with a body."""
    out: list[tuple[str, str, str, str]] = []
    for title, sections in articles:
        for name, body in sections.items():
            if name in _SKIP or len(body) < 80:
                continue
            heading = f"{title} › {name}"
            out.append(("heading", f"{name} {title}", f"{title}.md", heading))
            last = [s for s in _SENTENCE.split(body) if s.strip()][-1]
            words = [w for w in re.findall(r"[A-Za-z0-9]+", last) if len(w) > 3][:12]
            if len(words) >= 3:
                out.append(("keywords", " ".join(words), f"{title}.md", heading))
    return out


def _tree(root: Path) -> list[tuple[str, dict[str, str]]]:
    articles: list[tuple[str, dict[str, str]]] = []
    for line in CORPUS.read_text().splitlines():
        row = json.loads(line)
        if "prose" not in row:
            continue
        title = row["title"].replace("/", "-")
        text, sections = _markdown(title, row["prose"])
        (root / f"{title}.md").write_text(text)
        articles.append((title, sections))
    return articles


def run(sizes: list[int]) -> None:
    """Ingest and score the tree once per chunk size; print one table row each."""
    embedder = LocalEmbedder()
    embedder.load()
    with tempfile.TemporaryDirectory(prefix="lcg-chunks-") as tmp:
        tree = Path(tmp) / "apollo"
        tree.mkdir()
        questions = _questions(_tree(tree))
        kinds = sorted({q[0] for q in questions})
        counts = {k: sum(1 for q in questions if q[0] == k) for k in kinds}
        print(f"{len(questions)} questions: {counts}; sizes {sizes}")
        tokenizer = embedder._loaded()[1]  # the model's own tokenizer, to count tokens
        for size in sizes:
            ws_dir = Path(tmp) / f"ws{size}"
            config = Config.from_env(ws_dir, env={"LCG_EMBEDDER": "local"})
            with Workspace.open(config, embedder) as ws:
                started = time.perf_counter()
                report = sync_tree(DirectBackend(ws), tree, "apollo", max_chars=size)
                took = time.perf_counter() - started
                rows = ws.graph.query("MATCH (p:Episodic) RETURN p.content")
                texts = [str(r[0]) for r in rows]
                tokens = [len(e.ids) for e in _untruncated(tokenizer).encode_batch(texts)]
                over = sum(1 for n in tokens if n > 256) / len(tokens)
                searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
                scores: dict[str, list[tuple[int, int, float]]] = {k: [] for k in kinds}
                for kind, query, file, heading in questions:
                    hits = searcher.search_passages(
                        query, ["apollo"], 10, 0.0, recency_half_life_days=0.0
                    )
                    rank = next(
                        (
                            i
                            for i, h in enumerate(hits, 1)
                            if h.source_description.startswith(f"apollo/{file}:")
                            and heading_of(h.content) == heading
                        ),
                        None,
                    )
                    scores[kind].append(
                        (
                            int(rank == 1),
                            int(rank is not None and rank <= 5),
                            1 / rank if rank else 0.0,
                        )
                    )
            cells = []
            for kind in kinds:
                s = scores[kind]
                n = len(s)
                r1, r5 = sum(a for a, _, _ in s) / n, sum(b for _, b, _ in s) / n
                mrr = sum(c for _, _, c in s) / n
                cells.append(f"{kind}: R@1 {r1:.3f} R@5 {r5:.3f} MRR {mrr:.3f}")
            print(
                f"max_chars {size:>5}: {report.chunks_added:>5} chunks, mean "
                f"{sum(map(len, texts)) / len(texts):6.0f} chars, {over:5.1%} over 256 tokens, "
                f"ingest {took:5.1f} s | " + " | ".join(cells),
                flush=True,
            )


def _untruncated(tokenizer: object) -> object:
    import tokenizers

    assert isinstance(tokenizer, tokenizers.Tokenizer)
    copy = tokenizers.Tokenizer.from_str(tokenizer.to_str())
    copy.no_truncation()
    return copy


if __name__ == "__main__":
    run([int(a) for a in sys.argv[1:]] or [500, 1000, 2000])
