"""The test suite's own structure (issue 13 item 8): one way to import a test helper and every
marker declared and used (the events of every type in one place: ``test_event_registry.py``).

Test helpers (the modules of ``tests/``, ``bench/`` and ``wal-fixtures/`` not named ``test_*``)
sit directly in a folder of pytest's ``pythonpath`` and are plain imports (``import
_service_fixtures as sf``). Every test file is read with ``ast``: code that edits ``sys.path``,
loads a module from a file location, or imports ``tests.…`` or another test module is refused
(a child script held in a string literal is not code of the test file, so it is not read).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTEST_INI = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
#: The folders pytest puts on ``sys.path``: where every helper module lives.
HELPER_DIRS = [ROOT / d for d in PYTEST_INI["pythonpath"]]
#: pytest's own marks; every other mark must be declared in pyproject.
BUILTIN_MARKS = frozenset(
    {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}
)


def _python_files() -> Iterator[Path]:
    for folder in HELPER_DIRS:
        yield from sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _is_test_module(path: Path) -> bool:
    return path.name.startswith("test_") or path.name == "conftest.py"


def _dotted(node: ast.expr) -> str:
    """``sys.path.insert`` for the expression ``sys.path.insert``; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _offences(path: Path) -> Iterator[str]:
    where = path.relative_to(ROOT)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name.startswith("sys.path.") or name.endswith("spec_from_file_location"):
                yield f"{where}:{node.lineno}: calls {name}"
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        for module in modules:
            top = module.split(".")[0]
            if top in {"tests", "bench"} or module.split(".")[-1].startswith("test_"):
                yield f"{where}:{node.lineno}: imports {module}"


def test_helpers_are_imported_one_way() -> None:
    offences = [o for path in _python_files() for o in _offences(path)]
    assert offences == [], "import test helpers as plain modules:\n" + "\n".join(offences)


def test_every_helper_module_sits_in_a_pythonpath_folder() -> None:
    misplaced = [
        str(path.relative_to(ROOT))
        for path in _python_files()
        if not _is_test_module(path) and path.parent not in HELPER_DIRS
    ]
    assert misplaced == [], f"move these helpers into one of {PYTEST_INI['pythonpath']}"


def _marks(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and _dotted(node.value) == "pytest.mark":
            yield node.attr


def test_every_marker_is_declared_and_used() -> None:
    declared = {line.split(":")[0].strip() for line in PYTEST_INI["markers"]}
    used = {m for path in _python_files() for m in _marks(path)} - BUILTIN_MARKS
    assert used == declared
    assert "--strict-markers" in PYTEST_INI["addopts"].split()
