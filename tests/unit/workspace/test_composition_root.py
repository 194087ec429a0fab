"""The workspace package is the composition root (issue 13 item 1): the projections and the
projector are built only in ``lcg.workspace``, and every function that builds an embedder or an
extractor from a ``Config`` lives there too.

Read with ``ast`` (the calls inside every function of ``src/lcg``). The allow-list is of places;
the other places are the eval harness, which builds the extractor a ``--backend`` spec names
(not the workspace's configured one), and the Cypher worker, the composition root of its own
process, which opens only its read model of the graph from the spec the service sends it
(ADR 0152).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

SRC = Path(__file__).resolve().parents[3] / "src"

#: What "building from Config" calls: the projections and their projector, the embedders,
#: the provider extractors.
PROJECTION_BUILDERS = frozenset(
    {
        "GraphProjection",
        "VectorProjection",
        "TextProjection",
        "Projector",
        "EmbeddingCache",
        "CachedTextEmbedder",
    }
)
EMBEDDER_BUILDERS = frozenset(
    {"make_embedder", "LocalEmbedder", "HashEmbedder", "HttpEmbedder", "UdsEmbedder"}
)
EXTRACTOR_BUILDERS = frozenset(
    {"OpenAICompatExtractor", "AnthropicExtractor", "ReplayExtractor", "RecordingExtractor"}
)

#: module prefix → the builders a Config-taking function there may call.
ALLOWED: dict[str, frozenset[str]] = {
    "lcg.workspace": PROJECTION_BUILDERS | EMBEDDER_BUILDERS | EXTRACTOR_BUILDERS,
    "lcg.eval.backends": EXTRACTOR_BUILDERS,
    "lcg.query.sandbox.worker": frozenset({"GraphProjection"}),
}


def _module(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _called_name(call: ast.Call) -> str:
    """``X`` for ``X(...)``, ``mod.X(...)`` and ``X.from_spec(...)``; '' otherwise."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        if func.attr[:1].isupper() or func.attr.startswith("make_"):
            return func.attr
        if isinstance(func.value, ast.Name):
            return func.value.id  # a class's alternate constructor: X.from_spec(...)
    return ""


def _annotation_text(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value  # a quoted annotation
    return ast.unparse(node)


def _takes_config(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Has a parameter annotated ``Config`` (also ``lcg.config.Config``, ``Config | None``)."""
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    return any(
        a.annotation is not None and re.search(r"\bConfig\b", _annotation_text(a.annotation))
        for a in args
    )


class Build(NamedTuple):
    """One call of a builder: where, which, and whether the calling function takes a Config."""

    module: str
    function: str
    builder: str
    line: int
    from_config: bool


def builds(src: Path) -> Iterator[Build]:
    """Every call of a builder inside a function of ``src/lcg``."""
    names = PROJECTION_BUILDERS | EMBEDDER_BUILDERS | EXTRACTOR_BUILDERS
    for path in sorted((src / "lcg").rglob("*.py")):
        module = _module(path, src)
        found: dict[tuple[int, int], Build] = {}
        for fn in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and _called_name(node) in names:
                    key = (node.lineno, node.col_offset)
                    # A call in a nested function is seen from each enclosing one: it builds
                    # from a Config when any of them takes one.
                    known = found.get(key)
                    from_config = _takes_config(fn) or (known is not None and known.from_config)
                    inner = known.function if known is not None else fn.name
                    found[key] = Build(module, inner, _called_name(node), node.lineno, from_config)
        yield from found.values()


def offences(src: Path) -> list[str]:
    """Projections built outside ``lcg.workspace``; embedders and extractors built from a
    Config outside the places ``ALLOWED`` names for them."""
    bad = []
    for b in builds(src):
        if b.builder not in PROJECTION_BUILDERS and not b.from_config:
            continue
        allowed = [
            names
            for prefix, names in ALLOWED.items()
            if b.module == prefix or b.module.startswith(prefix + ".")
        ]
        if not any(b.builder in names for names in allowed):
            origin = " from a Config" if b.from_config else ""
            bad.append(f"{b.module}.{b.function} (line {b.line}) builds {b.builder}{origin}")
    return bad


def test_only_the_workspace_builds_from_config() -> None:
    bad = offences(SRC)
    assert not bad, "move the building into lcg.workspace (factory.py):\n  " + "\n  ".join(bad)


def test_the_workspace_does_build_them() -> None:
    # The check looks at real code: the workspace's own builders are seen by it.
    seen = {(b.module, b.builder, b.from_config) for b in builds(SRC)}
    # One builder (factory.open_projections) opens the projections for both the workspace
    # and verify's scratch replay (ADR 0182).
    assert ("lcg.workspace.factory", "TextProjection", False) in seen
    assert ("lcg.workspace.factory", "GraphProjection", False) in seen
    assert ("lcg.workspace.workspace", "Projector", True) in seen
    assert ("lcg.workspace.verify", "Projector", False) in seen  # the scratch replay
    assert ("lcg.workspace.factory", "make_embedder", True) in seen
    assert ("lcg.workspace.factory", "OpenAICompatExtractor", True) in seen


def test_the_check_refuses_a_build_elsewhere(tmp_path: Path) -> None:
    # Where the factory lived before (extract/), and a projection opened by the RPC layer.
    pkg = tmp_path / "lcg"
    (pkg / "extract").mkdir(parents=True)
    (pkg / "rpc").mkdir()
    (pkg / "extract" / "factory.py").write_text(
        "def embedder_from_config(config: Config) -> E:\n    return make_embedder(config.x)\n"
    )
    (pkg / "rpc" / "app.py").write_text(
        "class App:\n"
        "    def open(self, config: 'lcg.config.Config') -> None:\n"
        "        self.g = GraphProjection(config.workspace)\n"
        "        self.x = AnthropicExtractor.from_spec(config.llm)\n"
        "    def other(self, path: Path) -> None:\n"
        "        self.t = TextProjection(path)\n"  # a projection: refused from a Path too
        "        self.e = HashEmbedder(8)\n"  # an embedder not from a Config: a test double
    )
    assert sorted(offences(tmp_path)) == [
        "lcg.extract.factory.embedder_from_config (line 2) builds make_embedder from a Config",
        "lcg.rpc.app.open (line 3) builds GraphProjection from a Config",
        "lcg.rpc.app.open (line 4) builds AnthropicExtractor from a Config",
        "lcg.rpc.app.other (line 6) builds TextProjection",
    ]
