"""What every curation pass shares: the batch sizes, the scopes and the progress frames."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

__all__ = [
    "CLASSIFY_BATCH",
    "NO_EXTRACTOR",
    "PROGRESS_EVERY",
    "SCOPES",
    "WRITE_BATCH",
    "CurationFrame",
    "Progress",
    "counted",
    "emit",
    "soft",
]

#: Changes per recorded event (the reference's write batch).
WRITE_BATCH: Final = 250
#: Items per classification call (the reference's LLM batch).
CLASSIFY_BATCH: Final = 50
#: Progress is reported at 0 and every this many items.
PROGRESS_EVERY: Final = 5000
#: The ``scope`` values of the reprocess passes.
SCOPES: Final = ("untyped", "off_ontology", "all")
#: A reprocess pass without an LLM: what to configure (the reference's refusal names it too).
NO_EXTRACTOR: Final = (
    "no extraction provider is configured: set ANTHROPIC_API_KEY (hosted Anthropic), or "
    "LCG_EXTRACTION_URL or the --extractor-http/--extractor-uds flag (a local "
    "OpenAI-compatible server), or LCG_REPLAY_LLM (a recorded cassette), then restart the "
    "service"
)


class CurationFrame(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One progress frame of a curation pass."""

    phase: str
    processed: int | None = None
    total: int | None = None
    total_mutations: int | None = None


#: Receives the frames of a pass.
Progress = Callable[[CurationFrame], None]


def emit(progress: Progress | None, frame: CurationFrame) -> None:
    """Hand ``frame`` to ``progress`` if there is one."""
    if progress is not None:
        progress(frame)


def counted(progress: Progress | None, phase: str, done: int, total: int) -> None:
    """A ``processed/total`` frame at 0 and every ``PROGRESS_EVERY`` items."""
    if progress is not None and (done == 0 or done % PROGRESS_EVERY == 0):
        progress(CurationFrame(phase=phase, processed=done, total=total))


def soft(group_id: str, error: str) -> dict[str, Any]:
    """A pass's soft failure: ``success: false`` with the reason (not a JSON-RPC error)."""
    return {"success": False, "group_id": group_id, "error": error}
