"""Ignore files as git reads them (issue 27 item 3, ADR 0192): the matcher of
``ingest/sources/ignore.py`` decides as ``git check-ignore`` does (real git is the oracle), and
a pattern that is exponential for a backtracking matcher is decided at once."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lcg.ingest.sources.ignore import IgnoreFile


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)


RULES = [
    "*.log",
    "/build",
    "docs/**/*.tmp",
    "cache/",
    "secret[0-9].md",
    "[!a-c]x.txt",
    "out/**",
    "!out/keep.md",
    "**/gen/*.py",
    "\\#lit.md",
    "space\\ ",
    "a?c.md",
]
PATHS = [
    "x.log",
    "sub/x.log",
    "build/a.md",
    "sub/build/a.md",
    "docs/a/b/c.tmp",
    "docs/c.tmp",
    "cache/z.md",
    "sub/cache",
    "secret1.md",
    "secretA.md",
    "dx.txt",
    "ax.txt",
    "out/keep.md",
    "out/drop.md",
    "x/gen/m.py",
    "gen/m.py",
    "#lit.md",
    "space ",
    "abc.md",
    "ab/c.md",
]


def _ignored(rules: IgnoreFile, path: str, dirs: set[str]) -> bool:
    """As a walk sees it: a path is out if it, or a folder above it, is ignored."""
    parts = path.split("/")
    for k in range(1, len(parts) + 1):
        sub = "/".join(parts[:k])
        if rules.decide(sub, is_dir=k < len(parts) or sub in dirs):
            return True
    return False


def test_ignore_rules_decide_as_git_does(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("\n".join(RULES) + "\n")
    _tree(repo, {p: "" for p in PATHS if p != "sub/cache"})
    (repo / "sub" / "cache").mkdir()
    done = subprocess.run(
        ["git", "-C", str(repo), "check-ignore", "--stdin", "-n", "-v"],
        input="\n".join(PATHS) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    git = {}
    for line in done.stdout.splitlines():
        source, path = line.split("\t")
        git[path] = bool(source.strip(":")) and not source.split(":", 2)[2].startswith("!")
    rules = IgnoreFile(RULES)
    ours = {p: _ignored(rules, p, {"sub/cache"}) for p in PATHS}
    assert ours == {p: git[p] for p in PATHS}
    assert sum(ours.values()) >= 12


def test_an_exponential_pattern_for_a_backtracking_matcher_is_decided(tmp_path: Path) -> None:
    rules = IgnoreFile(["a*" * 30 + "b", "a*" * 2000 + "a", "**/" * 50 + "q"])
    assert rules.decide("a" * 40, is_dir=False) is None
    assert rules.decide("a" * 2000 + "b", is_dir=False) is True
    assert rules.decide("/".join(["x"] * 200) + "/q", is_dir=False) is True
