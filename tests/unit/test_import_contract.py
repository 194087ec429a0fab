"""The import contract (issue 13): which of lcg's packages each package may import, and no
import of another package's private module.

Imports point one way (ARCHITECTURE.md §2, ADR 0118)::

    cli ─▶ rpc ─▶ replication ─▶ workspace ─▶ projections ─▶ events
     │      │                        ▲              │
     └─▶ eval ─▶ ingest ─▶ query ────┘              └─▶ extract (a leaf: the outside world)

``query`` (search, the Cypher guard and sandbox, the graph reads, ADR 0226) reads the
projections and opens its sandbox on a workspace; ``ingest``, ``eval`` and ``rpc`` read through
it, and ``projections`` and ``workspace`` never import it.

``client`` (the Python client, ADR 0218) imports only the leaves; ``cli`` and ``rpc`` import it.

``config``, ``errors``, ``lazy`` (the lazy faces' resolver), ``telemetry`` and ``timestamps`` are
leaves every package may import.
Every ``import``/``from … import`` in ``src/lcg`` is read with ``ast`` (those inside functions
and ``TYPE_CHECKING`` blocks too: a deferred import is still a dependency). There is no list of
tolerated violations: the last ones (``extract/ontology.py`` importing ``events`` to store the
ontology) went with the move of that storage out of ``extract`` (ADR 0119), now
``workspace/ontology_files.py``.

No module depends on itself through others (issue 20, ADR 0180): the modules of ``src/lcg``
and those imports form no cycle, with no tolerated exception: the last two (rpc's app and
method tables, the MCP server and its attached backend) were broken by issue 20 item 3 (ADR
0183), and the list of known cycles went with them.
(The 600-line bound on every module is ``test_module_shape.py``'s.)

A package is imported from outside through its face (issue 20 item 7): ``from lcg.events import
EpisodeAdded``, never ``from lcg.events.model import EpisodeAdded``, so the names a package
offers the others are the ones its ``__init__`` lists in ``__all__``. Only the leaf ``config``
reads ``events/layout.py`` directly (the face would import the package it is a leaf of), and
``__main__`` names ``lcg.cli.main`` (the face does not re-export ``main``: see ``lcg.cli``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: Leaf modules of the root package: every package may import them.
LEAVES = frozenset({"config", "errors", "lazy", "telemetry", "timestamps"})

#: package (or root module) → the packages and modules of lcg it may import besides itself,
#: the leaves and the root package ``lcg`` (``__version__``).
ALLOWED: dict[str, frozenset[str]] = {
    "events": frozenset(),
    "extract": frozenset(),
    "projections": frozenset({"events", "extract"}),
    "workspace": frozenset({"projections", "events", "extract"}),
    "query": frozenset({"workspace", "projections", "events", "extract"}),
    "ingest": frozenset({"query", "workspace", "projections", "events", "extract"}),
    "replication": frozenset({"workspace", "projections", "events", "extract"}),
    "eval": frozenset({"ingest", "query", "workspace", "projections", "events", "extract"}),
    "rpc": frozenset(
        {
            "client",
            "replication",
            "ingest",
            "query",
            "workspace",
            "projections",
            "events",
            "extract",
        }
    ),
    "cli": frozenset(
        {
            "client",
            "ui",
            "rpc",
            "eval",
            "replication",
            "ingest",
            "query",
            "workspace",
            "projections",
            "events",
            "extract",
        }
    ),
    # ``lcg ui``'s page: a client of the service's reads, and eval's report files (ADR 0224).
    "ui": frozenset({"client", "eval", "ingest", "events"}),
    # The Python client imports nothing of the engine, only the leaves (ADR 0218).
    "client": frozenset(),
    "__main__": frozenset({"cli"}),
    # The leaves import no package, except that ``config`` takes the on-disk names from
    # ``events/layout.py``, the one place they are named (a module of constants).
    "config": frozenset({"events.layout"}),
    "errors": frozenset(),
    "lazy": frozenset(),
    "telemetry": frozenset(),
    "timestamps": frozenset(),
}


class Import(NamedTuple):
    """One import of an lcg module: who, what, where."""

    importer: str
    imported: str
    line: int


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str, src: Path) -> bool:
    base = src.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def lcg_imports(src: Path) -> Iterator[Import]:
    """Every import of an ``lcg`` module under ``src/lcg``, as absolute module names.

    ``from pkg import name`` counts as an import of ``pkg.name`` when that is a module (so
    ``from lcg.events import _fs`` is seen as the private module it is), else of ``pkg``.
    """
    for path in sorted((src / "lcg").rglob("*.py")):
        importer = _module_name(path, src)
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join([*base, node.module] if node.module else base)
                else:
                    module = node.module or ""
                targets = [
                    f"{module}.{a.name}" if _is_module(f"{module}.{a.name}", src) else module
                    for a in node.names
                ]
            else:
                continue
            for target in dict.fromkeys(targets):
                if target == "lcg" or target.startswith("lcg."):
                    yield Import(importer, target, node.lineno)


def _unit(module: str) -> str:
    """The package (or root module) ``lcg.<unit>…`` a module belongs to; ``""`` for ``lcg``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(imports: list[Import]) -> list[Import]:
    """Imports of a package the importer's row of ``ALLOWED`` does not name."""
    bad = []
    for imp in imports:
        mine, theirs = _unit(imp.importer), _unit(imp.imported)
        if mine == "" or theirs in ("", mine) or theirs in LEAVES:
            continue
        allowed = ALLOWED.get(mine)
        assert allowed is not None, f"{imp.importer}: the package {mine!r} is not in ALLOWED"
        inner = imp.imported.removeprefix("lcg.")
        if theirs in allowed or any(inner == a or inner.startswith(a + ".") for a in allowed):
            continue
        bad.append(imp)
    return bad


