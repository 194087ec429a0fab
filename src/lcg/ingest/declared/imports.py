"""What a Python file imports, as candidate tree paths (issue 29, ADR 0204).

The file is parsed with ``ast`` (never run); a file that does not parse, or nests past what
the parser takes, imports nothing. Each import gives its candidate tree-relative paths, most
likely first; ``resolve_tree`` keeps the first the tree holds, so a standard-library or
third-party import (no candidate in the tree) is nothing at all.

Where an absolute import may live, in order: under the folder that holds the file's own
top-level package when the import names it (``src/pkg/a/x.py`` importing ``pkg.b`` looks
in ``src/``), the tree's root, ``src/``, then the file's own folder (a script's folder is on
its ``sys.path``). ``from a.b import c`` may import the module ``a/b/c.py`` or a name of
``a/b``: both are candidates, the module first. Relative imports are resolved from the
file's own folder; one that climbs out of the tree imports nothing.
"""

from __future__ import annotations

import ast
import posixpath
import warnings

__all__ = ["PYTHON_SUFFIXES", "python_imports"]

#: Suffixes read as Python.
PYTHON_SUFFIXES = (".py", ".pyi")


def python_imports(path: str, text: str) -> list[list[str]]:
    """Candidate paths per import of the Python file ``path``, in the order written."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes: not ours to show
            tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return []
    folder = posixpath.dirname(path)
    out: list[list[str]] = []
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    # ast.walk is breadth-first: the order they are written in is their place in the file.
    for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append(_absolute(alias.name, folder, None))
        elif isinstance(node, ast.ImportFrom):
            names: list[str | None] = [a.name for a in node.names if a.name != "*"] or [None]
            for name in names:
                if node.level:
                    found = _relative(node.module, node.level, folder, name)
                else:
                    found = _absolute(node.module or "", folder, name)
                out.append(found)
    return [c for c in out if c]


def _module_files(base: str, dotted: str, name: str | None) -> list[str]:
    """``base/a/b/name.py`` (and its package) before ``base/a/b.py`` (and its package)."""
    parts = [p for p in dotted.split(".") if p]
    stems: list[list[str]] = []
    if name is not None:
        stems.append([*parts, name])
    if parts:
        stems.append(parts)
    out: list[str] = []
    for stem in stems:
        rel = "/".join(stem)
        for candidate in (f"{rel}.py", f"{rel}/__init__.py"):
            out.append(posixpath.join(base, candidate) if base else candidate)
    return out


def _roots(dotted: str, folder: str) -> list[str]:
    """Where an absolute import of ``dotted`` may be rooted, most likely first."""
    top = dotted.split(".", 1)[0]
    roots: list[str] = []
    parts = folder.split("/") if folder else []
    for i in range(len(parts), 0, -1):
        if parts[i - 1] == top:
            roots.append("/".join(parts[: i - 1]))
            break
    roots.extend(["", "src", folder])
    unique: list[str] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def _absolute(dotted: str, folder: str, name: str | None) -> list[str]:
    if not dotted:
        return []
    out: list[str] = []
    for root in _roots(dotted, folder):
        for candidate in _module_files(root, dotted, name):
            if candidate not in out:
                out.append(candidate)
    return out


def _relative(module: str | None, level: int, folder: str, name: str | None) -> list[str]:
    parts = folder.split("/") if folder else []
    if level - 1 > len(parts):
        return []  # climbs out of the tree
    base = "/".join(parts[: len(parts) - (level - 1)])
    dotted = module or ""
    out = _module_files(base, dotted, name)
    if not dotted:
        # ``from . import x``: the module x, else a name of the package itself.
        out.append(posixpath.join(base, "__init__.py") if base else "__init__.py")
    return out
