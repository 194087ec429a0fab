"""The service caps glibc's malloc arenas (``LCG_MALLOC_ARENA_MAX``, default 2; ADR 0085)."""

from __future__ import annotations

import subprocess
import sys

from lcg.config import Config


def _cap(arenas: int) -> str:
    code = f"from lcg.cli.serve import limit_malloc_arenas; print(limit_malloc_arenas({arenas}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_cap_is_applied_on_glibc_and_zero_leaves_the_default() -> None:
    assert _cap(2) == ("True" if sys.platform.startswith("linux") else "False")
    assert _cap(0) == "False"


def test_the_setting_defaults_to_two_and_zero_turns_it_off() -> None:
    assert Config.from_env(env={}).malloc_arena_max == 2
    assert Config.from_env(env={"LCG_MALLOC_ARENA_MAX": "0"}).malloc_arena_max == 0
