"""Episode ingestion: ``knowledge_add_episode`` and ``knowledge_process_chunk``.

The text is made durable first, as ``EpisodeAdded``, before any LLM call. With no extractor
configured (lite mode) the episode is searchable as a passage at once and is reported as
pending extraction, with the setting to configure; nothing is lost. Re-sending the same
``chunk_id`` with the same text returns the existing episode instead of adding another; with
other text, the new text replaces the old (one commit: the new episode, then the deletion of
the old), so an edited chunk is never served twice.
"""

from __future__ import annotations

import hashlib
import time
from typing import Literal

import msgspec

from lcg import telemetry, timestamps
from lcg.errors import InvalidParamsError
from lcg.events import DroppedEdge, EpisodeAdded, EpisodesDeleted, Event, chunk_description
from lcg.ingest._common import new_uuid, parse_timestamp
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

__all__ = [
    "NO_EXTRACTOR_REASON",
    "AddEpisodeResult",
    "ExtractionStatus",
    "OversizeWarning",
    "ProcessChunkResult",
    "add_episode",
    "content_hash",
    "process_chunk",
]

NO_EXTRACTOR_REASON = (
    "no extraction provider is configured: set ANTHROPIC_API_KEY, LCG_EXTRACTION_URL or "
    "LCG_REPLAY_LLM and restart lcg serve; the episode is kept and can be extracted later "
    "without being sent again"
)


class ExtractionStatus(msgspec.Struct, kw_only=True):
    """Whether the episode's entities and relationships were extracted."""

    status: Literal["pending", "extracted", "failed", "duplicate"]
    reason: str | None = None


class OversizeWarning(msgspec.Struct, kw_only=True):
    """A chunk longer than the advisory maximum (nothing is truncated)."""

    type: str = "chunk_text_oversized"
    chunk_text_chars: int
    recommended_max_chars: int
    message: str


class AddEpisodeResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_add_episode``."""

    episode_uuid: str
    extraction: ExtractionStatus


class ProcessChunkResult(msgspec.Struct, kw_only=True, omit_defaults=False):
    """The result of ``knowledge_process_chunk``."""

    success: bool = True
    chunk_id: str
    source_file: str
    episode_uuid: str
    nodes_extracted: int = 0
    edges_extracted: int = 0
    edges_dropped_unresolvable: int = 0
    dropped_edges: list[DroppedEdge] = []
    edges_reclassified_unclassified: int = 0
    entities_reclassified_unclassified: int = 0
    entities_dropped_malformed: int = 0
    edges_dropped_malformed: int = 0
    duration_seconds: float = 0.0
    extraction: ExtractionStatus
    #: Only present when the chunk is longer than the advisory maximum (as the reference).
    warning: OversizeWarning | msgspec.UnsetType = msgspec.UNSET


def content_hash(text: str) -> str:
    """The SHA-256 hex of an episode's text (recognises resends)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _record(
    ws: Workspace,
    *,
    group_id: str,
    name: str,
    content: str,
    source: Literal["text", "json", "message"],
    source_description: str,
    reference_time: str,
    replaces_chunk: bool = False,
) -> tuple[str, bool]:
    """Append ``EpisodeAdded`` unless the same named text is already there; (uuid, new?).

    With ``replaces_chunk`` (``process_chunk``), the group's other episodes of the same chunk
    (same name and source description, other text) are deleted in the same commit: a note
    edited and sent again under its ``chunk_id`` is served with its new text only.
    """
    digest = content_hash(content)
    with ws.group_lock(group_id):
        with ws.reading():
            existing = (
                gr.episode_by_name_and_hash(ws.graph, group_id, name, digest) if name else None
            )
            stale = (
                _stale_copies(ws, group_id, name, source_description, digest)
                if replaces_chunk
                else []
            )
        events: list[Event] = []
        if existing is None:
            events.append(
                EpisodeAdded(
                    group_id=group_id,
                    uuid=new_uuid(),
                    name=name,
                    source=source,
                    source_description=source_description,
                    content=content,
                    created_at=reference_time,
                    valid_at=reference_time,
                    content_hash=digest,
                )
            )
        if stale:
            # After the new text: a crash between the two lines leaves both, never neither,
            # and the same call again removes the old copy.
            events.append(
                EpisodesDeleted(group_id=group_id, by="chunk", key=name, episode_uuids=stale)
            )
        if events:
            ws.commit(group_id, events)
        if existing is not None:
            return existing, False
        first = events[0]
        assert isinstance(first, EpisodeAdded)
        return first.uuid, True


