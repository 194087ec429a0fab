"""Discovery and the extraction prompt consult the table of formats (issue 31 item 1, ADR
0219): a synced file's chunks get its format's prompt (JSON and JSON Lines the JSON prompt,
the rest the text prompt; ``.jsonl`` got the text prompt while the choice keyed on ``.json``
alone), and a format the table lists as not read is skipped by the walk, never opened.

Real workspace and real files through the source sync (``sync_tree``) and the extraction
service; the scripted extractor is a TEST DOUBLE that records each request's prompt kind.
Only names that existed before the table are imported, so both tests ran on the old code
and failed there. (The table itself: ``test_formats.py``.)"""

from __future__ import annotations

from pathlib import Path

from lcg.extract.extractor import ExtractionOutput, ExtractRequest
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest.extraction import ExtractionService
from lcg.ingest.sources import DirectBackend, discover, sync_tree
from lcg.workspace import Workspace

FILES = {
    "log.jsonl": '{"event": "launch", "vehicle": "Saturn V"}\n',
    "stream.ndjson": '{"event": "landing", "site": "Tranquility Base"}\n',
    "crew.json": '{"commander": "Neil Armstrong"}\n',
    "moon.md": "# Apollo 11\n\nThe first crewed landing on the Moon.\n",
    "orbit.py": "def period(radius):\n    return radius\n",
    "LICENSE": "Permission is granted to read these notes.\n",
}
#: A word only each file's chunk holds.
WORDS = list(
    zip(
        FILES, ["Saturn", "Tranquility", "Armstrong", "crewed", "radius", "Permission"], strict=True
    )
)


def test_each_synced_file_gets_its_formats_prompt(
    shared_ws: Workspace, group: str, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    for name, body in FILES.items():
        (root / name).write_text(body)
    prompts: dict[str, str] = {}

    def answer(req: ExtractRequest) -> ExtractionOutput:
        prompts[req.body] = req.source_type
        return ExtractionOutput()

    service = ExtractionService(ScriptedExtractor(answer=answer), concurrency=1)
    try:
        report = sync_tree(DirectBackend(shared_ws, service), root, group)
    finally:
        service.close()
    assert report.extracted == len(FILES)
    by_file = {name: next(k for body, k in prompts.items() if word in body) for name, word in WORDS}
    assert by_file == {
        "log.jsonl": "Json",  # was "Text": the choice keyed on ".json" alone
        "stream.ndjson": "Json",
        "crew.json": "Json",
        "moon.md": "Text",
        "orbit.py": "Text",
        "LICENSE": "Text",  # no extension: read as plain text, the text prompt
    }


def test_a_format_listed_as_not_read_is_skipped_by_the_walk(tmp_path: Path) -> None:
    """Before, the walk handed ``photo.png`` on and only the reader refused it: a file the
    table says is not read is now named at discovery, with the reason the reader gave."""
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n")
    (tmp_path / "paper.PDF").write_bytes(b"%PDF-1.4")
    (tmp_path / "note.md").write_text("# Note\n")
    found = discover(tmp_path)
    assert [f.rel for f in found.files] == ["note.md"]
    assert {s.path: s.reason for s in found.skipped} == {
        "photo.png": "binary format (.png)",
        "paper.PDF": "PDF (no PDF reader installed)",
    }
