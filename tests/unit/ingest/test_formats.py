"""The table of formats (issue 31 item 1, ADR 0219): one entry per format owns its extensions,
reader, sectioner and extraction prompt, and adding a format is its module plus one line.

The first test adds a format in two files through a real ``lcg ingest`` (a subprocess: the
format's module written to a temporary folder on its ``PYTHONPATH``, the table line in the
child's script) and a real extraction of what it stored; the scripted extractor is a TEST
DOUBLE that records the prompt kind of each request. The rest hold the table to its rules:
no extension in two entries, no format without a sectioner, a refused format's line replaced
by a reader, and the README's and ``lcg ingest --help``'s list the table's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import _service_fixtures as sf
from lcg.cli.main import main
from lcg.ingest.declared.declare import MARKDOWN_SUFFIXES
from lcg.ingest.sources import Document, chunk_document, discover, read_document, scan_tree
from lcg.ingest.sources import formats as fm
from lcg.ingest.sources.sections import Section, text_sections

ROOT = Path(__file__).resolve().parents[3]

#: The new format's own module: a reader and a sectioner (file one of two).
TSV_MODULE = '''
"""Tab-separated tables: each row a piece of ``column: value`` lines, under one heading."""

from __future__ import annotations

from lcg.ingest.sources.sections import Section


def read(text: str) -> str:
    rows = [line.split("\\t") for line in text.split("\\n") if line.strip()]
    header, body = rows[0], rows[1:]
    return "\\n\\n".join("\\n".join(f"{h}: {v}" for h, v in zip(header, row)) for row in body)


def sections(text: str) -> list[Section]:
    return [(["Table"], text.split("\\n\\n"))]
'''

#: The child: the one table line (file two of two), then ``lcg ingest`` as the console
#: script runs it, then the extraction of what it stored, each request's prompt recorded.
CHILD = """
import json, sys
from pathlib import Path

import tsvtables
from lcg.ingest.sources import formats

formats.FORMATS = (*formats.FORMATS, formats.Format(name="tsv", title="TSV tables",
    extensions=(".tsv",), read=tsvtables.read, sections=tsvtables.sections, prompt="Json"))

from lcg.cli.main import main

ws, tree = sys.argv[1:]
status = main(["-C", ws, "ingest", tree, "--json", "--no-commits"])
sys.stdout.flush()
if status:
    sys.exit(status)

from lcg.config import Config
from lcg.extract.extractor import ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest.extraction import ExtractionService
from lcg.workspace import Workspace

prompts = {}

def answer(req):
    prompts[req.body] = req.source_type
    return ExtractionOutput()

w = Workspace.open(Config.from_env(Path(ws)))
try:
    service = ExtractionService(ScriptedExtractor(answer=answer), concurrency=1)
    service.extract_pending(w, "liminis")
    service.close()
finally:
    w.close()
