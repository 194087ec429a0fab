"""What importing a part of lcg drags in: the command line builds its whole parser and prints
every command's help without the engine's libraries, the Python client imports nothing of the
engine, and nothing but an Anthropic-configured workspace imports the ``anthropic`` SDK
(seconds to import; the package faces name ``AnthropicExtractor`` lazily for this). ADR 0218.

Each check runs in a fresh interpreter, so what an earlier test imported cannot hide it; the
checks are shown to fail on a command module or a client that does import a heavy library.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: The engine's libraries and the HTTP and LLM clients: none loads to parse a command line.
HEAVY = ("anthropic", "hnswlib", "httpx", "kuzu", "numpy")

#: What the Python client may load of lcg besides the root package: itself and the leaf
#: ``lcg.errors`` (``lcg.config`` only when a client is made with no socket path).
CLIENT_MAY_LOAD = ("lcg.client", "lcg.errors")

#: module imported → top-level modules it must not import.
CASES = {
    # The service and every package face: the engine, but no Anthropic SDK.
    "lcg.rpc.app": ("anthropic",),
    "lcg.extract": ("anthropic",),
    "lcg.projections": ("anthropic",),
    "lcg.query": ("anthropic",),
    "lcg.workspace": ("anthropic",),
    "lcg.ingest": ("anthropic",),
    "lcg.replication": ("anthropic",),
    "lcg.eval": ("anthropic",),
}

#: Builds the real ``lcg`` parser (every module of ``COMMAND_MODULES``, or those given in
#: argv) and asks it and every (sub)command for its help, as ``lcg [CMD...] --help`` does.
_EVERY_HELP = """
import argparse, contextlib, io, sys
from lcg.cli.main import build_parser
modules = sys.argv[1:] or None
def words(parser, path):
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from words(sub, [*path, name])
for path in list(words(build_parser(modules), [])):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        build_parser(modules).parse_args([*path, "--help"])
"""


def _modules_after(code: str, *argv: str, path: Path | None = None) -> set[str]:
    """Every module in ``sys.modules`` after ``code`` ran in a fresh interpreter."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), env.get("PYTHONPATH", "")])
    script = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", script, *argv],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    ).stdout
    return set(out.split())


def heavy_loaded(code: str, *argv: str, path: Path | None = None) -> list[str]:
    """The libraries of ``HEAVY`` that ``code`` loads in a fresh interpreter."""
    tops = {name.partition(".")[0] for name in _modules_after(code, *argv, path=path)}
    return sorted(tops & set(HEAVY))


def engine_loaded(code: str, *, path: Path | None = None) -> list[str]:
    """What ``code`` loads of lcg beyond ``CLIENT_MAY_LOAD``, and any library of ``HEAVY``."""
    loaded = _modules_after(code, path=path)
    ours = sorted(
        m
        for m in loaded
        if m.startswith("lcg.")
        and not any(m == ok or m.startswith(ok + ".") for ok in CLIENT_MAY_LOAD)
    )
    return ours + sorted({m.partition(".")[0] for m in loaded} & set(HEAVY))


def test_the_real_parser_and_every_command_s_help_leave_the_engine_alone() -> None:
    loaded = heavy_loaded(_EVERY_HELP)
    assert not loaded, f"`lcg --help` or an `lcg CMD --help` imports {loaded}"


def test_the_client_imports_nothing_of_the_engine() -> None:
    loaded = engine_loaded("import lcg.client")
    assert not loaded, f"`import lcg.client` imports {loaded}"


@pytest.mark.parametrize("code", ["from lcg.rpc import Client", "import lcg.rpc.client"])
def test_the_client_s_older_names_load_neither_the_engine_nor_the_service(code: str) -> None:
    loaded = _modules_after(code)
    assert not heavy_loaded(code), f"`{code}` imports {heavy_loaded(code)}"
    assert "lcg.rpc.app" not in loaded and "lcg.rpc.server" not in loaded


#: An ``lcg ingest PATH`` run through a service that answers (``cli/_holder`` rule 1), to its
#: end: the parser, the holder, the sync's service backend on a client (a stand-in answering
#: the ``knowledge_source_*`` methods as a service does), and ``sync_tree`` over a small tree:
#: the scan, the declared pass (links, tags) and the batches sent. argv[1]: the tree.
_INGEST_THROUGH_A_SERVICE = """
import sys
from pathlib import Path
from lcg.cli.main import build_parser
build_parser().parse_args(["ingest", sys.argv[1]])
import lcg.cli._holder
from lcg.cli._sync import service_backend
from lcg.ingest import sync_tree

class Answering:
    def __init__(self):
        self.methods = []
    def call(self, method, params):
        self.methods.append(method)
        if method == "knowledge_source_register":
            return {"created": True, "source": {"group_id": params["group_id"],
                "root": params["root"], "label": "tree", "kind": params["kind"],
                "synced_at": "2024-05-01T12:00:00.000000Z"}}
        if method == "knowledge_source_manifest":
            return {"chunks": []}
        if method == "knowledge_sync_chunks":
            return {"added": {c["chunk_id"]: "u" + str(i) for i, c in enumerate(params["add"])}}
        return {}

client = Answering()
report = sync_tree(service_backend(client), Path(sys.argv[1]), "g")
assert report.chunks_added == 2 and report.declared.links == 1, report
assert "knowledge_declare_structure" in client.methods, client.methods
"""


