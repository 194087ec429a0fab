"""Shared fixtures: a temporary workspace, telemetry kept off the test output, ``--reverse``,
the hypothesis profiles (``default``; ``deep`` for ``make test-deep``) and ``lcg_main``, the
CLI run in this process."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import _hypothesis_profiles
from lcg import telemetry

# Before any test module is imported: ``--hypothesis-profile=deep`` (``make test-deep``) is
# loaded over the default when hypothesis' plugin configures, still before collection.
_hypothesis_profiles.register()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reverse",
        action="store_true",
        help="run the collected tests in reverse order: a test that needs state an earlier "
        "test left in a module-scoped service fails",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Reversed, each module's tests still run together, so module-scoped fixtures stay shared.
    if config.getoption("--reverse"):
        items.reverse()
    # The files that hold a test marked ``long`` go first, whole and in their order: a parallel
    # run (``make test``: pytest-xdist, a file per worker at a time) starts them at once
    # instead of waiting on one of them at the end (ADR 0187).
    long_files = {item.path for item in items if item.get_closest_marker("long")}
    items.sort(key=lambda item: item.path not in long_files)


@pytest.fixture(autouse=True)
def _quiet_telemetry() -> Iterator[None]:
    telemetry.set_sink(None, enabled=False)
    yield
    telemetry.set_sink(None, enabled=True)


@pytest.fixture
def wal_root(tmp_path: Path) -> Path:
    """An empty WAL root inside a temporary workspace."""
    root = tmp_path / ".lcg" / "wal"
    root.mkdir(parents=True)
    return root


@pytest.fixture
def lcg_main(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``lcg_main(workspace, *args, cwd=None, env=None)``: ``lcg -C WORKSPACE ARGS`` (``lcg
    ARGS`` for ``None``) run in this process through ``lcg.cli.main.main``: an argument or
    exit-status check costs no interpreter start and no engine import. The environment is the
    one ``sf.run_lcg`` gives its subprocess (the hash embedder, telemetry off, no ``LCG_*``,
    ``ANTHROPIC_*`` or ``LIMINIS_*`` of the caller) plus ``env`` for this one command (a
    ``None`` value unsets the variable); the
    working directory is ``cwd``, else the workspace. argparse's exits (``--help`` 0, a usage
    error 2) are returned as the status. A test keeps one subprocess where the console script
    itself is what it checks (ADR 0222)."""
    from lcg.cli import main as cli_main

    for key in [k for k in os.environ if k.startswith(("LCG_", "ANTHROPIC_", "LIMINIS_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")
    monkeypatch.setenv("LCG_TELEMETRY", "off")

    def run(
        workspace: Path | None,
        *args: str,
        cwd: Path | None = None,
        env: dict[str, str | None] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        argv = [*([] if workspace is None else ["-C", str(workspace)]), *args]
        capsys.readouterr()  # what ran before is not this command's output
        with monkeypatch.context() as here:
            if cwd is not None or workspace is not None:
                here.chdir(cwd if cwd is not None else workspace)  # type: ignore[arg-type]
            for key, value in (env or {}).items():
                if value is None:
                    here.delenv(key, raising=False)
                else:
                    here.setenv(key, value)
            try:
                status = cli_main.main(argv)
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["lcg", *argv], status, out, err)

    return run
