"""The "how to add" sections of ``docs/architecture.md`` hold to the code (issue 31 item 5, ADR
0221): each of the six extension points has its section, each section ends with one ``**Files
touched: N**`` line whose N is the number of files it lists, every file it lists exists (a
``<name>`` placeholder: its folder exists and holds at least one file of the kind today),
every registry it names (``path::NAME``) is defined in that file, and the paths its prose
names exist. Where the code can say the count is whole, it is asked: every dispatch over the
``Event`` union is a listed file, and every command module and method table follows the
listed pattern.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

import pytest

from lcg.events import Event

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

#: The extension points whose cost the doc states (the issue's six everyday changes).
EXTENSION_POINTS = (
    "an event type",
    "an RPC method",
    "a CLI command",
    "a projection",
    "a transport",
    "a file format",
)


_COUNT = re.compile(r"\*\*Files touched: (\d+)\*\*(.*?)(?:\n\n|\Z)", re.S)
_TICKED = re.compile(r"`([^`]+)`")
#: A backticked repository path: ``src/…``, ``tests/…`` or ``docs/…``, maybe ``::Name``.
_PATH = re.compile(r"^(?:src|tests|docs)/[\w/<>.-]+\.(?:py|md)(?:::[\w.]+)?$")


def _sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for chunk in text.split("\n## ")[1:]:
        heading, _, body = chunk.partition("\n")
        if heading.startswith("How to add "):
            found[heading.removeprefix("How to add ")] = body
    return found


SECTIONS = _sections()


def _listed(body: str) -> tuple[int, list[str]]:
    """The count a section states and the files its ``Files touched`` line lists."""
    counts = _COUNT.findall(body)
    assert len(counts) == 1, "one **Files touched: N** line per section"
    stated, rest = counts[0]
    return int(stated), [t for t in _TICKED.findall(rest) if _PATH.match(t)]


def _defined(tree: ast.Module, dotted: str) -> bool:
    """Whether ``dotted`` (``NAME`` or ``Class.method``) is defined at the module's top."""
    scope: list[ast.stmt] = tree.body
    for part in dotted.split("."):
        for node in scope:
            names: list[str] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            if part in names:
                scope = node.body if isinstance(node, ast.ClassDef) else []
                break
        else:
            return False
    return True


def _problems(entry: str) -> list[str]:
    path, _, name = entry.partition("::")
    if "<" in path:
        pattern = re.sub(r"<[^>]+>", "*", path)
        folder = (ROOT / pattern).parent
        if not folder.is_dir() or not list(folder.glob(Path(pattern).name)):
            return [f"{entry}: no file of the kind {pattern} exists"]
        files = sorted(folder.glob(Path(pattern).name))
    else:
        if not (ROOT / path).is_file():
            return [f"{entry}: no such file"]
        files = [ROOT / path]
    # A placeholder's name: defined by at least one file of the kind (the pattern it follows).
    if name and not any(_defined(ast.parse(f.read_text(encoding="utf-8")), name) for f in files):
        return [f"{entry}: {name} is defined in none of {[f.name for f in files]}"]
    return []


def test_every_extension_point_has_its_section() -> None:
    assert sorted(SECTIONS) == sorted(EXTENSION_POINTS)


@pytest.mark.parametrize("point", EXTENSION_POINTS)
def test_the_stated_count_is_the_files_listed_and_each_exists(point: str) -> None:
    stated, entries = _listed(SECTIONS[point])
    assert stated == len(entries), (stated, entries)
    assert [p for e in entries for p in _problems(e)] == []


@pytest.mark.parametrize("point", EXTENSION_POINTS)
def test_the_paths_the_prose_names_exist(point: str) -> None:
    named = [t for t in _TICKED.findall(SECTIONS[point]) if _PATH.match(t)]
    assert [p for e in named for p in _problems(e)] == []


def _dispatches() -> set[str]:
    """``path::Function`` of every ``match`` over the ``Event`` union ending in
    ``assert_never`` in ``src/lcg`` (the places mypy makes a new type add a case)."""
    types = {t.__name__ for t in get_args(Event)}
    found: set[str] = set()

    def visit(node: ast.AST, path: str, qual: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = qual
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = [*qual, child.name]
            if isinstance(child, ast.Match):
                classes = {
                    p.cls.id
                    for case in child.cases
                    for p in ast.walk(case.pattern)
                    if isinstance(p, ast.MatchClass) and isinstance(p.cls, ast.Name)
                }
                last = ast.dump(child.cases[-1])
                if classes & types and "assert_never" in last:
                    found.add(f"{path}::{'.'.join(q for q in qual if q)}")
            visit(child, path, inner)

    for file in sorted((ROOT / "src" / "lcg").rglob("*.py")):
        visit(ast.parse(file.read_text(encoding="utf-8")), str(file.relative_to(ROOT)), [])
    return found


def test_every_dispatch_over_the_event_union_is_a_listed_file() -> None:
    _, entries = _listed(SECTIONS["an event type"])
    dispatches = _dispatches()
    assert dispatches, "the walk finds the dispatches"
    assert dispatches <= set(entries), sorted(dispatches - set(entries))


def test_every_command_module_is_a_cli_module_with_register() -> None:
    tree = ast.parse((ROOT / "src/lcg/cli/main.py").read_text(encoding="utf-8"))
    (modules,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "COMMAND_MODULES"
    ]
    names = ast.literal_eval(modules)
    assert names and all(n.startswith("lcg.cli.") for n in names)
    for name in names:
        path = f"src/lcg/cli/{name.removeprefix('lcg.cli.')}.py::register"
        assert _problems(path) == []


def test_every_method_table_comes_from_a_methods_module() -> None:
    tree = ast.parse((ROOT / "src/lcg/rpc/methods.py").read_text(encoding="utf-8"))
    sources = {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    (table,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "METHODS"
    ]
    assert isinstance(table, ast.Tuple) and table.elts
    for element in table.elts:
        assert isinstance(element, ast.Starred) and isinstance(element.value, ast.Name)
        module = sources[element.value.id]
        assert re.fullmatch(r"lcg\.rpc\.methods_\w+", module or ""), element.value.id
