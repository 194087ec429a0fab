"""Watch claims (ADR 0207): a running watcher's claim is listed, a claim whose process ended
is not (and is removed), and what is not a claim lcg wrote is passed over."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lcg.workspace import active_watches, watching
from lcg.workspace.watching import WATCHERS_DIR


def test_a_claim_is_listed_while_held_and_gone_after(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    with watching(tmp_path, [notes], "g") as claim:
        assert active_watches(tmp_path) == [claim]
        assert claim.roots == [str(notes.resolve())] and claim.pid == os.getpid()
    assert active_watches(tmp_path) == []
    assert list((tmp_path / WATCHERS_DIR).iterdir()) == []


def test_the_claim_of_a_killed_watcher_is_not_listed_and_is_removed(tmp_path: Path) -> None:
    code = (
        "import os, sys; from pathlib import Path; from lcg.workspace import watching\n"
        "cm = watching(Path(sys.argv[1]), [Path(sys.argv[1])], 'g'); cm.__enter__()\n"
        "print('held', flush=True); os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -9 and "held" in done.stdout, done.stderr
    left = list((tmp_path / WATCHERS_DIR).glob("*.json"))
    assert len(left) == 1  # SIGKILL ran no clean-up: the file is there, its lock is not
    assert active_watches(tmp_path) == []
    assert list((tmp_path / WATCHERS_DIR).glob("*.json")) == []


def test_files_that_are_no_claims_are_passed_over(tmp_path: Path) -> None:
    folder = tmp_path / WATCHERS_DIR
    folder.mkdir()
    (folder / "junk.json").write_text("not json")
    (folder / "link.json").symlink_to(tmp_path / "elsewhere.json")
    with watching(tmp_path, [tmp_path], "g") as claim:
        assert active_watches(tmp_path) == [claim]
