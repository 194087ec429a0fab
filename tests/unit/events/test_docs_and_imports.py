"""``docs/events.md`` documents the whole catalogue; ``lcg.events`` imports only leaf modules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import msgspec

from lcg.events import model

ROOT = Path(__file__).resolve().parents[3]
ENVELOPE = {"seq", "ts", "gen", "v", "group_id"}
ALLOWED = {"lcg.errors", "lcg.telemetry", "lcg.timestamps"}


def _structs() -> list[type[msgspec.Struct]]:
    found = []
    for name in model.__all__:
        obj = getattr(model, name)
        if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj is not model.EventBase:
            found.append(obj)
    return found


def _sections() -> dict[str, str]:
    text = (ROOT / "docs" / "events.md").read_text()
    sections: dict[str, str] = {}
    for chunk in text.split("\n### ")[1:]:
        heading, _, body = chunk.partition("\n")
        for name in re.findall(r"`(\w+)`", heading):
            sections[name] = body.split("\n## ")[0]
    return sections


def test_every_type_and_field_is_documented() -> None:
    sections = _sections()
    structs = _structs()
    assert len(structs) == 27  # fifteen events, twelve nested records
    for struct in structs:
        assert struct.__name__ in sections, f"docs/events.md has no section for {struct.__name__}"
        body = sections[struct.__name__]
        for field in msgspec.structs.fields(struct):
            if field.name in ENVELOPE and issubclass(struct, model.EventBase):
                continue
            assert f"`{field.name}` |" in body, f"{struct.__name__}.{field.name} is undocumented"


def test_envelope_is_documented() -> None:
    text = (ROOT / "docs" / "events.md").read_text()
    for field in ["type", *sorted(ENVELOPE)]:
        assert f"| `{field}` |" in text


def test_events_imports_only_leaf_modules() -> None:
    for path in sorted((ROOT / "src" / "lcg" / "events").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                base = node.module
                names = [f"{base}.{a.name}" if base == "lcg" else base for a in node.names]
            for name in names:
                if name == "lcg" or name.startswith("lcg."):
                    ok = name in ALLOWED or name.startswith("lcg.events")
                    assert ok, f"{path.name} imports {name}: events/ may import only {ALLOWED}"
