"""The extraction pipeline: an episode's stored text → one ``EpisodeExtracted`` event.

``ExtractionService.extract_episode`` reads the episode (``EpisodeAdded`` is already durable),
calls the extractor in the calling thread with **no lock held**, prepares the batch (types,
self-loops, in-batch duplicates, endpoint salvage, name embeddings), and only then takes the
group's lock to resolve against the group and append one event. So many chunks extract at
once and only the short decide-and-append step is serialised per group.

A failed extraction appends nothing: the episode stays pending and ``extract_pending`` (or a
resend) completes it later. Re-extracting an extracted episode is a no-op (checked again under
the lock, so two racing extractions of one episode append one event).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import msgspec

from lcg import timestamps
from lcg.config import Config
from lcg.errors import LcgError, StreamError
from lcg.events import OntologySidecar, write_ontology_sidecar
from lcg.extract import NO_ONTOLOGY_HASH, Extractor, ExtractRequest, Ontology, hash_record
from lcg.ingest import episodes
from lcg.ingest.extraction._decide import decide
from lcg.ingest.extraction._prepare import load_episode, prepare, source_type
from lcg.ingest.extraction.results import (
    EpisodeExtraction,
    ExtractPendingResult,
    PendingFailure,
    ProgressFn,
)
from lcg.projections import graph_records as gr
from lcg.query import graph_reads
from lcg.workspace import OntologyLoader, Workspace, write_hash_file

__all__ = ["ExtractionService"]


def _hash(onto: Ontology | None) -> str:
    return onto.hash if onto is not None else NO_ONTOLOGY_HASH


class ExtractionService:
    """Extraction of stored episodes: the extractor (or none), the ontologies, a worker pool."""

    def __init__(
        self,
        extractor: Extractor | None,
        ontologies: OntologyLoader | None = None,
        *,
        concurrency: int = 8,
    ) -> None:
        self.extractor = extractor
        self.ontologies = ontologies or OntologyLoader(None)
        self.concurrency = max(1, concurrency)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        #: Episodes being extracted now: a second request for one is answered ``in_progress``
        #: instead of paying for a second LLM call whose result would be discarded.
        self._claimed: set[str] = set()
        self._claims_lock = threading.Lock()
        #: Ontology hashes already recorded this process (``""`` = the workspace hash file).
        self._recorded: dict[str, str] = {}

    @classmethod
    def from_config(cls, config: Config, extractor: Extractor | None) -> ExtractionService:
        """A service with the config's workspace ontologies and ``LCG_EXTRACTION_CONCURRENCY``."""
        return cls(
            extractor,
            OntologyLoader(config.ontology_root),
            concurrency=config.extraction_concurrency,
        )

    @property
    def configured(self) -> bool:
        """Whether an extractor is configured (otherwise lite mode)."""
        return self.extractor is not None

    def close(self, *, close_extractor: bool = False) -> None:
        """Stop the worker pool (idempotent); also close the extractor if asked to."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        if close_extractor and self.extractor is not None:
            self.extractor.close()

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="lcg-extract")
            return self._pool

    # ---- one episode --------------------------------------------------------------------

    def extract_episode(self, ws: Workspace, episode_uuid: str) -> EpisodeExtraction:
        """Extract one stored episode and append its ``EpisodeExtracted`` (or do nothing)."""
        with self._claims_lock:
            if episode_uuid in self._claimed:
                return EpisodeExtraction(episode_uuid=episode_uuid, status="in_progress")
            self._claimed.add(episode_uuid)
        try:
            return self._extract_claimed(ws, episode_uuid)
        finally:
            with self._claims_lock:
                self._claimed.discard(episode_uuid)

    def _extract_claimed(self, ws: Workspace, episode_uuid: str) -> EpisodeExtraction:
        started = time.monotonic()
        with ws.reading():
            ep = load_episode(ws, episode_uuid)
        if ep is None:
            return EpisodeExtraction(episode_uuid=episode_uuid, status="not_found")
        if ep.extracted:
            return EpisodeExtraction(
                episode_uuid=episode_uuid, group_id=ep.group_id, status="already_extracted"
            )
        if self.extractor is None:
            return EpisodeExtraction(
                episode_uuid=episode_uuid,
                group_id=ep.group_id,
                status="no_extractor",
                error=episodes.NO_EXTRACTOR_REASON,
            )
        if (away := ws.embedder_away) is not None:
            # Resolving the extracted entities needs their vectors: no LLM call is spent on
            # an outcome that could not be decided now (ADR 0171).
            return _embedder_away(ep.group_id, episode_uuid, away, started)
        ontology = self.ontologies.for_group(ep.group_id)
        request = ExtractRequest(
            body=ep.content,
            group_id=ep.group_id,
            source_type=source_type(ep),
            reference_time=ep.reference_time,
            ontology=ontology,
            chunk_key=ep.name,
        )
        try:
            # The LLM call: no lock of any kind is held here.
            output = self.extractor.extract(request)
            prepared = prepare(ws, output, ontology)
        except LcgError as exc:
            return EpisodeExtraction(
                episode_uuid=episode_uuid,
                group_id=ep.group_id,
                status="failed",
                error=str(exc) or type(exc).__name__,
                duration_seconds=round(time.monotonic() - started, 6),
            )
        with ws.group_lock(ep.group_id):
            with ws.reading():
                again = load_episode(ws, episode_uuid)
                if again is None or again.extracted:
                    status: Literal["already_extracted", "not_found"] = (
                        "not_found" if again is None else "already_extracted"
                    )
                    return EpisodeExtraction(
                        episode_uuid=episode_uuid, group_id=ep.group_id, status=status
                    )
                event, counters = decide(
                    ws, ep, output, prepared, self.extractor.model_id, ontology
                )
            try:
                ws.commit(ep.group_id, [event])
            except StreamError as exc:
                # The outcome is not durable (a full disk): the episode stays pending, and
                # the call that added it still succeeds, for its text is durable.
                return EpisodeExtraction(
                    episode_uuid=episode_uuid,
                    group_id=ep.group_id,
                    status="failed",
                    error=str(exc),
                    duration_seconds=round(time.monotonic() - started, 6),
                )
        self._record_ontology(ws, ep.group_id, ontology)
        return EpisodeExtraction(
            episode_uuid=episode_uuid,
            group_id=ep.group_id,
            status="extracted",
            counters=counters,
            llm_calls=output.calls,
            duration_seconds=round(time.monotonic() - started, 6),
        )

    def _record_ontology(self, ws: Workspace, group_id: str, ontology: Ontology | None) -> None:
        """After a successful extraction, as the reference does: ``.lcg/ontology-hash.json``
        records the workspace ontology (clearing drift) and the group's
        ``.wal-ontology.json`` the ontology its stream was extracted with. Each is written
        once per process and hash; a read-only location is left as it is."""
        root = self.ontologies.root
        with self._claims_lock:
            todo: list[tuple[str, Ontology | None]] = []
            workspace = self.ontologies.workspace() if root is not None else None
            if root is not None and self._recorded.get("") != _hash(workspace):
                self._recorded[""] = _hash(workspace)
                todo.append(("", workspace))
            key = f"g:{group_id}"
            if self._recorded.get(key) != _hash(ontology):
                self._recorded[key] = _hash(ontology)
                todo.append((key, ontology))
        for which, onto in todo:
            try:
                if which == "" and root is not None:
                    write_hash_file(root, onto)
                elif which:
                    record = hash_record(onto)
                    write_ontology_sidecar(
                        ws.store.group_dir(group_id),
                        OntologySidecar(
                            hash=record.hash,
                            mode=record.mode,
                            entity_types=list(record.entity_types),
                            relation_types=list(record.relation_types),
                            written_at=timestamps.now(),
                        ),
                    )
            except OSError:
                pass

    def extract_many(
        self, ws: Workspace, uuids: Sequence[str], progress: ProgressFn | None = None
    ) -> list[EpisodeExtraction]:
        """Extract ``uuids`` on the pool (``concurrency`` at once); results in input order."""
        if not uuids:
            return []
        pool = self._executor()
        futures = [pool.submit(self.extract_episode, ws, u) for u in uuids]
        out: list[EpisodeExtraction] = []
        for i, fut in enumerate(futures, 1):
            out.append(fut.result())
            if progress is not None:
                progress(i, len(uuids))
        return out

    def extract_pending(
        self,
        ws: Workspace,
        group_id: str | None = None,
        limit: int | None = None,
        progress: ProgressFn | None = None,
    ) -> ExtractPendingResult:
        """Extract the episodes not extracted yet (of one group, or every group), oldest first."""
        started = time.monotonic()
        groups = [group_id] if group_id is not None else sorted(ws.store.groups())
        if self.extractor is None:
            return ExtractPendingResult(
                success=False,
                group_ids=groups,
                remaining=self.pending_count(ws, groups),
                error=episodes.NO_EXTRACTOR_REASON,
            )
        cap = limit if limit is not None else 1 << 31
        todo: list[str] = []
        with ws.reading():
            for g in groups:
                if len(todo) >= cap:
                    break
                todo += [r.uuid for r in graph_reads.pending_episodes(ws.graph, g, cap - len(todo))]
        if progress is not None:
            progress(0, len(todo))
        results = self.extract_many(ws, todo, progress)
        res = ExtractPendingResult(success=True, group_ids=groups, attempted=len(todo))
        for r in results:
            if r.status == "extracted":
                res.extracted += 1
                res.nodes_extracted += r.counters.nodes_extracted
                res.edges_extracted += r.counters.edges_extracted
                res.edges_restated += r.counters.edges_restated
                res.edges_dropped_unresolvable += r.counters.edges_dropped_unresolvable
            elif r.status == "already_extracted":
                res.already_extracted += 1
            elif r.status == "in_progress":
                res.in_progress += 1
            elif r.status == "failed":
                res.failed += 1
                res.failures.append(
                    PendingFailure(
                        episode_uuid=r.episode_uuid, group_id=r.group_id, error=r.error or ""
                    )
                )
        res.remaining = self.pending_count(ws, groups)
        res.duration_seconds = round(time.monotonic() - started, 6)
        return res

    @staticmethod
    def pending_count(ws: Workspace, groups: Sequence[str]) -> int:
        """How many episodes of ``groups`` are not extracted yet."""
        total = 0
        with ws.reading():
            for g in groups:
                total += gr.unextracted_count(ws.graph, g)
        return total

    # ---- ingestion with extraction ------------------------------------------------------

    def process_chunk(self, ws: Workspace, **kwargs: Any) -> episodes.ProcessChunkResult:
        """``episodes.process_chunk`` (text durable first), then extraction if configured."""
        started = time.monotonic()
        result = episodes.process_chunk(ws, **kwargs)
        if self.extractor is None:
            return result
        done = self.extract_episode(ws, result.episode_uuid)
        return _with_outcome(result, done, started)

    def add_episode(self, ws: Workspace, **kwargs: Any) -> episodes.AddEpisodeResult:
        """``episodes.add_episode`` (text durable first), then extraction if configured."""
        result = episodes.add_episode(ws, **kwargs)
        if self.extractor is None:
            return result
        done = self.extract_episode(ws, result.episode_uuid)
        return msgspec.structs.replace(result, extraction=_status(result.extraction, done))


def _embedder_away(
    group_id: str, episode_uuid: str, away: str, started: float
) -> EpisodeExtraction:
    """The failed extraction of an episode while the embedder is away (``away``: why)."""
    return EpisodeExtraction(
        episode_uuid=episode_uuid,
        group_id=group_id,
        status="failed",
        error=away,
        duration_seconds=round(time.monotonic() - started, 6),
    )


def _status(prior: episodes.ExtractionStatus, done: EpisodeExtraction) -> episodes.ExtractionStatus:
    if done.status == "extracted":
        return episodes.ExtractionStatus(status="extracted")
    if done.status == "failed":
        return episodes.ExtractionStatus(
            status="failed",
            reason=f"{done.error}; the episode is stored and stays pending "
            "(knowledge_extract_pending retries it)",
        )
    if done.status == "already_extracted" and prior.status == "duplicate":
        return prior
    if done.status == "already_extracted":
        return episodes.ExtractionStatus(status="extracted")
    return prior


def _with_outcome(
    result: episodes.ProcessChunkResult, done: EpisodeExtraction, started: float
) -> episodes.ProcessChunkResult:
    c = done.counters
    return msgspec.structs.replace(
        result,
        nodes_extracted=c.nodes_extracted,
        edges_extracted=c.edges_extracted,
        edges_dropped_unresolvable=c.edges_dropped_unresolvable,
        dropped_edges=list(c.dropped_edges),
        edges_reclassified_unclassified=c.edges_reclassified_unclassified,
        entities_reclassified_unclassified=c.entities_reclassified_unclassified,
        entities_dropped_malformed=c.entities_dropped_malformed,
        edges_dropped_malformed=c.edges_dropped_malformed,
        duration_seconds=round(time.monotonic() - started, 6),
        extraction=_status(result.extraction, done),
    )
