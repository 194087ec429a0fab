"""What the extraction service decides around the decision itself (``ingest/extraction/
service``): which episodes are extracted, what a failure leaves, what a pass over the pending
episodes reports, and what a caller of add_episode / process_chunk is told. Real workspace
(one per module, a group per test); the scripted extractor and the hash embedder are TEST
DOUBLES."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lcg.events.model import EpisodeExtracted
from lcg.extract.extractor import ExtractedEdge, ExtractedEntity, ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest import episodes
from lcg.ingest.extraction import ExtractionService
from lcg.workspace import Workspace

ONE = ExtractionOutput(
    entities=[ExtractedEntity(name="Neil Armstrong"), ExtractedEntity(name="Apollo 11")],
    edges=[
        ExtractedEdge(source_name="Neil Armstrong", target_name="Apollo 11", fact="He flew it."),
        ExtractedEdge(source_name="Neil Armstrong", target_name="Ghost", fact="He met it."),
    ],
)


@pytest.fixture
def lite() -> Iterator[ExtractionService]:
    svc = ExtractionService(None)
    yield svc
    svc.close()


def _service(**kw: object) -> ExtractionService:
    return ExtractionService(ScriptedExtractor(default=ONE, **kw), concurrency=2)  # type: ignore[arg-type]


def _extracted(ws: Workspace, group_id: str) -> list[EpisodeExtracted]:
    return [e for e in ws.store.reader(group_id).events() if isinstance(e, EpisodeExtracted)]


def _pending(ws: Workspace, group_id: str, body: str) -> str:
    return episodes.add_episode(ws, episode_body=body, group_id=group_id).episode_uuid


# ---- one episode --------------------------------------------------------------------------


def test_an_unknown_episode_is_not_found(shared_ws: Workspace) -> None:
    res = _service().extract_episode(shared_ws, "no-such-episode")
    assert (res.status, res.group_id) == ("not_found", "")


def test_without_an_extractor_nothing_is_extracted_and_the_reason_is_said(
    shared_ws: Workspace, group: str, lite: ExtractionService
) -> None:
    uuid = _pending(shared_ws, group, "text")
    res = lite.extract_episode(shared_ws, uuid)
    assert (res.status, res.error) == ("no_extractor", episodes.NO_EXTRACTOR_REASON)
    assert _extracted(shared_ws, group) == []


def test_an_extracted_episode_is_not_extracted_again(shared_ws: Workspace, group: str) -> None:
    uuid = _pending(shared_ws, group, "text")
    svc = _service()
    assert svc.extract_episode(shared_ws, uuid).status == "extracted"
    again = svc.extract_episode(shared_ws, uuid)
    assert (again.status, again.group_id) == ("already_extracted", group)
    assert len(_extracted(shared_ws, group)) == 1
    assert svc.extractor is not None and svc.extractor.calls == 1  # type: ignore[attr-defined]


def test_a_failed_extraction_appends_nothing_and_the_episode_stays_pending(
    shared_ws: Workspace, group: str
) -> None:
    uuid = _pending(shared_ws, group, "text")
    res = _service(fail_first=1).extract_episode(shared_ws, uuid)
    assert res.status == "failed" and "injected failure" in (res.error or "")
    assert _extracted(shared_ws, group) == []
    assert ExtractionService.pending_count(shared_ws, [group]) == 1


# ---- a pass over the pending episodes -----------------------------------------------------


def test_a_pass_extracts_the_pending_episodes_and_counts_what_happened(
    shared_ws: Workspace, group: str
) -> None:
    done = _pending(shared_ws, group, "first")
    _service().extract_episode(shared_ws, done)
    _pending(shared_ws, group, "second")
    _pending(shared_ws, group, "third")
    res = _service(fail=["third"]).extract_pending(shared_ws, group)
    assert res.success and res.group_ids == [group]
    assert (res.attempted, res.extracted, res.failed, res.remaining) == (2, 1, 1, 1)
    # "second" says again what "first" said: its edge restates, it adds none.
    counts = (res.nodes_extracted, res.edges_extracted, res.edges_restated)
    assert (counts, res.edges_dropped_unresolvable) == ((2, 0, 1), 1)
    assert [f.group_id for f in res.failures] == [group]


def test_a_pass_takes_at_most_its_limit(shared_ws: Workspace, group: str) -> None:
    for body in ("a", "b", "c"):
        _pending(shared_ws, group, body)
    res = _service().extract_pending(shared_ws, group, limit=2)
    assert (res.attempted, res.extracted, res.remaining) == (2, 2, 1)


def test_a_pass_without_an_extractor_fails_softly_and_counts_what_waits(
    shared_ws: Workspace, group: str, lite: ExtractionService
) -> None:
    _pending(shared_ws, group, "a")
    res = lite.extract_pending(shared_ws, group)
    assert (res.success, res.remaining, res.error) == (False, 1, episodes.NO_EXTRACTOR_REASON)


def test_a_pass_reports_progress_from_zero_to_all(shared_ws: Workspace, group: str) -> None:
    _pending(shared_ws, group, "a")
    _pending(shared_ws, group, "b")
    seen: list[tuple[int, int]] = []
    _service().extract_pending(shared_ws, group, progress=lambda n, total: seen.append((n, total)))
    assert seen == [(0, 2), (1, 2), (2, 2)]


# ---- what callers of add_episode and process_chunk are told -------------------------------


def test_add_episode_reports_the_extraction(shared_ws: Workspace, group: str) -> None:
    res = _service().add_episode(shared_ws, name="n", episode_body="body", group_id=group)
    assert res.extraction.status == "extracted"
    again = _service().add_episode(shared_ws, name="n", episode_body="body", group_id=group)
    assert (again.extraction.status, again.extraction.reason) == ("duplicate", "same text")


def test_a_failed_extraction_is_reported_with_the_episode_kept(
    shared_ws: Workspace, group: str
) -> None:
    res = _service(fail_first=1).add_episode(shared_ws, episode_body="body", group_id=group)
    assert res.extraction.status == "failed"
    assert "the episode is stored and stays pending" in (res.extraction.reason or "")
    assert ExtractionService.pending_count(shared_ws, [group]) == 1


def test_process_chunk_reports_the_counters_of_its_extraction(
    shared_ws: Workspace, group: str
) -> None:
    res = _service().process_chunk(
        shared_ws, chunk_text="text", chunk_id="c1", source_file="a.md", group_id=group
    )
    assert res.extraction.status == "extracted"
    assert (res.nodes_extracted, res.edges_extracted, res.edges_dropped_unresolvable) == (2, 1, 1)
    assert [(d.target_name, d.unresolved_endpoint) for d in res.dropped_edges] == [
        ("Ghost", "target")
    ]


def test_a_json_files_chunk_is_extracted_with_the_json_prompt(
    shared_ws: Workspace, group: str
) -> None:
    svc = _service()
    for source_file in ("data.JSON", "notes.md", "a.json.md"):
        svc.process_chunk(
            shared_ws, chunk_text=source_file, chunk_id="c", source_file=source_file, group_id=group
        )
    types = [r.source_type for r in svc.extractor.requests]  # type: ignore[union-attr]
    assert types == ["Json", "Text", "Text"]
