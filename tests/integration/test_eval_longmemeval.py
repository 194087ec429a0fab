"""``lcg eval longmemeval`` wraps ``run_longmemeval`` (a synthetic dev split, hash TEST
DOUBLE embedder, real projections)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcg.cli.main import build_parser

_TOPICS = ["sourdough", "kayak", "violin", "orchid", "telescope", "marathon"]


def _dataset(root: Path) -> None:
    sessions, questions = [], []
    for i in range(12):
        topic = _TOPICS[i % len(_TOPICS)]
        turns = [
            {"role": "user", "content": f"session {i} turn {t} about my {topic} number {i}"}
            for t in range(10)
        ]
        sessions.append({"session_id": f"s{i}", "date": "2023/05/01 (Mon) 10:00", "turns": turns})
    for i in range(3):
        questions.append(
            {
                "question_id": f"q{i}",
                "question_type": "single-session-user",
                "question": f"what did I say about my {_TOPICS[i]} number {i}",
                "answer_session_ids": [f"s{i}"],
            }
        )
    root.mkdir(parents=True)
    (root / "sessions.jsonl").write_text("\n".join(json.dumps(s) for s in sessions) + "\n")
    (root / "questions-dev.jsonl").write_text("\n".join(json.dumps(q) for q in questions) + "\n")


def test_longmemeval_command_prints_every_method(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _dataset(tmp_path / "lme")
    monkeypatch.setenv("LCG_EMBEDDER", "hash")
    parser = build_parser(modules=["lcg.cli.eval"])
    args = parser.parse_args(
        ["-C", str(tmp_path), "eval", "longmemeval", "--data", str(tmp_path / "lme"), "--json"]
    )
    assert args.func(args) == 0
    out = capsys.readouterr()
    report = json.loads(out.out)
    # Each ranking method is named on stderr as it starts (the whole run takes minutes).
    assert "scoring 1: lcg default (weighted)\n" in out.err
    assert "scoring 2: lcg default, as_of question date\n" in out.err
    assert report["questions"] == 3 and report["turns"] == 120
    methods = {m["method"]: m for m in report["methods"]}
    assert {
        "lcg default (weighted)",
        "lcg fused (rrf)",
        "lcg bm25 (weighted)",
        "lcg vector (rrf, hnsw)",
        "lcg as_of, recency prior off",
        "lcg as_of, both time priors off",
        "as_of, only source_bm25",
        "as_of, without chunk_vector",
    } <= set(methods)
    assert methods["lcg bm25 (weighted)"]["recall_at_10"] == 1.0
    assert methods["lcg default (weighted)"]["recall_at_10_by_type"] == {
        "single-session-user": 1.0
    }
    assert report["ingest_turns_per_second"] > 0
