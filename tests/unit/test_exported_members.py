"""Every package re-exports a sorted ``__all__`` whose names all resolve."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "lcg",
    "lcg.events",
    "lcg.projections",
    "lcg.projections.graph",
    "lcg.workspace",
    "lcg.replication",
    "lcg.ingest",
    "lcg.ingest.curation",
    "lcg.ingest.extraction",
    "lcg.ingest.sources",
    "lcg.extract",
    "lcg.extract.extractor",
    "lcg.rpc",
    "lcg.client",
    "lcg.eval",
    "lcg.cli",
]


def _isort_key(member: str) -> tuple[int, str]:
    """Constants, then classes, then functions (the order ruff's RUF022 keeps)."""
    if member.isupper():
        return (0, member)
    return (1 if member[0].isupper() else 2, member)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    assert len(exported) == len(set(exported)), f"{name}.__all__ has duplicates"
    for member in exported:
        assert hasattr(module, member), f"{name}.__all__ names {member!r}, which is missing"


@pytest.mark.parametrize("name", [p for p in PACKAGES if p not in ("lcg", "lcg.cli")])
def test_packages_export_something(name: str) -> None:
    assert importlib.import_module(name).__all__
