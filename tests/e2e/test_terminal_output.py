"""What the CLI prints of stored text cannot drive the terminal (issue 27 item 6, ADR 0195).

A folder whose file name and text hold terminal controls (CSI clear-screen, an OSC 52
clipboard write, a carriage return, C1 CSI, a bidi override) is ingested and searched with the
real ``lcg`` subprocesses: neither ``lcg ingest``'s summary nor ``lcg search`` prints a raw
control (each is shown as a visible escape), and ``--json`` is exact JSON whose strings decode
to the stored text while its bytes hold no control either.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import _service_fixtures as sf

#: A file name and text with what a terminal acts on.
NAME = "evil\x1b[2J\u202egnp.md"
TEXT = (
    "# Apollo \x1b]52;c;SGVsbG8=\x07 notes\n\n"
    "Apollo 11 landed on the Moon \x1b[31min red\x1b[0m \u009b6n\r overwritten \u2066x\u2069."
)
#: Characters none of the human-readable output may hold.
CONTROLS = ("\x1b", "\x07", "\r", "\u009b", "\u202e", "\u2066", "\u2069")


def _raw_controls(text: str) -> list[str]:
    return [repr(c) for c in CONTROLS if c in text]


def test_search_and_ingest_print_stored_controls_as_escapes(tmp_path: Path) -> None:
    ws = sf.short_tmp("lcg-term-")
    tree = tmp_path / "notes"
    tree.mkdir()
    (tree / NAME).write_text(TEXT)
    try:
        ingest = sf.run_lcg(ws, "ingest", str(tree), "-s")
        assert ingest.returncode == 0, ingest.stderr
        assert not _raw_controls(ingest.stdout + ingest.stderr), ingest.stdout

        found = sf.run_lcg(ws, "search", "Apollo Moon")
        assert found.returncode == 0, found.stderr
        assert "evil" in found.stdout, found.stdout
        assert not _raw_controls(found.stdout), found.stdout
        # Shown, not hidden: each control is a visible escape.
        assert "\\x1b[2J" in found.stdout and "\\u202e" in found.stdout, found.stdout
        assert "\\x1b[31m" in found.stdout and "\\x9b" in found.stdout, found.stdout

        as_json = sf.run_lcg(ws, "search", "Apollo Moon", "--json")
        assert as_json.returncode == 0, as_json.stderr
        assert not _raw_controls(as_json.stdout), as_json.stdout
        (hit,) = json.loads(as_json.stdout)
        # The same strings as stored (the reader made the file's \r a line end).
        assert hit["source_file"].endswith(NAME)
        assert "\x1b[31min red\x1b[0m \u009b6n" in hit["text"] and "\u2066x\u2069" in hit["text"]
    finally:
        shutil.rmtree(ws, ignore_errors=True)
