"""What a process pays to start: ``lcg --help``, ``lcg ingest --help`` and ``import lcg.client``
as whole processes, against ``python -c pass`` measured in the same run (issue 31, ADR 0218).

Targets on a quiet 2-core machine: ``lcg --help`` within 0.2 s and ``import lcg.client`` within
0.1 s. Each row is the median over ``ROUNDS`` rounds, the commands interleaved within a round so
a drift of the machine's speed weighs on every row alike; printed: wall and CPU (user + system,
from the child's own rusage) in ms, and the wall ratio to ``python -c pass``.

Run by ``make bench``; ``python bench/test_startup_bench.py [SRC ...]`` prints the same table
for the ``src`` folder of each checkout given (say one made by ``git worktree add``), each
checkout's rows measured in the same rounds as the others'.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROUNDS = 15

#: Row name → the command after the interpreter. ``lcg`` runs as its console script does.
COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "lcg --help": ["-c", "import sys; from lcg.cli.main import main; sys.exit(main(['--help']))"],
    "lcg ingest --help": [
        "-c",
        "import sys; from lcg.cli.main import main; sys.exit(main(['ingest', '--help']))",
    ],
    # (a checkout from before ADR 0218 has its client in lcg.rpc.client: paired against it)
    "import lcg.client": [
        "-c",
        "try:\n    import lcg.client\nexcept ModuleNotFoundError:\n    import lcg.rpc.client",
    ],
    # What an `lcg ingest PATH` run has imported when it starts to scan (a service answering):
    # the parser, the holder's client and the sync.
    "ingest, to its scan": [
        "-c",
        "from lcg.cli.main import build_parser; build_parser().parse_args(['ingest', '.']); "
        "import lcg.cli._holder; from lcg.ingest import sync_tree",
    ],
}


def _env(src: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "PYTHON"))}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def run_once(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (the child's user + system time) of one run of ``args``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{args} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(
    srcs: list[Path | None], commands: dict[str, list[str]], rounds: int = ROUNDS
) -> dict[tuple[int, str], tuple[float, float]]:
    """``(checkout index, row) → (median wall s, median CPU s)`` over ``rounds`` rounds."""
    walls: dict[tuple[int, str], list[float]] = {}
    cpus: dict[tuple[int, str], list[float]] = {}
    envs = [_env(src) for src in srcs]
    for _ in range(rounds):
        for i, env in enumerate(envs):
            for name, args in commands.items():
                wall, cpu = run_once(args, env)
                walls.setdefault((i, name), []).append(wall)
                cpus.setdefault((i, name), []).append(cpu)
    return {k: (statistics.median(walls[k]), statistics.median(cpus[k])) for k in walls}


def table(srcs: list[Path | None], results: dict[tuple[int, str], tuple[float, float]]) -> str:
    """The rows as text: per checkout, each command's wall, CPU and ratio to ``pass``."""
    lines = [f"{'checkout':<24} {'command':<22} {'wall ms':>8} {'CPU ms':>8} {'× pass':>7}"]
    for i, src in enumerate(srcs):
        where = "installed" if src is None else str(src)[-24:]
        floor = results[(i, "python -c pass")][0]
        for (j, name), (wall, cpu) in results.items():
            if j == i:
                ratio = wall / floor
                lines.append(
                    f"{where:<24} {name:<22} {wall * 1e3:>8.1f} {cpu * 1e3:>8.1f} {ratio:>7.2f}"
                )
    return "\n".join(lines)


def test_startup_costs_against_python_pass() -> None:
    """``make bench``: the table for this checkout."""
    results = measure([None], COMMANDS)
    print()
    print(table([None], results))


if __name__ == "__main__":
    given = [Path(arg).resolve() for arg in sys.argv[1:]]
    chosen: list[Path | None] = list(given) if given else [None]
    print(table(chosen, measure(chosen, COMMANDS)))
