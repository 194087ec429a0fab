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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Literal

import msgspec
import numpy as np

from lcg import timestamps
from lcg.config import Config
from lcg.errors import InvalidParamsError, LcgError, StreamError
from lcg.events.model import (
    DroppedEdge,
    EdgeInvalidation,
    EdgeRecord,
    EdgeRestated,
    EntityRecord,
    EntitySummaryUpdate,
    EpisodeExtracted,
)
from lcg.events.sidecars import OntologySidecar, write_ontology_sidecar
from lcg.extract.extractor import (
    ExtractedEdge,
    ExtractionOutput,
    Extractor,
    ExtractRequest,
    SourceType,
    relation_type_for,
)
from lcg.extract.ontology import (
    NO_ONTOLOGY_HASH,
    UNCLASSIFIED_ENTITY,
    Ontology,
    hash_record,
    pascal_case,
)
from lcg.ingest import episodes
from lcg.ingest._common import attributes_text, new_uuid, parse_timestamp
from lcg.ingest.resolution import (
    SALVAGE_THRESHOLD,
    ActiveEdge,
    GroupLookup,
    cap_summary,
    fuzzy_score,
    merge_summary,
    name_key,
    restates,
)
from lcg.projections import graph_reads
from lcg.projections.ontology_files import OntologyLoader, write_hash_file
from lcg.projections.workspace import Workspace

__all__ = [
    "ChunkCounters",
    "EpisodeExtraction",
    "ExtractPendingResult",
    "ExtractionService",
    "PendingFailure",
    "ProgressFn",
]

_SOURCE_TYPES: dict[str, SourceType] = {"text": "Text", "json": "Json", "message": "Message"}

#: ``progress(processed, total)`` of a pass over many episodes.
ProgressFn = Callable[[int, int], None]


class ChunkCounters(msgspec.Struct, kw_only=True):
    """The reference's ``process_chunk`` counters of one extraction (plus ``edges_restated``)."""

    nodes_extracted: int = 0
    edges_extracted: int = 0
    edges_dropped_unresolvable: int = 0
    dropped_edges: list[DroppedEdge] = []
    edges_reclassified_unclassified: int = 0
    entities_reclassified_unclassified: int = 0
    entities_dropped_malformed: int = 0
    edges_dropped_malformed: int = 0
    #: lcg: edges that restated a current edge (the episode was added to it; no duplicate).
    edges_restated: int = 0
    #: lcg: extracted entities that resolved to an existing entity of the group.
    entities_matched: int = 0


class EpisodeExtraction(msgspec.Struct, kw_only=True):
    """What ``extract_episode`` did with one episode."""

    episode_uuid: str
    group_id: str = ""
    status: Literal[
        "extracted", "already_extracted", "in_progress", "failed", "not_found", "no_extractor"
    ]
    error: str | None = None
    counters: ChunkCounters = msgspec.field(default_factory=ChunkCounters)
    llm_calls: int = 0
    duration_seconds: float = 0.0


class PendingFailure(msgspec.Struct, kw_only=True):
    """An episode ``extract_pending`` could not extract (it stays pending)."""

    episode_uuid: str
    group_id: str
    error: str


class ExtractPendingResult(msgspec.Struct, kw_only=True):
    """The result of ``knowledge_extract_pending``."""

    success: bool
    group_ids: list[str]
    attempted: int = 0
    extracted: int = 0
    already_extracted: int = 0
    #: Episodes another caller of this service was extracting at the time (not repeated).
    in_progress: int = 0
    failed: int = 0
    remaining: int = 0
    nodes_extracted: int = 0
    edges_extracted: int = 0
    edges_restated: int = 0
    edges_dropped_unresolvable: int = 0
    failures: list[PendingFailure] = []
    duration_seconds: float = 0.0
    error: str | None = None


class _Episode(msgspec.Struct, kw_only=True):
    uuid: str
    group_id: str
    name: str
    source: str
    source_description: str = ""
    content: str
    reference_time: str
    extracted: bool


