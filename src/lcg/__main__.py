"""``python -m lcg``: the ``lcg`` command (``python -m lcg.cli.main`` warns, as ``lcg.cli``
imports its ``main`` module first)."""

from __future__ import annotations

import sys

from lcg.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
