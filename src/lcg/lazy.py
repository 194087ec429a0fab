"""Lazy package faces (ADR 0218): a face lists the names its package offers and the module
each lives in, and imports a module only when one of its names is first used, so importing a
face costs no more than what its caller uses.

A face ends with ``__getattr__, __dir__ = lazy_face(__name__, _HOMES, __all__)`` (PEP 562)
and names the same imports under ``if TYPE_CHECKING:`` for the type checker;
``tests/unit/test_import_weight.py`` holds the two to each other.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(
    package: str,
    homes: Mapping[str, str],
    names: Collection[str],
    *,
    modules: Collection[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the face of ``package``: a name of ``homes`` is imported
    from the module ``homes`` names on first use and kept in the package (so the next use is
    a plain attribute); a name of ``modules`` is that module itself. ``names`` (the face's
    ``__all__``) are listed by ``dir()`` whether loaded or not."""

    def resolve(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(home)
        value = module if name in modules else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def listing() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return resolve, listing