def test_an_ingest_through_a_service_loads_no_engine(tmp_path: Path) -> None:
    """Issue 28 item 4, ADR 0218: what bounds the time to a first answerable search is what
    ``lcg ingest`` imports before it scans; through a running service it needs the scan, the
    declared pass and the client, none of the engine."""
    (tmp_path / "a.md").write_text("# A\n\nSee [b](b.md). #draft\n")
    (tmp_path / "b.md").write_text("# B\n\nThe other note.\n")
    loaded = heavy_loaded(_INGEST_THROUGH_A_SERVICE, str(tmp_path))
    assert not loaded, f"`lcg ingest` through a service imports {loaded}"
    modules = _modules_after(_INGEST_THROUGH_A_SERVICE, str(tmp_path))
    engine = sorted(m for m in modules if m.startswith(("lcg.workspace", "lcg.projections")))
    assert not engine, f"`lcg ingest` through a service imports {engine}"


# ---- the checks catch what they should (a heavy module written here) ----------------------


def test_the_parser_check_reports_a_command_module_that_imports_a_heavy_library(
    tmp_path: Path,
) -> None:
    (tmp_path / "heavy_command.py").write_text(
        "import numpy\n\n"
        "def register(subparsers):\n"
        "    subparsers.add_parser('heavy', help='imports numpy at its top')\n"
    )
    modules = ["lcg.cli.methods", "heavy_command"]
    assert heavy_loaded(_EVERY_HELP, *modules, path=tmp_path) == ["numpy"]
    assert heavy_loaded(_EVERY_HELP, "lcg.cli.methods", path=tmp_path) == []


def test_the_client_check_reports_an_engine_import(tmp_path: Path) -> None:
    (tmp_path / "heavy_client.py").write_text("import lcg.client\nimport lcg.events\n")
    loaded = engine_loaded("import heavy_client", path=tmp_path)
    assert "lcg.events" in loaded
    (tmp_path / "numeric_client.py").write_text("import lcg.client\nimport numpy\n")
    assert engine_loaded("import numeric_client", path=tmp_path) == ["numpy"]


def _lazy_faces() -> list[str]:
    """The packages whose face is a table of homes resolved on first use (``_HOMES``)."""
    found = []
    for init in sorted((SRC / "lcg").rglob("__init__.py")):
        if "_HOMES" in init.read_text():
            found.append(".".join(init.parent.relative_to(SRC).parts))
    return found


def _face_imports(package: str, *, type_checking: bool) -> dict[str, str]:
    """Name → module of what the face imports of lcg under ``if TYPE_CHECKING:`` (for mypy),
    or at its top level (bound when the face is imported)."""
    init = SRC.joinpath(*package.split("."), "__init__.py")
    body = ast.parse(init.read_text()).body
    if type_checking:
        blocks = [
            n for n in body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
        ]
        body = [imp for block in blocks for imp in block.body]
    names: dict[str, str] = {}
    for imp in body:
        # ``lcg.lazy`` is the face's machinery, not a name it offers.
        if isinstance(imp, ast.ImportFrom) and (imp.module or "").startswith("lcg."):
            if imp.module == "lcg.lazy":
                continue
            for alias in imp.names:
                home = str(imp.module)
                if home == package:  # a module of the package, offered as a namespace
                    home = f"{package}.{alias.name}"
                names[alias.asname or alias.name] = home
    return names


def test_the_lazy_faces_are_found() -> None:
    assert {"lcg.rpc", "lcg.ingest", "lcg.ingest.sources"} <= set(_lazy_faces())


@pytest.mark.parametrize("package", _lazy_faces())
def test_a_lazy_face_s_table_is_what_it_declares_for_the_type_checker(package: str) -> None:
    face = importlib.import_module(package)
    table = dict(face._HOMES)
    table.update({m: f"{package}.{m}" for m in getattr(face, "_MODULES", ())})
    assert table == _face_imports(package, type_checking=True)
    assert set(table) | set(_face_imports(package, type_checking=False)) == set(face.__all__)


@pytest.mark.parametrize("package", _lazy_faces())
def test_no_name_a_lazy_face_resolves_is_also_a_module_of_its_package(package: str) -> None:
    """Importing ``pkg.name`` sets the attribute ``name`` of ``pkg`` to the module, so a face
    name that is also a module's would never reach ``__getattr__`` once that module is loaded:
    such a name is bound when the face is imported (as ``lcg.ingest.sources.discover`` is)."""
    folder = SRC.joinpath(*package.split("."))
    modules = {p.stem for p in folder.glob("*.py")} | {
        p.parent.name for p in folder.glob("*/__init__.py")
    }
    clashing = sorted(set(importlib.import_module(package)._HOMES) & modules)
    assert not clashing, f"{package} resolves {clashing} lazily, but modules have those names"


@pytest.mark.parametrize("module", sorted(CASES))
def test_importing_a_part_leaves_the_heavy_libraries_alone(module: str) -> None:
    tops = {name.partition(".")[0] for name in _modules_after(f"import {module}")}
    loaded = tops & set(CASES[module])
    assert not loaded, f"importing {module} imports {sorted(loaded)}"


def test_the_lazy_names_still_resolve() -> None:
    import lcg.rpc
    from lcg.client import AsyncClient, Client, TransportError
    from lcg.extract import AnthropicExtractor
    from lcg.extract.anthropic_extractor import AnthropicExtractor as direct

    assert AnthropicExtractor is direct
    assert (lcg.rpc.Client, lcg.rpc.AsyncClient, lcg.rpc.TransportError) == (
        Client,
        AsyncClient,
        TransportError,
    )
    for name in lcg.rpc.__all__:
        assert getattr(lcg.rpc, name) is not None
    with pytest.raises(AttributeError):
        _ = lcg.rpc.NoSuchName  # type: ignore[attr-defined]