def _stale_copies(
    ws: Workspace, group_id: str, name: str, source_description: str, digest: str
) -> list[str]:
    """Uuids of the group's episodes of this chunk (name and source) with another text."""
    if not name:
        return []
    return gr.other_texts_of_chunk(ws.graph, group_id, name, source_description, digest)


def _pending(ws: Workspace) -> ExtractionStatus:
    return ExtractionStatus(status="pending", reason=NO_EXTRACTOR_REASON)


def add_episode(
    ws: Workspace,
    *,
    name: str = "",
    episode_body: str = "",
    source: str = "text",
    source_description: str = "",
    reference_time: str = "",
    group_id: str,
) -> AddEpisodeResult:
    """Record an episode; extraction is pending until an extractor handles it."""
    kind = source.lower() if isinstance(source, str) else "text"
    src: Literal["text", "json", "message"] = kind if kind in ("json", "message") else "text"  # type: ignore[assignment]
    when = (
        parse_timestamp(reference_time, field="reference_time")
        if reference_time
        else timestamps.now()
    )
    uuid, new = _record(
        ws,
        group_id=group_id,
        name=name,
        content=episode_body,
        source=src,
        source_description=source_description,
        reference_time=when,
    )
    status = _pending(ws) if new else ExtractionStatus(status="duplicate", reason="same text")
    return AddEpisodeResult(episode_uuid=uuid, extraction=status)


def process_chunk(
    ws: Workspace,
    *,
    chunk_text: str,
    chunk_id: str,
    source_file: str,
    group_id: str,
    reference_time: str | None = None,
    advisory_max_chars: int = 8000,
) -> ProcessChunkResult:
    """Record one chunk of a source file as an episode named by its ``chunk_id``."""
    started = time.monotonic()
    if not isinstance(chunk_text, str) or not chunk_text:
        raise InvalidParamsError("chunk_text is required and must be non-empty")
    if not isinstance(chunk_id, str) or not chunk_id:
        raise InvalidParamsError("chunk_id is required")
    if not isinstance(source_file, str) or not source_file:
        raise InvalidParamsError("source_file is required")
    if reference_time:
        try:
            when = parse_timestamp(reference_time, field="reference_time")
        except InvalidParamsError:
            raise InvalidParamsError(
                f"reference_time is not valid ISO 8601: {reference_time}"
            ) from None
    else:
        when = timestamps.now()
    # The episode's source stays "text" (as the reference); a ``.json`` file's chunk is
    # extracted with the JSON prompt, recognised by its ``<source_file>:<chunk_id>`` description.
    uuid, new = _record(
        ws,
        group_id=group_id,
        name=chunk_id,
        content=chunk_text,
        source="text",
        source_description=chunk_description(source_file, chunk_id),
        reference_time=when,
        replaces_chunk=True,
    )
    warning: OversizeWarning | msgspec.UnsetType = msgspec.UNSET
    if len(chunk_text) > advisory_max_chars:
        telemetry.emit(
            telemetry.ChunkTextOversized(
                chunk_id=chunk_id,
                source_file=source_file,
                chunk_text_chars=len(chunk_text),
                threshold_chars=advisory_max_chars,
            )
        )
        warning = OversizeWarning(
            chunk_text_chars=len(chunk_text),
            recommended_max_chars=advisory_max_chars,
            message=(
                f"chunk_text has {len(chunk_text)} characters, more than the recommended "
                f"{advisory_max_chars}; it was stored whole - split long documents into "
                "smaller chunks for better extraction"
            ),
        )
    status = _pending(ws) if new else ExtractionStatus(status="duplicate", reason="same text")
    return ProcessChunkResult(
        chunk_id=chunk_id,
        source_file=source_file,
        episode_uuid=uuid,
        duration_seconds=round(time.monotonic() - started, 6),
        extraction=status,
        warning=warning,
    )
