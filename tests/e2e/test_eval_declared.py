"""``lcg eval declared`` end to end (issue 29 item 4, ADR 0208): a real ``lcg eval`` process
commits the seeded corpus into a scratch repository with real ``git``, runs the real ``lcg
ingest`` twice (before and after the withdrawal commit) on the hash embedder, and scores
through the service's reads. Every structural score must be perfect.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _misses(report: dict[str, Any]) -> str:
    """Each miss of a report, one line each (what a failure should say)."""
    lines: list[str] = []
    for p in report["passes"]:
        lines += [f"{p['name']}: missing {e}" for e in p["missing_edges"]]
        lines += [f"{p['name']}: phantom {x}" for x in p["phantoms"]]
        lines += [f"{p['name']}: decoy {x}" for x in p["decoys_served"]]
        lines += [f"{p['name']}: slot {s}" for s in p["slots"] if not s["exact"]]
    return "\n".join(lines[:60])


def test_declared_lane_scores_perfect_on_one_seed(tmp_path: Path) -> None:
    done = sf.run_lcg(tmp_path, "eval", "declared", "--seed", "7", "--json")
    assert done.stdout.strip(), done.stderr
    report = json.loads(done.stdout)
    assert done.returncode == 0, _misses(report)
    assert report["structural_passed"] is True
    assert [p["name"] for p in report["passes"]] == ["ingest", "withdrawal"]
    for p in report["passes"]:
        assert p["link_recall"] == 1.0, p["missing_edges"]
        assert p["missing_edges"] == []
        assert p["phantoms"] == []
        assert p["decoys_served"] == []
        assert [s for s in p["slots"] if not s["exact"]] == []
        # Precision is reported, each extra edge named.
        assert (p["link_precision"] == 1.0) is (p["extra_edges"] == [])
    slots = {s["slot"] for s in report["passes"][1]["slots"]}
    assert slots == {"children", "current", "by_source", "window", "withdrawn"}
    saved = Path(report["report"])
    assert saved.parent == tmp_path / ".lcg" / "eval" / "declared"
    assert json.loads(saved.read_text())["gold_digest"] == report["gold_digest"]
    assert (saved.parent / "latest.json").is_file()


def test_a_short_structural_score_exits_1_naming_the_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same lane in this process, its reads made to lose one declared edge: exit 1, and
    the report names the edge."""
    from lcg.cli.main import main
    from lcg.eval import declared_run
    from lcg.eval.declared_score import Observed

    real = declared_run.observe
    lost: list[str] = []

    def losing(*args: Any, **kwargs: Any) -> Observed:
        seen = real(*args, **kwargs)
        edge = next(e for e in seen.edges if e.relation == "PART_OF")
        seen.edges.remove(edge)
        lost.append(f"missing PART_OF {edge.source} -> {edge.target}")
        return seen

    for name, value in sf.HASH_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(declared_run, "observe", losing)
    assert main(["-C", str(tmp_path), "eval", "declared", "--seed", "7"]) == 1
    out = capsys.readouterr().out
    assert "STRUCTURAL MISS" in out
    assert lost and all(line in out for line in lost)
