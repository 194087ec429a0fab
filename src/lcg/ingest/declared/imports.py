"""What a Python file imports, as candidate tree paths (issue 29, ADR 0204).

The file is never run: its import statements are found by one linear scan that skips
strings and comments, and each is parsed with ``ast`` on its own (a statement that does not
parse imports nothing; the rest of the file need not parse). Each import gives its candidate
tree-relative paths, most likely first; ``resolve_tree`` keeps the first the tree holds, so
a standard-library or third-party import (no candidate in the tree) is nothing at all.

Where an absolute import may live, in order: under the folder that holds the file's own
top-level package when the import names it (``src/pkg/a/x.py`` importing ``pkg.b`` looks
in ``src/``), the tree's root, ``src/``, then the file's own folder (a script's folder is on
its ``sys.path``). ``from a.b import c`` may import the module ``a/b/c.py`` or a name of
``a/b``: both are candidates, the module first. Relative imports are resolved from the
file's own folder; one that climbs out of the tree imports nothing. A relative import can
name only a file of the tree, so ``resolve_tree`` reports one the tree does not hold as
unresolved (``ImportRef.relative``).
"""

from __future__ import annotations

import ast
import posixpath
import re
import warnings
from collections import deque

from lcg.ingest.declared.model import ImportRef

__all__ = ["MAX_STATEMENTS", "PYTHON_SUFFIXES", "python_imports"]

#: The most import statements read from one file (a real one holds a few dozen).
MAX_STATEMENTS = 10_000

#: Suffixes read as Python.
PYTHON_SUFFIXES = (".py", ".pyi")


#: What the scan skips (strings, comments) and what it looks for (a line starting an import
#: statement). Each alternative's body matches a character one way only, and a string never
#: fails to match: an unclosed one runs to the end of its line (or of the text, for a triple
#: quote). Nothing is tried again from a later position, so the scan is linear.
_TRIPLE_DOUBLE = r'"""(?:[^"\\]|\\.|"(?!""))*(?:"""|\\?\Z)'
_TRIPLE_SINGLE = r"'''(?:[^'\\]|\\.|'(?!''))*(?:'''|\\?\Z)"
_DOUBLE = r'"(?:[^"\\\n]|\\.)*(?:"|\\?$)'
_SINGLE = r"'(?:[^'\\\n]|\\.)*(?:'|\\?$)"
_STATEMENT_LINE = re.compile(r"^[ \t]*(?:import|from)[ \t\\]", re.MULTILINE)
_SCAN = re.compile(
    "(?:" + "|".join((_TRIPLE_DOUBLE, _TRIPLE_SINGLE, _DOUBLE, _SINGLE)) + r"|#[^\n]*)"
    # A statement: to the end of its logical line, through ``\\`` and parentheses (which
    # never nest in an import: an unclosed one looks no further than the next one).
    r"|^[ \t]*((?:import|from)[ \t\\](?:[^\n(\\]|\\.|\([^()]*\))*)",
    re.MULTILINE | re.DOTALL,
)


def python_imports(path: str, text: str) -> list[ImportRef]:
    """The modules the Python file ``path`` imports, each with its candidate paths, in the
    order written.

    Only the statements are parsed (with ``ast``, each on its own): the file is scanned once
    for lines that start an import outside strings and comments, which costs a fraction of
    parsing the whole file. A statement that does not parse imports nothing; the rest of the
    file need not parse.
    """
    folder = posixpath.dirname(path)
    out: list[ImportRef] = []
    # Strings and comments matter only up to the last line that may start an import: the
    # scan stops there (a string open at that point runs to it, hiding the line).
    lines = deque(_STATEMENT_LINE.finditer(text), maxlen=1)
    if not lines:
        return []
    last = lines[0]
    end = text.find("\n", last.end())
    end = len(text) if end < 0 else end
    scanned = _SCAN.findall(text, 0, _statement_end(text, last.start(), end))
    statements = [s for s in scanned if s]  # '' is a string or a comment
    for statement in statements[:MAX_STATEMENTS]:
        for node in _parse(statement):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    out.append(
                        ImportRef(
                            candidates=_absolute(alias.name, folder, None), written=alias.name
                        )
                    )
            elif isinstance(node, ast.ImportFrom):
                names: list[str | None] = [a.name for a in node.names if a.name != "*"] or [None]
                module = node.module or ""
                for name in names:
                    if node.level:
                        # ``from . import x`` names the module x (else a name of the package).
                        written = "." * node.level + (module or name or "")
                        out.append(
                            ImportRef(
                                candidates=_relative(node.module, node.level, folder, name),
                                written=written,
                                relative=True,
                            )
                        )
                    else:
                        out.append(
                            ImportRef(candidates=_absolute(module, folder, name), written=module)
                        )
    return [i for i in out if i.candidates]


#: Statements already parsed (a tree's files repeat the same imports), while there is room.
_PARSED: dict[str, list[ast.stmt]] = {}
_PARSED_MAX = 4096
_PARSED_LONGEST = 200


def _parse(statement: str) -> list[ast.stmt]:
    statement = statement.strip()
    known = _PARSED.get(statement)
    if known is not None:
        return known
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes: not ours to show
            body = ast.parse(statement).body
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        body = []
    if len(statement) <= _PARSED_LONGEST and len(_PARSED) < _PARSED_MAX:
        _PARSED[statement] = body  # nodes are only read, never changed
    return body


def _module_files(base: str, dotted: str, name: str | None) -> list[str]:
    """``base/a/b/name.py`` (and its package) before ``base/a/b.py`` (and its package)."""
    rel = dotted.replace(".", "/").strip("/")
    prefix = base + "/" if base else ""
    out: list[str] = []
    if name is not None:
        inner = f"{prefix}{rel}/{name}" if rel else f"{prefix}{name}"
        out += [f"{inner}.py", f"{inner}/__init__.py"]
    if rel:
        out += [f"{prefix}{rel}.py", f"{prefix}{rel}/__init__.py"]
    return out


def _statement_end(text: str, start: int, line_end: int) -> int:
    """Where the statement starting at ``start`` may end: past its line, or through the
    parentheses it opens or the ``\\`` it ends with."""
    line = text[start:line_end]
    if "(" in line and ")" not in line[line.index("(") :]:
        close = text.find(")", line_end)
        if close >= 0:
            nl = text.find("\n", close)
            return len(text) if nl < 0 else nl
        return len(text)
    if line.rstrip().endswith("\\"):
        return len(text)
    return line_end


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
    return list(dict.fromkeys(roots))


def _absolute(dotted: str, folder: str, name: str | None) -> list[str]:
    if not dotted:
        return []
    found = (c for root in _roots(dotted, folder) for c in _module_files(root, dotted, name))
    return list(dict.fromkeys(found))


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
