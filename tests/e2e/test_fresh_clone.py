"""A fresh clone works on its own: ``git clone`` the repository's committed HEAD into an empty
temporary directory (nothing beside it: no ``../shared``), run ``make demo`` there with a
size flag, run its console script, and load from it the data the tests that used to need
``../shared`` read (those tests themselves run in the suite: a pytest inside this one re-ran
them for nothing, ADR 0222).

Installing into a new virtual environment would take minutes, so the clone reuses this
checkout's environment as it is: ``make demo VENV=<this .venv> NO_INSTALL=1`` (the Makefile
skips its install step), with ``PYTHONPATH=<clone>/src`` so that the clone's own code and
data are the ones imported (checked below), never this checkout's. Uncommitted work is not
in the clone: this test checks what a user cloning HEAD gets.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import _service_fixtures as sf
from lcg.rpc.client import Client

#: The tests that needed ``../shared`` before the data moved into ``examples/``.
USED_TO_NEED_SHARED = [
    "tests/e2e/test_demo.py",
    "tests/integration/test_llm_fakes_providers.py",
    "tests/unit/extract/test_ontology.py",
    "tests/unit/extract/test_extractor_prompts.py",
    "tests/unit/test_self_contained.py",
]


def _env(clone: Path) -> dict[str, str]:
    env = sf.serve_env()  # the hash test embedder, no LLM, no LCG_* of the caller
    env["PYTHONPATH"] = str(clone / "src")
    # A user's shell: this checkout's venv is not on PATH.
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not (Path(p) / "lcg").exists()
    )
    return env


@pytest.mark.long
def test_a_fresh_clone_runs_the_demo_its_cli_and_has_its_test_data() -> None:
    venv = Path(sys.executable).parent.parent
    with sf.temp_workspace("lcg-clone-") as root:
        clone = root / "lcg"
        subprocess.run(
            ["git", "clone", "--quiet", str(sf.REPO), str(clone)], check=True, timeout=300
        )
        assert sorted(p.name for p in root.iterdir()) == ["lcg"]  # nothing beside it
        env = _env(clone)
        where = subprocess.run(
            [sys.executable, "-c", "import lcg, pathlib; print(pathlib.Path(lcg.__file__))"],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(clone),
            check=True,
        )
        assert where.stdout.strip() == str(clone / "src" / "lcg" / "__init__.py")

        ws = root / "ws"
        demo = subprocess.run(
            [
                "make",
                "--no-print-directory",
                "demo",
                f"VENV={venv}",
                "NO_INSTALL=1",
                f"DEMO_ARGS=--limit 5 --workspace {ws} -s",
            ],  # fmt: skip
            capture_output=True,
            text=True,
            env=env,
            cwd=str(clone),
            timeout=600,
            check=False,
        )
        sock = ws / ".lcg" / "service.sock"
        log = ws / "serve.log"
        try:
            assert demo.returncode == 0, (
                demo.stdout + demo.stderr + (log.read_text()[-4000:] if log.exists() else "")
            )
            assert f"corpus {clone / 'examples' / 'apollo'}" in demo.stdout
            assert "from 5 articles" in demo.stdout
            assert "Neil Armstrong commanded Apollo 11." in demo.stdout
            assert "The service keeps running (pid " in demo.stdout
        finally:
            if sock.exists():
                with Client(sock, timeout=60) as c:
                    c.call("knowledge_close", {})

        # The clone's console script answers from the clone's code, and the data the tests
        # that once needed ``../shared`` read is committed and loads through the clone's code.
        # (Those tests run in the suite itself; running them again here added nothing.)
        lcg = [str(venv / "bin" / "lcg")]
        version = _run_in(clone, env, [*lcg, "--version"])
        assert version.stdout.startswith("lcg "), version.stdout
        helped = _run_in(clone, env, [*lcg, "--help"])
        assert "usage: lcg" in helped.stdout and "demo" in helped.stdout, helped.stdout
        for test_file in USED_TO_NEED_SHARED:
            for name in re.findall(r"examples/[\w./-]+\.\w+", (clone / test_file).read_text()):
                assert (clone / name).is_file(), f"{test_file} reads {name}: not in the clone"
        loaded = _run_in(clone, env, [sys.executable, "-c", LOAD_APOLLO_ONTOLOGY])
        assert loaded.stdout.split() == [str(clone / "src" / "lcg" / "__init__.py"), "loaded"]


#: Loads the clone's Apollo ontology strictly with the clone's code; prints where lcg came from.
LOAD_APOLLO_ONTOLOGY = """
import pathlib, lcg
from lcg.extract.ontology import load_ontology_file
onto = load_ontology_file(pathlib.Path("examples/apollo/ontology.yaml"))
assert onto is not None and onto.entity_types, onto
print(pathlib.Path(lcg.__file__), "loaded")
"""


def _run_in(clone: Path, env: dict[str, str], argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` run in ``clone`` with ``env``; a non-zero exit fails with its output."""
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=str(clone), timeout=300, check=False
    )
    assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
    return done