class _BatchEntity(msgspec.Struct, kw_only=True):
    name: str
    key: str
    entity_type: str
    original_type: str | None
    summary: str


class _BatchEdge(msgspec.Struct, kw_only=True):
    edge: ExtractedEdge
    source_name: str
    target_name: str
    #: Index into the batch entities, or ``None`` when the name must be looked up in the group.
    source_idx: int | None
    target_idx: int | None
    relation_type: str
    original_type: str | None


def _ts_text(value: Any) -> str:
    if value is None:
        return ""
    return timestamps.to_text(value) if isinstance(value, datetime) else str(value)


def _source_type(ep: _Episode) -> SourceType:
    """The prompt variant: the episode's source, except that a ``process_chunk`` chunk of a
    ``.json`` file (source "text", description ``<file>.json:<chunk_id>``) is JSON (§3.2)."""
    suffix = f":{ep.name}"
    desc = ep.source_description
    if (
        ep.source == "text"
        and ep.name
        and desc.endswith(suffix)
        and desc[: -len(suffix)].lower().endswith(".json")
    ):
        return "Json"
    return _SOURCE_TYPES.get(ep.source, "Text")


def _load_episode(ws: Workspace, uuid: str) -> _Episode | None:
    rows = ws.graph.query(
        "MATCH (p:Episodic) WHERE p.uuid = $u RETURN p.group_id, p.name, p.source, p.content, "
        "p.valid_at, p.created_at, p.extracted, p.source_description",
        {"u": uuid},
    )
    if not rows:
        return None
    g, name, source, content, valid_at, created_at, extracted, description = rows[0]
    return _Episode(
        uuid=uuid,
        group_id=g,
        name=name or "",
        source=source or "text",
        source_description=description or "",
        content=content or "",
        reference_time=_ts_text(valid_at) or _ts_text(created_at),
        extracted=bool(extracted),
    )


def _hash(onto: Ontology | None) -> str:
    return onto.hash if onto is not None else NO_ONTOLOGY_HASH


