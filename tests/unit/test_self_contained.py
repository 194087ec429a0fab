"""The repository is self-contained: nothing under ``src/``, ``tests/`` or the Makefile reaches
for the project's ``../shared`` folder (only ``bench/`` and ``lcg eval longmemeval --data``
use data kept outside, and they name what is missing).

The check works on Python's own tokens: every string literal is split into path components,
and a component ``shared`` that is part of a path (``"shared/data"``, ``parent / "shared"``,
``"../shared"``) is a reference. The demo corpus and the ontology live in ``examples/``.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The one word a path outside the repository goes through.
OUTSIDE = "shared"
#: The only modules that may name data outside the repository, and the data they may name:
#: LongMemEval is large and stays outside; its command says where it is expected.
ALLOWED = {
    "src/lcg/cli/eval.py": "longmemeval",
    "src/lcg/eval/longmemeval.py": "longmemeval",
}


def _literal_text(token: str) -> str:
    """The characters of a string token without its prefix and quotes (f-strings included)."""
    body = token.lstrip("rbfuRBFU")
    for quote in ('"""', "'''", '"', "'"):
        if body.startswith(quote) and body.endswith(quote) and len(body) >= 2 * len(quote):
            return body[len(quote) : -len(quote)]
    return body


def path_references(source: str) -> list[tuple[int, str]]:
    """``(line, literal)`` for each string literal that is a path through ``shared``."""
    tokens = [
        t
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)
    ]
    found: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.STRING:
            continue
        parts = re.split(r"[/\\]", _literal_text(tok.string))
        if OUTSIDE not in parts:
            continue
        joined = len(parts) > 1  # "shared/data", "../shared"
        before = tokens[i - 1].string if i > 0 else ""
        after = tokens[i + 1].string if i + 1 < len(tokens) else ""
        if joined or before == "/" or after == "/":  # parent / "shared" / "data"
            found.append((tok.start[0], tok.string))
    return found


def test_the_check_sees_every_spelling_of_the_old_paths() -> None:
    # Each line is how the repository used to reach the corpus or the ontology.
    old = (
        'A = Path(__file__).resolve().parents[3].parent / "shared/data/apollo/ontology.yaml"\n'
        'B = sf.REPO.parent / "shared" / "data" / "apollo"\n'
        'C = here / ".." / "shared" / "data" / "apollo"\n'
        'D = Path("../shared/data/apollo")\n'
        'E = f"{root}/shared/data"\n'
    )
    assert [line for line, _ in path_references(old)] == [1, 2, 3, 4, 5]
    # A word "shared" that is no path (a uuid, a sentence) is not a reference.
    fine = 'ent("shared", name="common text")\nx = "shared text 1"\nfrom mcp.shared import y\n'
    assert path_references(fine) == []


def test_src_and_tests_do_not_reach_outside_the_repository() -> None:
    offenders: list[str] = []
    for top in ("src", "tests"):
        for path in sorted((REPO / top).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue  # this checker: its self-test spells the old paths on purpose
            rel = str(path.relative_to(REPO))
            for line, literal in path_references(path.read_text(encoding="utf-8")):
                if rel in ALLOWED and ALLOWED[rel] in literal.lower():
                    continue
                offenders.append(f"{rel}:{line}: {literal}")
    assert not offenders, (
        "these refer to ../shared; put the data under examples/ (only bench/ and "
        "`lcg eval longmemeval --data` may use data outside the repository):\n"
        + "\n".join(offenders)
    )


def test_the_makefile_does_not_reach_outside_the_repository() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    lines = [
        f"Makefile:{n}: {text.strip()}"
        for n, text in enumerate(makefile.splitlines(), start=1)
        if OUTSIDE in re.split(r"[\s/\\'\"=:]+", text.split("#", 1)[0])
    ]
    assert not lines, "the Makefile refers to ../shared:\n" + "\n".join(lines)


def test_the_example_data_is_in_the_repository() -> None:
    apollo = REPO / "examples" / "apollo"
    for name in ("corpus_prose.jsonl", "corpus_manifest.json", "ontology.yaml", "README.md"):
        assert (apollo / name).is_file(), f"{apollo / name} is missing"
    readme = (apollo / "README.md").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in readme and "Simple English Wikipedia" in readme
