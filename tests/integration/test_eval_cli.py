"""``lcg eval`` through the real CLI, scripted TEST DOUBLE models and the hash TEST DOUBLE
embedder: the small run and the run that asks on its stdin as subprocesses of
``.venv/bin/lcg``, the other commands in this process (conftest's ``lcg_main``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import _service_fixtures as sf

LCG = str(Path(sys.executable).with_name("lcg"))


def _lcg(ws: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"}
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run(
        [LCG, "-C", str(ws), "eval", *args],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        timeout=300,
    )


@pytest.fixture(scope="module")
def ran(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    # Its subprocess timeout is the hang signal; how long the run takes is not timed here.
    ws = tmp_path_factory.mktemp("eval-cli")
    run = _lcg(ws, "run", "--size", "small", "--backend", "scripted")
    return ws, run


def test_run_small_scripted_then_list_and_compare(
    ran: tuple[Path, subprocess.CompletedProcess[str]], lcg_main: sf.LcgMain
) -> None:
    ws, run = ran
    reports = ws / ".lcg" / "eval" / "reports"
    latest = json.loads((reports / "latest.json").read_text())
    # exit status follows the structural verdict (1 while any structural check misses)
    assert run.returncode == (0 if latest["structural_passed"] else 1), run.stderr
    assert "structural:" in run.stdout and "retrieval:" in run.stdout
    (saved,) = [p for p in reports.glob("*-seeds-7.json")]
    assert saved.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"chart:  {saved.with_suffix('.png')}" in run.stdout  # says where its chart is
    assert saved.with_suffix(".txt").read_text().startswith("lcg eval: scripted")
    checks = {c["name"]: c["ok"] for c in latest["runs"][0]["structural"]["checks"]}
    assert all(ok for name, ok in checks.items() if name != "superseded_not_current")
    listed = lcg_main(ws, "eval", "list")
    assert listed.returncode == 0 and latest["stamp"] in listed.stdout
    same = lcg_main(ws, "eval", "compare", str(saved), latest["stamp"], "--json")
    assert same.returncode == 0, same.stderr
    assert all(m["mean_diff"] == 0 for m in json.loads(same.stdout)["metrics"])


def test_compare_refuses_another_corpus(
    ran: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    ws = ran[0]
    latest = json.loads((ws / ".lcg" / "eval" / "reports" / "latest.json").read_text())
    latest["runs"][0]["gold_digest"] = "0" * 64
    other = tmp_path / "other.json"
    other.write_text(json.dumps(latest))
    latest_path = ws / ".lcg" / "eval" / "reports" / "latest.json"
    refused = lcg_main(ws, "eval", "compare", str(latest_path), str(other))
    assert refused.returncode == 1 and "different corpora" in refused.stderr


def test_paid_backend_is_priced_and_asks_first(tmp_path: Path, lcg_main: sf.LcgMain) -> None:
    dry = lcg_main(
        tmp_path, "eval", "run", "--size", "small", "--backend", "anthropic", "--dry-run"
    )
    assert dry.returncode == 0, dry.stderr
    assert "plan: anthropic" in dry.stdout and "$" in dry.stdout
    assert "nothing was sent" in dry.stdout
    assert "would be refused" in dry.stdout and "ANTHROPIC_API_KEY" in dry.stdout
    assert not (tmp_path / ".lcg" / "eval" / "reports").exists()
    # A process of its own: what it asks is read from its stdin.
    refused = _lcg(tmp_path, "run", "--size", "small", "--backend", "anthropic")
    assert refused.returncode == 1 and "--yes" in refused.stderr


def test_model_comparison_with_judge_and_pairwise(tmp_path: Path, lcg_main: sf.LcgMain) -> None:
    res = lcg_main(
        tmp_path,
        "eval",
        "run",
        "--size",
        "small",
        "--backend",
        "scripted",
        "--backend",
        "scripted-noisy:0.3",
        "--judge",
        "scripted",
        "--json",
    )
    assert res.returncode in (0, 1), res.stderr
    out = json.loads(res.stdout)
    cmp = out["comparison"]
    assert set(cmp["strict"]) == {"scripted", "scripted-noisy:0.3"}
    assert cmp["judged"]["scripted"]["judged.facts_recall"] == 1.0
    assert cmp["judged"]["scripted-noisy:0.3"]["judged.facts_recall"] < 1.0
    (pair,) = cmp["pairwise"]["7"]
    assert pair["wins_a"] > pair["wins_b"] and pair["order_inconsistent"] == 0
    assert (tmp_path / ".lcg" / "eval" / "judge-cache.jsonl").stat().st_size > 0


@pytest.mark.parametrize("bad", [["--seed", "7", "--seeds", "7,11"]])
def test_usage_errors(tmp_path: Path, bad: list[str], lcg_main: sf.LcgMain) -> None:
    res = lcg_main(tmp_path, "eval", "run", *bad)
    assert res.returncode in (1, 2) and res.stderr
