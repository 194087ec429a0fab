"""The long modules split along their seams stay split (issue 13 item 6), and no module of
``src/`` grows past 600 lines (issue 20 item 8).

``ingest/extraction.py`` (888 lines, a 211-line ``_decide``), ``ingest/curation.py`` (874) and
``extract/extractor.py`` (738) became the packages below. Each of their modules stays under
~600 lines and each function under ~80, and every name the old modules offered still imports
from the old path (the packages' ``__init__`` re-exports it), so no caller had to change.

Every other module of ``src/`` is held to the 600 lines too, with no exceptions: the last
known-debt list (``projections/projector.py``, ``events/writer.py``) emptied when they were split
along their seams, so a long module fails.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: The packages the long modules became.
SPLIT = ("lcg/ingest/extraction", "lcg/ingest/curation", "lcg/extract/extractor")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80

#: The public names of each old module (its ``__all__``, plus what callers imported besides).
OLD_NAMES: dict[str, tuple[str, ...]] = {
    "lcg.ingest.extraction": (
        "ChunkCounters",
        "EpisodeExtraction",
        "ExtractPendingResult",
        "ExtractionService",
        "PendingFailure",
        "ProgressFn",
    ),
    "lcg.ingest.curation": (
        "ApplyCorrectionsResult",
        "CLASSIFY_BATCH",
        "CORRECTIONS_FILE",
        "CorrectionDetail",
        "CurationFrame",
        "NO_ROOT_MESSAGE",
        "PROGRESS_EVERY",
        "Progress",
        "ValidateCorrectionsResult",
        "WRITE_BATCH",
        "apply_corrections",
        "backfill_relation_types",
        "backfill_summary_embeddings",
        "backfill_type",
        "canonicalize_relations",
        "corrections_path",
        "reprocess_entity_types",
        "reprocess_relation_types",
        "validate_corrections",
    ),
    "lcg.extract.extractor": (
        "CallReply",
        "CallSpec",
        "CallType",
        "DEFAULT_RETRY_DELAYS",
        "DelegatingExtractor",
        "EntitiesMissingSummary",
        "ExtractRequest",
        "ExtractedEdge",
        "ExtractedEntity",
        "ExtractionFailure",
        "ExtractionOutput",
        "ExtractionTruncated",
        "Extractor",
        "FailureSink",
        "LlmExtractor",
        "LlmFallback",
        "ProviderCallError",
        "SourceType",
        "StructuredOutputParse",
        "normalize_classification",
        "parse_json_tolerant",
        "relation_type_for",
        "salvage_edges",
        "salvage_entities",
    ),
}


def _modules() -> list[Path]:
    found = sorted(p for pkg in SPLIT for p in (SRC / pkg).glob("*.py"))
    assert len(found) >= 3 * len(SPLIT), f"expected each of {SPLIT} to be a package of modules"
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_module_and_its_functions_are_short(path: Path) -> None:
    text = path.read_text()
    lines = text.count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.name} has {lines} lines; split it along a seam"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {long}"


@pytest.mark.parametrize("module", sorted(OLD_NAMES))
def test_the_old_names_import_from_the_old_path(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [n for n in OLD_NAMES[module] if not hasattr(imported, n)]
    assert not missing, f"{module} no longer offers {missing}"
    # The old module path is now a package, and its names come from its modules.
    assert hasattr(imported, "__path__"), f"{module} is not a package"


def _lines(path: Path) -> int:
    return path.read_text().count("\n")


@pytest.mark.parametrize(
    "path",
    sorted((SRC / "lcg").rglob("*.py")),
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_no_module_of_src_is_over_long(path: Path) -> None:
    name = path.relative_to(SRC).as_posix()
    lines = _lines(path)
    assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines; split it along a seam"