print("PROMPTS " + json.dumps(prompts, sort_keys=True))
"""

CREW = "name\trole\nNeil Armstrong\tcommander\nBuzz Aldrin\tpilot\n"
#: The chunk the new format makes of it: its sectioner's heading, its reader's rows.
TABLE_CHUNK = "# Table\n\nname: Neil Armstrong\nrole: commander\n\nname: Buzz Aldrin\nrole: pilot"


def test_a_format_added_in_two_files_is_read_chunked_and_prompted_by_lcg_ingest(
    tmp_path: Path,
) -> None:
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "tsvtables.py").write_text(textwrap.dedent(TSV_MODULE))
    tree = tmp_path / "mission"
    tree.mkdir()
    (tree / "crew.tsv").write_text(CREW)
    (tree / "log.md").write_text("# Log\n\nThe crew boarded at dawn.\n")
    # Without the table line the file is unlisted, read as plain text, tabs and all.
    plain = {f.source_file: f.chunks for f in scan_tree(tree).files}
    assert plain["mission/crew.tsv"][0].text == CREW.strip()

    pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    ws = sf.short_tmp("lcg-fmt-")
    try:
        done = subprocess.run(
            [sf.python(), "-c", CHILD, str(ws), str(tree)],
            capture_output=True,
            text=True,
            env=sf.serve_env({"PYTHONPATH": os.pathsep.join([str(plugin), *pythonpath])}),
            cwd=str(ws),
            timeout=300,
            check=False,
        )
    finally:
        shutil.rmtree(ws, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    summary_text, _, prompts_line = done.stdout.rpartition("PROMPTS ")
    summary = json.loads(summary_text)
    # Discovery and reading: both files new, nothing skipped.
    assert (summary["files_new"], summary["files_skipped"]) == (2, 0)
    prompts = json.loads(prompts_line)
    # Reading and chunking by the new format's module; the prompt its table line names.
    assert prompts == {TABLE_CHUNK: "Json", "# Log\n\nThe crew boarded at dawn.": "Text"}


def test_no_extension_or_name_is_in_two_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [e for e in fm.FORMATS]
    keys = [x for e in entries for x in e.extensions]
    assert len(keys) == len(set(keys)) and all(re.fullmatch(r"\.[a-z0-9]+", k) for k in keys)
    assert fm.entry_of("paper.pdf") == fm.entry_of("PAPER.PDF")
    # A reader added for PDF while its "not read" line stays: the table refuses to be read,
    # naming both lines, instead of the older list silently winning.
    pdf = fm.Format(
        name="pdf",
        title="PDF",
        extensions=(".pdf",),
        read=fm.as_is,
        sections=text_sections,
        prompt="Text",
    )
    monkeypatch.setattr(fm, "FORMATS", (*fm.FORMATS, pdf))
    with pytest.raises(ValueError, match=r"'\.pdf' is listed by PDF and PDF"):
        fm.entry_of("paper.pdf")


def test_a_format_needs_a_sectioner_and_a_prompt() -> None:
    with pytest.raises(TypeError, match="sections"):
        fm.Format(  # type: ignore[call-arg]
            name="csv", title="CSV", extensions=(".csv",), read=fm.as_is, prompt="Text"
        )
    with pytest.raises(TypeError, match="prompt"):
        fm.Format(  # type: ignore[call-arg]
            name="csv", title="CSV", extensions=(".csv",), read=fm.as_is, sections=text_sections
        )
    with pytest.raises(ValueError, match="no format is named 'csv'"):
        chunk_document(Document(kind="csv", text="a,b\n"))


def _pages(text: str) -> list[Section]:
    return [([f"Page {i}"], [page]) for i, page in enumerate(text.split("\f"), start=1)]


def test_a_reader_for_a_refused_format_replaces_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trap of the old lists: a kind added for an extension of the binary list was
    refused before it was looked at. Here the PDF line becomes a reader, and the walk, the
    reader, the chunker and the prompt all follow it."""
    (tmp_path / "report.pdf").write_text("%PDF-fake\nLaunch window.\fSplashdown.")
    assert [s.reason for s in discover(tmp_path).skipped] == ["PDF (no PDF reader installed)"]
    pdf = fm.Format(
        name="pdf",
        title="PDF",
        extensions=(".pdf",),
        read=lambda text: text.partition("\n")[2],  # past its header line
        sections=_pages,
        prompt="Json",
    )
    table = tuple(pdf if ".pdf" in e.extensions else e for e in fm.FORMATS)
    monkeypatch.setattr(fm, "FORMATS", table)
    found = discover(tmp_path)
    assert ([f.rel for f in found.files], found.skipped) == (["report.pdf"], [])
    doc = read_document(tmp_path / "report.pdf")
    assert doc == Document(kind="pdf", text="Launch window.\fSplashdown.")
    assert [c.text for c in chunk_document(doc)] == [
        "# Page 1\n\nLaunch window.",
        "# Page 2\n\nSplashdown.",
    ]
    assert fm.prompt_of("notes/report.pdf") == "Json"
    assert "PDF" in fm.format_list()


def test_every_readable_format_chunks_as_its_own_kind() -> None:
    """A format read as another (HTML as Markdown) names one that exists and is sectioned as
    that one; every other format is its own kind."""
    for entry in fm.FORMATS:
        if isinstance(entry, fm.Format):
            assert fm.format_named(entry.kind).sections is entry.sections, entry.title
    assert fm.format_named(fm.UNLISTED).prompt == "Text"
    assert MARKDOWN_SUFFIXES == fm.format_named("markdown").extensions


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_readme_and_the_help_list_the_tables_formats(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The list of formats is written once, in the table: ``lcg ingest --help`` is built from
    it, and the README's sentence must say the same (this test names the difference)."""
    listed = fm.format_list()
    assert listed.startswith("Markdown, ") and listed.endswith(" and source code")
    readme = _words((ROOT / "README.md").read_text())
    assert f"`lcg ingest` reads files and folders recursively — {listed} — honours" in readme
    with pytest.raises(SystemExit) as exited:
        main(["ingest", "--help"])
    assert exited.value.code == 0
    assert f"Folders are read recursively: {listed};" in _words(capsys.readouterr().out)
