"""Files and directories are renamed into place in one module (issue 31 item 5).

``lcg.events.files`` owns the atomic write (temp file, fsync, rename, fsync the directory) and
the rename of a staged file or directory (``rename_into_place``); every other module calls
those, so a new writer cannot forget a step. A call of ``os.replace`` or ``os.rename``
anywhere else in ``src/lcg`` fails (ADR 0227).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "lcg"
OWNER = SRC / "events" / "files.py"


def _renames(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in {"replace", "rename"}
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    ]


def test_only_events_files_renames_into_place() -> None:
    offences = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        if path != OWNER
        for line in _renames(path)
    ]
    assert offences == [], "use lcg.events atomic_write / atomic_file / rename_into_place"
    assert _renames(OWNER), "the owner itself renames"