def private_violations(imports: list[Import]) -> list[Import]:
    """Imports of a ``_private`` module from outside the package that holds it."""
    bad = []
    for imp in imports:
        parts = imp.imported.split(".")
        for i, part in enumerate(parts[1:], start=1):
            if part.startswith("_") and not part.startswith("__"):
                owner = ".".join(parts[:i])
                if imp.importer != owner and not imp.importer.startswith(owner + "."):
                    bad.append(imp)
                break
    return bad


def cycle_imports(imports: list[Import]) -> set[tuple[str, str]]:
    """The imports that lie on a cycle: those between two modules of one strongly connected
    component of the module graph (Tarjan's algorithm), or of a module of itself."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, set()).add(imp.imported)
        graph.setdefault(imp.imported, set())
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    component: dict[str, int] = {}
    for root in sorted(graph):
        if root in order:
            continue
        # Iterative, so a deep chain of imports cannot exhaust the recursion limit.
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == order[node]:
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component[member] = order[node]
                        if member == node:
                            break
            elif child not in order:
                order[child] = low[child] = len(order)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], order[child])
    return {
        (imp.importer, imp.imported)
        for imp in imports
        if component[imp.importer] == component[imp.imported]
    }


def _short(name: str) -> str:
    return name.removeprefix("lcg.")


def _show(imports: list[Import]) -> str:
    return "\n".join(f"  {i.importer} (line {i.line}) imports {i.imported}" for i in imports)


# ---- the contract on lcg itself ----------------------------------------------------------


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return list(lcg_imports(SRC))


def test_every_package_is_in_the_table(imports: list[Import]) -> None:
    units = {_unit(i.importer) for i in imports} | {_unit(i.imported) for i in imports}
    assert units - {""} <= set(ALLOWED), f"add {sorted(units - {''} - set(ALLOWED))} to ALLOWED"


def test_imports_point_one_way(imports: list[Import]) -> None:
    bad = layer_violations(imports)
    assert not bad, "imports against the layer table (ALLOWED):\n" + _show(bad)


def test_no_package_imports_another_packages_private_module(imports: list[Import]) -> None:
    bad = private_violations(imports)
    assert not bad, (
        "private modules imported from outside their package (re-export the name from the "
        "package's __init__, or make the module public with git mv):\n" + _show(bad)
    )


def test_no_import_cycles(imports: list[Import]) -> None:
    on_cycles = {(_short(a), _short(b)) for a, b in cycle_imports(imports)}
    assert not on_cycles, (
        "imports that close an import cycle (a module depending on itself through others; "
        "invert one with a protocol or move what both need below them):\n"
        + "\n".join(
            f"  {i.importer} (line {i.line}) imports {i.imported}"
            for i in imports
            if (_short(i.importer), _short(i.imported)) in on_cycles
        )
    )


def face_names(src: Path, package: str) -> frozenset[str]:
    """The names ``lcg.<package>``'s ``__init__`` lists in ``__all__`` (read, not imported)."""
    init = src / "lcg" / package / "__init__.py"
    if not init.exists():
        return frozenset()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def face_violations(imports: list[Import], src: Path = SRC) -> list[Import]:
    """Imports of a module inside another package instead of that package's face (a module
    the face lists in ``__all__``, offered as a namespace, is part of the face)."""
    bad = []
    for imp in imports:
        mine, theirs = _unit(imp.importer), _unit(imp.imported)
        if mine in ("", "__main__", *LEAVES) or theirs in ("", mine, *LEAVES):
            continue
        face = f"lcg.{theirs}"
        inner = imp.imported.removeprefix(face + ".")
        if imp.imported == face or ("." not in inner and inner in face_names(src, theirs)):
            continue
        bad.append(imp)
    return bad


