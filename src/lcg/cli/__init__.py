"""The ``lcg`` command line: one module per command group, registered in ``lcg.cli.main``."""

from __future__ import annotations

from lcg.cli.main import COMMAND_MODULES, CommandModuleError, build_parser, main

__all__ = ["COMMAND_MODULES", "CommandModuleError", "build_parser", "main"]
