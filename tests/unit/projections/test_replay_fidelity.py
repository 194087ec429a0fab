"""Conformance: ``LCG_REPLAY_FIDELITY_THRESHOLD`` as the reference's configuration page says.

The reference's documentation: "Float 0.0–1.0. Replay warns when the fraction of successfully
applied mutations falls below this". The replay here applies every event of a real stream to
the real graph but one (a fault injected into the graph's apply), so 8 of 9 events apply
(88.9 %) and the warning depends only on where the setting lies against that fraction.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from lcg.config import Config
from lcg.errors import ProjectionError
from lcg.events.model import EntityAsserted, EntityRecord, Event
from lcg.extract.embedders import HashEmbedder
from lcg.projections.projector import ReplayResult
from lcg.workspace import Workspace

TS = "2024-01-01T00:00:00.000000Z"


def _entity(i: int) -> EntityAsserted:
    return EntityAsserted(
        group_id="g",
        entity=EntityRecord(uuid=f"e{i}", name=f"name {i}", labels=["Entity"], created_at=TS),
        created=True,
    )


def _rebuild_with_one_failure(root: Path, env: dict[str, str]) -> ReplayResult:
    cfg = Config.from_env(root, env={"LCG_EMBEDDER": "hash", **env})
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", [_entity(i) for i in range(8)])
        real_apply, real_load = ws.graph.apply, ws.graph.load_group

        def poisoned(group_id: str, generation: str, events: list[Event]) -> None:
            # Fault injection: the real graph, refusing any batch that holds entity e3.
            if any(isinstance(e, EntityAsserted) and e.entity.uuid == "e3" for e in events):
                raise ProjectionError("injected failure for e3")
            real_apply(group_id, generation, events)

        def poisoned_load(group_id: str, generation: str, batches: Iterable[list[Event]]) -> int:
            for batch in batches:
                if any(isinstance(e, EntityAsserted) and e.entity.uuid == "e3" for e in batch):
                    raise ProjectionError("injected failure for e3")
            return 0

        ws.graph.apply = poisoned  # type: ignore[method-assign]
        ws.graph.load_group = poisoned_load  # type: ignore[method-assign]
        try:
            result = ws.projector.rebuild("g", force_clear=True)
        finally:
            ws.graph.apply = real_apply  # type: ignore[method-assign]
            ws.graph.load_group = real_load  # type: ignore[method-assign]
    assert result.failed_lines == 1
    return result


@pytest.mark.parametrize("setting", ["0.95", "1.0"])
def test_warns_when_the_applied_fraction_falls_below_the_setting(
    tmp_path: Path, setting: str
) -> None:
    result = _rebuild_with_one_failure(tmp_path, {"LCG_REPLAY_FIDELITY_THRESHOLD": setting})
    assert result.fidelity_warning is not None
    assert "88.9% of events applied" in result.fidelity_warning
    assert "failed=1" in result.fidelity_warning


@pytest.mark.parametrize("setting", ["0.10", "0.5", "0.0"])
def test_no_warning_while_the_applied_fraction_reaches_the_setting(
    tmp_path: Path, setting: str
) -> None:
    # The failed fraction (11.1 %) is above 0.10: the documentation does not warn on it.
    result = _rebuild_with_one_failure(tmp_path, {"LCG_REPLAY_FIDELITY_THRESHOLD": setting})
    assert result.fidelity_warning is None


def test_the_default_warns_where_the_reference_code_does(tmp_path: Path) -> None:
    # Unset, the setting is 0.90: fewer than 90 % applied warns, as the reference's
    # code warns at its default on more than 10 % failed (ADR 0215).
    assert Config.from_env(tmp_path, env={}).replay_fidelity_threshold == 0.90
    result = _rebuild_with_one_failure(tmp_path, {})
    assert result.fidelity_warning is not None


def test_a_clean_replay_never_warns_even_at_the_strictest_setting(tmp_path: Path) -> None:
    cfg = Config.from_env(
        tmp_path, env={"LCG_EMBEDDER": "hash", "LCG_REPLAY_FIDELITY_THRESHOLD": "1.0"}
    )
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.store.append("g", [_entity(i) for i in range(4)])
        result = ws.projector.rebuild("g", force_clear=True)
    assert result.failed_lines == 0
    assert result.fidelity_warning is None
