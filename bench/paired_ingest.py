"""``lcg ingest`` of a 1,000-file git tree by two checkouts of lcg, paired in one command.

    python bench/paired_ingest.py BEFORE_SRC AFTER_SRC [--files N] [--rounds R]

``BEFORE_SRC`` and ``AFTER_SRC`` are the ``src`` folders of two checkouts (say ``git worktree
add /tmp/before <commit>``). One tree is generated once: ``N`` Markdown and Python files in
nested folders with a ``.gitignore``, committed into a real git repository in 20 dated
commits, with a few files edited after the last commit (so both the commit-time and the
modification-time paths run). Each round runs, for each version in turn (the order alternating
from round to round, so a drift of the machine's speed weighs on both alike):

1. the first ``lcg ingest`` of the tree into an empty workspace (offline: no service runs);
2. ``lcg ingest`` again, unchanged (the re-sync: discovery, reading and the plan only).

Each figure is the wall time of the whole command. Printed: each figure's median over the
rounds for both versions and the median of the per-round ratios AFTER / BEFORE (1.00 = the
same; under 1 the after version is faster). The hash embedder is a TEST DOUBLE here (the same
vector cost for both); nothing reads ``../shared``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GROUP = "bench"
_WORDS = (
    "orbit lander module thruster telemetry payload booster capsule docking hatch crater "
    "regolith ascent descent gimbal sextant beacon antenna reactor coolant valve"
).split()


def _env(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "ANTHROPIC_"))}
    env.update({"PYTHONPATH": str(src), "LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"})
    return env


def _git(tree: Path, *args: str, when: str | None = None) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.org",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.org",
    }
    if when is not None:
        env.update({"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
    subprocess.run(["git", *args], cwd=tree, env=env, check=True, capture_output=True)


def _paragraph(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(30, 90))) + "."


def make_tree(tree: Path, files: int, seed: int = 7) -> None:
    """``files`` Markdown and Python files under ``tree``, committed in 20 dated commits."""
    rng = random.Random(seed)
    tree.mkdir(parents=True)
    (tree / ".gitignore").write_text("build/\n*.tmp\n", encoding="utf-8")
    _git(tree, "init", "-q")
    paths: list[Path] = []
    for i in range(files):
        folder = tree / f"part{i % 10}" / f"chapter{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        if i % 4 == 3:
            path = folder / f"module_{i}.py"
            body = "\n\n".join(
                f"def step_{i}_{k}(x):\n    '''{_paragraph(rng)}'''\n    return x + {k}\n"
                for k in range(3)
            )
        else:
            path = folder / f"note_{i}.md"
            body = f"# Note {i}\n\n" + "\n\n".join(
                f"## Section {k}\n\n{_paragraph(rng)}" for k in range(3)
            )
        path.write_text(body + "\n", encoding="utf-8")
        paths.append(path)
    per = max(1, len(paths) // 20)
    for c in range(20):
        chunk = paths[c * per : (c + 1) * per] if c < 19 else paths[c * per :]
        if not chunk:
            continue
        _git(tree, "add", *[str(p.relative_to(tree)) for p in chunk], ".gitignore")
        _git(tree, "commit", "-q", "-m", f"commit {c}", when=f"2026-0{1 + c % 9}-1{c % 9}T10:00:00")
    for path in paths[:: max(1, files // 20)]:
        with path.open("a", encoding="utf-8") as f:
            f.write("\nAn edit not committed yet.\n")


def _ingest(src: Path, tree: Path, workspace: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lcg",
            "-C",
            str(workspace),
            "ingest",
            str(tree),
            "-g",
            GROUP,
            "-s",
            "--json",
        ],
        env=_env(src),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"lcg ingest failed ({src}): {proc.stderr[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    """Run the paired rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the src folder of the baseline checkout")
    parser.add_argument("after", type=Path, help="the src folder of the changed checkout")
    parser.add_argument("--files", type=int, default=1000, help="files in the tree (1000)")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds (3)")
    args = parser.parse_args(argv)
    versions = {"before": args.before.resolve(), "after": args.after.resolve()}
    scratch = Path(tempfile.mkdtemp(prefix="lcg-paired-ingest-"))
    try:
        tree = scratch / "tree"
        make_tree(tree, args.files)
        figures: dict[str, dict[str, list[float]]] = {
            name: {"first": [], "again": []} for name in versions
        }
        for r in range(args.rounds):
            order = list(versions) if r % 2 == 0 else list(reversed(versions))
            for name in order:
                ws = scratch / f"ws-{name}-{r}"
                ws.mkdir()
                figures[name]["first"].append(_ingest(versions[name], tree, ws))
                figures[name]["again"].append(_ingest(versions[name], tree, ws))
                shutil.rmtree(ws)
            said = [
                f"{n} first {figures[n]['first'][-1]:.2f} s, again {figures[n]['again'][-1]:.2f} s"
                for n in versions
            ]
            print(f"round {r + 1}: " + "; ".join(said), flush=True)
        print(f"\nlcg ingest of a {args.files}-file git tree, {args.rounds} rounds (hash embedder)")
        print(f"{'figure':<10} {'before s':>9} {'after s':>9} {'ratio':>6}")
        for fig in ("first", "again"):
            b, a = figures["before"][fig], figures["after"][fig]
            ratio = statistics.median(x / y for x, y in zip(a, b, strict=True))
            mb, ma = statistics.median(b), statistics.median(a)
            print(f"{fig:<10} {mb:>9.2f} {ma:>9.2f} {ratio:>6.2f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