def test_other_packages_are_imported_through_their_faces(imports: list[Import]) -> None:
    bad = face_violations(imports)
    assert not bad, (
        "imports past another package's face (import the name from the package, adding it to "
        "the package's __init__ and __all__ if it is not there):\n" + _show(bad)
    )


# ---- the checker catches what it should (a small tree written here) -----------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "lcg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checker_sees_upward_deferred_relative_and_private_imports(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "errors.py": "",
            "events/__init__.py": "from lcg.events._fs import *\n",  # its own: allowed
            "events/_fs.py": "",
            "events/model.py": "from . import _fs\nfrom ..errors import *\n",
            "projections/__init__.py": "",
            "projections/graph.py": (
                "from lcg.events import _fs\n"
                "def later():\n    import lcg.ingest.episodes\n"
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from lcg.rpc.app import App\n"
            ),
            "ingest/__init__.py": "",
            "ingest/episodes.py": "from lcg.projections import graph\n",
            "rpc/__init__.py": "",
            "rpc/app.py": "",
        },
    )
    found = list(lcg_imports(src))
    assert Import("lcg.events.model", "lcg.events._fs", 1) in found  # relative, resolved
    assert Import("lcg.events.model", "lcg.errors", 2) in found
    layer = {(i.importer, i.imported) for i in layer_violations(found)}
    assert layer == {
        ("lcg.projections.graph", "lcg.ingest.episodes"),  # inside a function
        ("lcg.projections.graph", "lcg.rpc.app"),  # under TYPE_CHECKING
    }
    private = {(i.importer, i.imported) for i in private_violations(found)}
    assert private == {("lcg.projections.graph", "lcg.events._fs")}  # not events.model's


def test_the_checker_sees_cycles_through_deferred_and_type_checking_imports(
    tmp_path: Path,
) -> None:
    src = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "events/__init__.py": "",
            # a → b at import time, b → c in a function, c → a under TYPE_CHECKING: one cycle.
            "events/a.py": "from lcg.events import b\n",
            "events/b.py": "def later():\n    from lcg.events import c\n",
            "events/c.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from lcg.events.a import A\n"
            ),
            # d → a is no cycle (nothing comes back to d); e imports itself.
            "events/d.py": "import lcg.events.a\n",
            "events/e.py": "from . import e\n",
        },
    )
    assert cycle_imports(list(lcg_imports(src))) == {
        ("lcg.events.a", "lcg.events.b"),
        ("lcg.events.b", "lcg.events.c"),
        ("lcg.events.c", "lcg.events.a"),
        ("lcg.events.e", "lcg.events.e"),
    }


def test_the_checker_tells_a_face_import_from_one_past_the_face(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "config.py": "from lcg.events.layout import WAL\n",  # a leaf: exempt
            "events/__init__.py": (
                "from lcg.events import offered\nfrom lcg.events.model import Event\n"
                '__all__ = ["Event", "offered"]\n'
            ),
            "events/model.py": "from lcg.events.layout import WAL\n",  # its own package
            "events/layout.py": "",
            "events/offered.py": "",
            "events/hidden.py": "",
            "ingest/__init__.py": "",
            "ingest/episodes.py": (
                "from lcg.events import Event\n"  # the face
                "from lcg.events import offered\n"  # a module the face lists
                "from lcg.events.model import Event as E\n"  # past the face
                "from lcg.events import hidden\n"  # a module the face does not list
                "def later():\n    import lcg.events.layout\n"  # past it, deferred
            ),
        },
    )
    bad = {(i.importer, i.imported, i.line) for i in face_violations(list(lcg_imports(src)), src)}
    assert bad == {
        ("lcg.ingest.episodes", "lcg.events.model", 3),
        ("lcg.ingest.episodes", "lcg.events.hidden", 4),
        ("lcg.ingest.episodes", "lcg.events.layout", 6),
    }
