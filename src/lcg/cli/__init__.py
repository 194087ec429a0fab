"""The ``lcg`` command line: one module per command group, registered in ``lcg.cli.main``.

The entry point is ``lcg.cli.main:main``. It is not re-exported here: a function named
``main`` in this package would shadow the ``lcg.cli.main`` module for ``import ... as``.
"""

from __future__ import annotations

from lcg.cli.main import COMMAND_MODULES, CommandModuleError, build_parser

__all__ = [
    "COMMAND_MODULES",
    "CommandModuleError",
    "build_parser",
]
