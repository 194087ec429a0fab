"""The workspace the page's benchmark and screenshots look at (issue 32): a generated, linked
Markdown tree synced by a real ``lcg ingest`` into a real ``lcg serve`` (hash embedder), and a
real ``lcg ui`` in front of it.

Each generated file is one document with two sections (two chunks), a few ``[[links]]`` to
other files (some files are hubs many link to) and an inline ``#tag``; 5,000 files make
10,000 chunks and about 5,000 entities (the documents and a few dozen tags), all declared, no
LLM. The text is drawn from a fixed word list with a fixed seed, so every run builds the same
tree.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import _service_fixtures as sf
import _ui_fixtures as uf
from lcg.rpc import Client

#: The bench's tree: files (two chunks each) and the group they go to.
FILES = 5_000
GROUP = "bench"
LABEL = "garden"
TAGS = 40
HUBS = 50

#: The words the generated prose is drawn from.
WORDS = (
    "orbit lander crater basalt oxygen rover habitat module antenna solar array battery "
    "thermal radiator dust sample drill core ice pole shadow ridge valley plateau beacon "
    "relay uplink telemetry pressure seal hatch airlock suit glove visor helmet water "
    "filter pump valve cable winch crane ramp track wheel axle motor sensor camera map"
).split()


def title(i: int) -> str:
    """The title (and file name) of generated file ``i``."""
    return f"Note {i:05d}"


def _sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(8, 14))
    return " ".join(words).capitalize() + "."


def note(i: int, rng: random.Random, files: int = FILES) -> str:
    """The Markdown of file ``i``: a heading, prose with links and a tag, a second section."""
    links = {rng.randrange(HUBS) if rng.random() < 0.4 else rng.randrange(files) for _ in range(3)}
    links.discard(i)
    linked = " ".join(f"See [[{title(j)}]]." for j in sorted(links))
    return (
        f"# {title(i)}\n\n"
        f"{_sentence(rng)} {_sentence(rng)} {linked} #topic-{i % TAGS:02d}\n\n"
        f"## Details\n\n{_sentence(rng)} {_sentence(rng)} {_sentence(rng)}\n"
    )


def write_tree(parent: Path, files: int = FILES) -> Path:
    """Write the generated tree under ``parent/LABEL``; its folder."""
    root = parent / LABEL
    rng = random.Random(32)
    for i in range(files):
        sub = root / f"part-{i // 500:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{title(i)}.md").write_text(note(i, rng, files))
    return root


@dataclass
class BenchUi:
    """The served generated workspace, ``lcg ui`` in front of it, and how long it took."""

    run: uf.UiRun
    ingest_s: float
    vectors_s: float
    status: dict[str, object]


@contextmanager
def bench_ui(files: int = FILES) -> Iterator[BenchUi]:
    """The generated tree ingested into a real ``lcg serve`` and a real ``lcg ui`` in front of
    it (hash embedder); everything stopped and removed afterwards."""
    ws = sf.short_tmp("lcg-uib-")
    outside = sf.short_tmp("lcg-uib-tree-")
    tree = write_tree(outside, files)
    sock = ws / ".lcg" / "service.sock"
    serve = sf.spawn_serve(ws)
    ui: subprocess.Popen[bytes] | None = None
    try:
        sf.wait_healthy(sock, serve)
        started = time.perf_counter()
        done = sf.run_lcg(ws, "ingest", str(tree), "--group", GROUP, "--no-commits")
        assert done.returncode == 0, done.stderr
        ingest_s = time.perf_counter() - started
        with Client(sock, timeout=300) as client:
            uf.wait_vectors(client)
            vectors_s = time.perf_counter() - started
            ui, log = uf.spawn_ui(ws)
            url, port, token = uf.read_url(ui, log)
            yield BenchUi(
                run=uf.UiRun(ws, tree, serve, ui, url, port, token, client),
                ingest_s=ingest_s,
                vectors_s=vectors_s,
                status=client.call("knowledge_status", {}),
            )
    finally:
        if ui is not None:
            uf.stop_ui(ui)
        sf.stop_serve(serve, sock)
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(outside, ignore_errors=True)
