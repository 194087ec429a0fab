"""Hostile files cannot stall or blow up the declared pass (issue 29 item 1, ADR 0204).

Each input runs in a child interpreter through ``declare_file`` and ``resolve_tree`` (the file
as its own single chunk); the failure signal for a scan that backtracks or loops without
bound is the child's generous timeout, never a wall-clock assert. The child reports its peak
memory, which must stay within a bound proportional to the input, not to its square.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Long enough for any linear scan of these inputs on a loaded machine; a quadratic one of
#: 10 MB takes hours.
TIMEOUT_S = 120

CHILD = """
import json, re, sys
from lcg.ingest.declared import declare_file, resolve_tree

name, size = sys.argv[1], int(sys.argv[2])
unit = {
    "brackets": "[[",
    "close_open": "](",
    "link_starts": "[](",
    "backticks": "`",
    "tick_runs": None,
    "hashes": "#",
    "comment_opens": "<!--",
    "fence_lines": "```\\n",
    "title_quotes": '[a](b "',
    "wiki_pipes": "[[a|",
    "py_parens": "import (\\n",
    "py_quotes": chr(34) + chr(39) + chr(92),  # " ' and a backslash
}[name]
if unit is None:
    # Backtick runs of every length 1, 2, 3, ...: each opener unmatched.
    parts, n = [], 1
    while sum(map(len, parts)) < size:
        parts.append("`" * n + "x")
        n += 1
    text = "".join(parts)
else:
    text = unit * (size // len(unit))
text = "x " + text  # inline: a line of backticks alone would open a fence
decl = declare_file("notes/hostile.md", "# T\\n" + text + " [[Real]] #real STORY-1\\n")
other = declare_file("story.md", "---\\nid: STORY-1\\n---\\n")
py = declare_file("hostile.py", text + "\\nimport real\\n")
tree = resolve_tree([decl, other], [("c1", "notes/hostile.md", text + " STORY-1")])
# This process's own peak (VmHWM: per address space, so new at exec), never ru_maxrss, which
# Linux carries over from the parent that forked it (pytest, hundreds of MB late in a run).
with open("/proc/self/status") as fh:
    peak_mb = int(re.search(r"VmHWM:\\s+(\\d+) kB", fh.read()).group(1)) / 1024
print(json.dumps({
    "links": [r.target for r in decl.links],
    "imports": [c.candidates[0] for c in py.imports],
    "tags": decl.tags,
    "mentions": [m.target for m in tree.mentions],
    "peak_mb": peak_mb,
}))
"""

CASES = [
    ("brackets", 10_000_000),
    ("close_open", 2_000_000),
    ("link_starts", 2_000_000),
    ("backticks", 100_000),
    ("tick_runs", 1_000_000),
    ("hashes", 2_000_000),
    ("comment_opens", 1_000_000),
    ("fence_lines", 1_000_000),
    ("title_quotes", 2_000_000),
    ("wiki_pipes", 2_000_000),
    ("py_parens", 2_000_000),
    ("py_quotes", 2_000_000),
]


@pytest.mark.parametrize(("name", "size"), CASES, ids=[c[0] for c in CASES])
def test_a_hostile_file_is_read_in_bounded_time_and_memory(name: str, size: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, name, str(size)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    # A few copies of the text (the mask, the chunk) and the interpreter, never its square.
    assert report["peak_mb"] < 400 + 12 * size / 1_000_000, report["peak_mb"]
    if name not in ("comment_opens", "fence_lines"):  # those leave the rest code or comment
        assert "Real" in report["links"]
    if name == "py_parens":  # past the statements read from one file (MAX_STATEMENTS)
        assert report["imports"] == []
    elif name != "py_quotes":  # that leaves the rest inside a string
        assert "real.py" in report["imports"]


def test_a_front_matter_of_aliases_is_refused_without_expanding_them() -> None:
    laughs = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 12):
        prev = f"*a{i - 1}"
        laughs.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    text = "---\ntitle: Laughs\ntags: *a11\n" + "\n".join(laughs) + "\n---\n# Fallback\n"
    code = (
        "import sys, json\nfrom lcg.ingest.declared import declare_file\n"
        "d = declare_file('n.md', sys.stdin.read())\nprint(json.dumps([d.title, d.tags]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=text,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == ["Fallback", []]
