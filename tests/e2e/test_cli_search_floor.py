"""``lcg search`` says when its similarity floor left passages out (issue 28 item 5, ADR 0198).

In this process (``lcg.cli.main.main``) over a workspace it opens, and as a subprocess through
a running ``lcg serve`` (the ``filtered_by_min_score`` of the answer). Hash embedder: the test
double, whose cosines for these texts are known (``tests/integration/test_min_score_floor.py``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import _service_fixtures as sf
import lcg.cli.main as cli_main

NOTES = {
    "exact.md": "river\n",
    "cold.md": "the river was cold in May\n",
    "long.md": "we walked along the river with the dog every single morning in the spring\n",
}
HINT = "among the best matches left out: similarity under the floor; --min-score 0 shows them"


def _tree(root: Path) -> Path:
    notes = root / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    return notes


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("LCG_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")
    monkeypatch.setenv("LCG_TELEMETRY", "off")


def test_a_floor_that_shortens_the_answer_says_so(
    tmp_path: Path, env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert cli_main.main(["-C", str(ws), "ingest", str(_tree(tmp_path))]) == 0
    capsys.readouterr()

    assert cli_main.main(["-C", str(ws), "search", "river", "--min-score", "0.6"]) == 0
    out = capsys.readouterr().out
    assert "notes/exact.md" in out and "notes/cold.md" not in out
    assert f"(2 passages {HINT})" in out

    # Nothing filtered, nothing said.
    assert cli_main.main(["-C", str(ws), "search", "river", "--min-score", "0"]) == 0
    out = capsys.readouterr().out
    assert "notes/cold.md" in out and "left out" not in out

    # --json keeps stdout a JSON list; the hint goes to stderr.
    assert cli_main.main(["-C", str(ws), "search", "river", "--min-score", "1", "--json"]) == 0
    captured = capsys.readouterr()
    assert [h["source_file"] for h in json.loads(captured.out)] == ["notes/exact.md"]
    assert f"(2 passages {HINT})" in captured.err

    with pytest.raises(SystemExit) as bad:
        cli_main.main(["-C", str(ws), "search", "river", "--min-score", "1.5"])
    assert bad.value.code == 2


def test_the_hint_comes_through_a_running_service(lcg_main: sf.LcgMain) -> None:
    with sf.temp_workspace("lcg-floor-") as ws:
        notes = _tree(ws)
        sock = ws / ".lcg" / "service.sock"
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            assert lcg_main(ws, "ingest", str(notes)).returncode == 0
            # The service makes the vectors after the ingest answers (text first, ADR 0201):
            # the floor is about similarity, so the search waits for them (it was a
            # subprocess's start-up that gave the service the time).
            with sf.Client(sock, timeout=60) as c:
                sf.eventually(lambda: "vectors_pending" not in c.health_check(), "the vectors made")
            done = lcg_main(ws, "search", "river", "--min-score", "0.6")
            assert done.returncode == 0, done.stderr
            assert "notes/exact.md" in done.stdout
            assert f"(2 passages {HINT})" in done.stdout
        finally:
            sf.stop_serve(proc, sock)
