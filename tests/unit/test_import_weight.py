"""What importing a part of lcg drags in: the command line starts without the engine's native
libraries, and nothing but an Anthropic-configured workspace imports the ``anthropic`` SDK
(seconds to import; the package faces name ``AnthropicExtractor`` lazily for this).

Each import runs in a fresh interpreter, so what an earlier test imported cannot hide it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

#: module imported → top-level modules it must not import.
CASES = {
    # `lcg --help` and every command's parser: no graph, vectors, numbers or HTTP yet.
    "lcg.cli.main": ("anthropic", "kuzu", "hnswlib", "numpy", "httpx"),
    # The service and every package face: the engine, but no Anthropic SDK.
    "lcg.rpc.app": ("anthropic",),
    "lcg.extract": ("anthropic",),
    "lcg.projections": ("anthropic",),
    "lcg.workspace": ("anthropic",),
    "lcg.ingest": ("anthropic",),
    "lcg.replication": ("anthropic",),
    "lcg.eval": ("anthropic",),
}


def _imported(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return {name.partition(".")[0] for name in out.split()}


@pytest.mark.parametrize("module", sorted(CASES))
def test_importing_a_part_leaves_the_heavy_libraries_alone(module: str) -> None:
    loaded = _imported(module) & set(CASES[module])
    assert not loaded, f"importing {module} imports {sorted(loaded)}"


def test_the_lazy_name_still_resolves() -> None:
    from lcg.extract import AnthropicExtractor
    from lcg.extract.anthropic_extractor import AnthropicExtractor as direct

    assert AnthropicExtractor is direct