def _valid_time(raw: str | None) -> str | None:
    if not raw:
        return None
    try:
        return parse_timestamp(raw, field="valid_at")
    except InvalidParamsError:
        return None


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
            OntologyLoader(config.workspace_root),
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
            ep = _load_episode(ws, episode_uuid)
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
        ontology = self.ontologies.for_group(ep.group_id)
        request = ExtractRequest(
            body=ep.content,
            group_id=ep.group_id,
            source_type=_source_type(ep),
            reference_time=ep.reference_time,
            ontology=ontology,
            chunk_key=ep.name,
        )
        try:
            # The LLM call: no lock of any kind is held here.
            output = self.extractor.extract(request)
            prepared = _prepare(ws, output, ontology)
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
                again = _load_episode(ws, episode_uuid)
                if again is None or again.extracted:
                    status: Literal["already_extracted", "not_found"] = (
                        "not_found" if again is None else "already_extracted"
                    )
                    return EpisodeExtraction(
                        episode_uuid=episode_uuid, group_id=ep.group_id, status=status
                    )
                event, counters = _decide(
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
                rows = ws.graph.query(
                    "MATCH (p:Episodic) WHERE p.group_id = $g AND p.extracted = false "
                    "RETURN count(p)",
                    {"g": g},
                )
                total += int(rows[0][0]) if rows else 0
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


# ---- phase A: prepare the batch (no lock) -------------------------------------------------


class _Prepared(msgspec.Struct, kw_only=True):
    """One extraction made ready for resolution: batch entities (duplicates folded), edges
    with their batch endpoints, self-loops, and the name vectors."""

    entities: list[_BatchEntity]
    edges: list[_BatchEdge]
    self_loops: list[ExtractedEdge]
    vectors: dict[str, Any]
    nodes_extracted: int
    entities_reclassified: int


def _entity_type(raw: str, ontology: Ontology | None) -> tuple[str, str | None]:
    if ontology is not None:
        return ontology.normalize_entity_type(raw)
    value = pascal_case(raw or "")
    return ("", None) if value in ("", "Entity") else (value, None)


def _relation_type(edge: ExtractedEdge, ontology: Ontology | None) -> tuple[str, str | None]:
    base = relation_type_for(edge.relation_type, edge.fact)
    if ontology is None:
        return base, None
    value, original = ontology.normalize_relation_type(base)
    if not value:
        return base, None
    return value, (edge.relation_type or base) if original is not None else None


def _batch_index(batch: list[_BatchEntity], name: str) -> int | None:
    key = name_key(name)
    for i, b in enumerate(batch):
        if b.key == key:
            return i
    best: tuple[float, int] | None = None
    for i, b in enumerate(batch):
        score = fuzzy_score(name, b.name)
        if score is not None and (best is None or score > best[0]):
            best = (score, i)
    return None if best is None else best[1]


def _prepare(ws: Workspace, output: ExtractionOutput, ontology: Ontology | None) -> _Prepared:
    batch: list[_BatchEntity] = []
    reclassified = 0
    nodes = 0
    for ent in output.entities:
        if not name_key(ent.name):
            continue
        nodes += 1
        etype, original = _entity_type(ent.entity_type, ontology)
        idx = _batch_index(batch, ent.name)
        if idx is None:
            if etype == UNCLASSIFIED_ENTITY and original is not None:
                reclassified += 1
            batch.append(
                _BatchEntity(
                    name=ent.name.strip(),
                    key=name_key(ent.name),
                    entity_type=etype,
                    original_type=original,
                    summary=cap_summary(ent.summary),
                )
            )
            continue
        # The same thing named twice in one episode: one entity, summaries combined.
        same = batch[idx]
        same.summary = merge_summary(same.summary, ent.summary)
        if not same.entity_type and etype:
            same.entity_type, same.original_type = etype, original
    names = [b.name for b in batch]
    unknown: list[str] = []
    for edge in output.edges:
        for n in (edge.source_name, edge.target_name):
            if _batch_index(batch, n) is None and n not in unknown:
                unknown.append(n)
    vectors = ws.text_embedder.vectors(list(dict.fromkeys(names + unknown))) if names else {}
    prepared_edges: list[_BatchEdge] = []
    loops: list[ExtractedEdge] = []
    for edge in output.edges:
        if name_key(edge.source_name) == name_key(edge.target_name):
            loops.append(edge)
            continue
        ends: list[tuple[str, int | None]] = []
        for n in (edge.source_name, edge.target_name):
            idx = _batch_index(batch, n)
            if idx is None:
                idx = _salvage(n, batch, vectors)
            ends.append((batch[idx].name if idx is not None else n, idx))
        (src, si), (tgt, ti) = ends
        if si is not None and si == ti:
            loops.append(edge)
            continue
        rtype, original = _relation_type(edge, ontology)
        prepared_edges.append(
            _BatchEdge(
                edge=edge,
                source_name=src if si is not None else edge.source_name,
                target_name=tgt if ti is not None else edge.target_name,
                source_idx=si,
                target_idx=ti,
                relation_type=rtype,
                original_type=original,
            )
        )
    return _Prepared(
        entities=batch,
        edges=prepared_edges,
        self_loops=loops,
        vectors=vectors,
        nodes_extracted=nodes,
        entities_reclassified=reclassified,
    )


def _salvage(name: str, batch: list[_BatchEntity], vectors: dict[str, Any]) -> int | None:
    """The batch entity an unknown endpoint name is rewritten to (best cosine ≥ 0.85)."""
    vec = vectors.get(name)
    if vec is None:
        return None
    best: tuple[float, int] | None = None
    for i, b in enumerate(batch):
        other = vectors.get(b.name)
        if other is None:
            continue
        cos = float(np.dot(vec, other))
        if cos >= SALVAGE_THRESHOLD and (best is None or cos > best[0]):
            best = (cos, i)
    return None if best is None else best[1]


# ---- phase C: resolve against the group and decide (group lock + reading held) ------------


def _decide(
    ws: Workspace,
    ep: _Episode,
    output: ExtractionOutput,
    prep: _Prepared,
    model: str,
    ontology: Ontology | None,
) -> tuple[EpisodeExtracted, ChunkCounters]:
    g = ep.group_id
    when = ep.reference_time
    vectors: dict[str, Any] = prep.vectors

    def vector_of(text: str) -> Any:
        if text not in vectors:
            vectors.update(ws.text_embedder.vectors([text]))
        return vectors.get(text)

    lookup = GroupLookup(ws, g, vector_of)
    created: list[EntityRecord] = []
    updated: list[EntitySummaryUpdate] = []
    uuids: list[str] = []
    existing: set[str] = set()
    matched = 0
    lookup.prefetch([b.name for b in prep.entities])
    for b in prep.entities:
        match = lookup.resolve(b.name)
        if match is not None:
            cand = match.candidate
            uuids.append(cand.uuid)
            existing.add(cand.uuid)
            matched += 1
            summary = merge_summary(cand.summary, b.summary)
            if summary != cand.summary:
                updated.append(EntitySummaryUpdate(uuid=cand.uuid, summary=summary))
            continue
        attrs: dict[str, Any] = {}
        if b.original_type is not None:
            attrs["original_entity_type"] = b.original_type
        if ontology is not None:
            labels = ontology.labels_for(b.entity_type)
        else:
            labels = ["Entity", b.entity_type] if b.entity_type else ["Entity"]
        rec = EntityRecord(
            uuid=new_uuid(),
            name=b.name,
            labels=labels,
            summary=b.summary,
            attributes=attributes_text(attrs),
            created_at=when,
        )
        created.append(rec)
        uuids.append(rec.uuid)
    # Several batch entities may resolve to one existing entity: one summary update each.
    merged_updates: dict[str, EntitySummaryUpdate] = {}
    for upd in updated:
        first = merged_updates.get(upd.uuid)
        if first is not None:
            upd = EntitySummaryUpdate(
                uuid=upd.uuid, summary=merge_summary(first.summary, upd.summary)
            )
        merged_updates[upd.uuid] = upd
    dropped: list[DroppedEdge] = []
    edges: list[EdgeRecord] = []
    restated: list[EdgeRestated] = []
    invalidated: list[EdgeInvalidation] = []
    seen_pairs: dict[tuple[str, str], list[tuple[str | None, str]]] = {}
    reclassified_edges = 0
    for loop in prep.self_loops:
        dropped.append(
            DroppedEdge(
                source_name=loop.source_name,
                target_name=loop.target_name,
                relation_type=loop.relation_type,
                fact=loop.fact,
                reason="self_loop",
            )
        )
    # Endpoints: the batch's entities, else the group's (exact or fuzzy name, no vectors).
    lookup.prefetch(
        [be.source_name for be in prep.edges if be.source_idx is None]
        + [be.target_name for be in prep.edges if be.target_idx is None],
        use_vectors=False,
    )
    ends: list[tuple[str | None, str | None]] = []
    for be in prep.edges:
        pair: list[str | None] = []
        for idx, name in ((be.source_idx, be.source_name), (be.target_idx, be.target_name)):
            if idx is not None:
                pair.append(uuids[idx])
                continue
            m = lookup.resolve(name, use_vectors=False)
            pair.append(m.candidate.uuid if m is not None else None)
            if m is not None:
                existing.add(m.candidate.uuid)
        ends.append((pair[0], pair[1]))
    current = lookup.active_edges_among(
        [
            (a, b)
            for a, b in ends
            if a is not None and b is not None and a in existing and b in existing
        ]
    )
    for be, (src, tgt) in zip(prep.edges, ends, strict=True):
        if src is None or tgt is None:
            side: Literal["source", "target", "both"] = (
                "both" if src is None and tgt is None else "source" if src is None else "target"
            )
            dropped.append(
                DroppedEdge(
                    source_name=be.edge.source_name,
                    target_name=be.edge.target_name,
                    relation_type=be.relation_type or None,
                    fact=be.edge.fact,
                    unresolved_endpoint=side,
                )
            )
            continue
        if src == tgt:
            dropped.append(
                DroppedEdge(
                    source_name=be.edge.source_name,
                    target_name=be.edge.target_name,
                    relation_type=be.relation_type or None,
                    fact=be.edge.fact,
                    reason="self_loop",
                )
            )
            continue
        in_batch = seen_pairs.setdefault((src, tgt), [])
        if any(
            restates(be.relation_type, be.edge.fact, _as_active(rt, fact)) for rt, fact in in_batch
        ):
            dropped.append(
                DroppedEdge(
                    source_name=be.edge.source_name,
                    target_name=be.edge.target_name,
                    relation_type=be.relation_type or None,
                    fact=be.edge.fact,
                    reason="duplicate_in_episode",
                )
            )
            continue
        in_batch.append((be.relation_type, be.edge.fact))
        if src in existing and tgt in existing:
            prior = next(
                (
                    a
                    for a in current.get((src, tgt), [])
                    if restates(be.relation_type, be.edge.fact, a)
                ),
                None,
            )
            if prior is not None:
                if all(r.uuid != prior.uuid for r in restated):
                    restated.append(EdgeRestated(uuid=prior.uuid, episode_uuid=ep.uuid))
                # A restatement that states the fact's end closes the current edge.
                ended = _valid_time(be.edge.invalid_at)
                if ended is not None and all(i.uuid != prior.uuid for i in invalidated):
                    invalidated.append(
                        EdgeInvalidation(uuid=prior.uuid, invalid_at=ended, reason="ended")
                    )
                continue
        edge_attrs: dict[str, Any] = {}
        if be.original_type is not None:
            edge_attrs["original_relation_type"] = be.original_type
            reclassified_edges += 1
        edges.append(
            EdgeRecord(
                uuid=new_uuid(),
                name=f"{be.source_name} \u2192 {be.target_name}",
                source_uuid=src,
                target_uuid=tgt,
                fact=be.edge.fact,
                relation_type=be.relation_type or None,
                valid_at=_valid_time(be.edge.valid_at) or when,
                invalid_at=_valid_time(be.edge.invalid_at),
                episodes=[ep.uuid],
                attributes=attributes_text(edge_attrs),
                created_at=when,
            )
        )
    unresolvable = [d for d in dropped if d.reason == "unresolvable"]
    event = EpisodeExtracted(
        group_id=g,
        episode_uuid=ep.uuid,
        entities_created=created,
        entities_updated=list(merged_updates.values()),
        edges_created=edges,
        edges_restated=restated,
        edges_invalidated=invalidated,
        edges_dropped=dropped,
        mentions=list(dict.fromkeys(uuids)),
        model=output.model or model,
        entities_dropped_malformed=output.entities_dropped_malformed,
        edges_dropped_malformed=output.edges_dropped_malformed,
        entities_reclassified_unclassified=prep.entities_reclassified,
        edges_reclassified_unclassified=reclassified_edges,
    )
    counters = ChunkCounters(
        nodes_extracted=prep.nodes_extracted,
        edges_extracted=len(edges),
        edges_dropped_unresolvable=len(unresolvable),
        dropped_edges=unresolvable,
        edges_reclassified_unclassified=reclassified_edges,
        entities_reclassified_unclassified=prep.entities_reclassified,
        entities_dropped_malformed=output.entities_dropped_malformed,
        edges_dropped_malformed=output.edges_dropped_malformed,
        edges_restated=len(restated),
        entities_matched=matched,
    )
    return event, counters


def _as_active(relation_type: str | None, fact: str) -> ActiveEdge:
    return ActiveEdge(uuid="", relation_type=relation_type, fact=fact)
