"""One eval pass: a seeded corpus written into a scratch workspace, extracted, scored.

``run_seed`` opens a fresh workspace under ``scratch`` (its own ``.lcg/``, the corpus's
ontology as the workspace ontology), records every document as an episode, extracts them
through the extraction pipeline (``ExtractionService``), withdraws one document by source,
and scores the result: structural, extraction and retrieval. The scratch folder is removed
unless ``keep``.

Extraction runs in two phases so that a slow provider is called concurrently while the
graph is still decided in one fixed order: first ``extract_many`` runs every episode on the
service's pool through a *probe* that makes the model call, keeps the answer and fails the
extraction (nothing is appended); then each episode is extracted again, one at a time in
date order, and the probe serves the kept answer. The service builds the same request both
times, so what the model was asked is exactly what the pipeline asks.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import msgspec

from lcg.config import Config
from lcg.errors import ExtractionError
from lcg.eval.backends import Capture, CapturingExtractor
from lcg.eval.corpus import Corpus
from lcg.eval.questions import plant_questions
from lcg.eval.retrieval import RetrievalScores, score_retrieval
from lcg.eval.scoring import ExtractionScores, score_extraction
from lcg.eval.structural import StructuralScores, score_structural
from lcg.events import chunk_description
from lcg.extract import DelegatingExtractor, Embedder, ExtractionOutput, Extractor, ExtractRequest
from lcg.ingest import ExtractionService, add_episode, delete_by_source, process_chunk
from lcg.workspace import OntologyLoader, Workspace, workspace_ontology_path

__all__ = ["GROUP", "SeedRun", "Timing", "Withdrawal", "run_seed"]

#: The group every eval corpus is ingested into (cassette keys include it, so it is fixed).
GROUP = "eval"


class Withdrawal(msgspec.Struct, frozen=True, kw_only=True):
    """The document withdrawn after ingestion, and how many episodes its deletion removed."""

    doc_id: str
    path: str
    deleted: int


class Timing(msgspec.Struct, frozen=True, kw_only=True):
    """Wall-clock seconds of one pass (the only part of a report that varies run to run)."""

    ingest_s: float
    extract_s: float
    score_s: float


class SeedRun(msgspec.Struct, frozen=True, kw_only=True):
    """Everything one seed's pass scored."""

    seed: int
    size: str
    gold_digest: str
    backend: str
    model: str
    documents: int
    structural: StructuralScores
    extraction: ExtractionScores
    retrieval: RetrievalScores
    withdrawal: Withdrawal | None
    timing: Timing
    scratch: str | None = None


class _Probe(DelegatingExtractor):
    """Makes each model call once (``probing``), then serves the kept answers."""

    def __init__(self, inner: Extractor) -> None:
        super().__init__(inner)
        self.probing = True
        self._kept: dict[str, ExtractionOutput | BaseException] = {}
        self._lock = threading.Lock()

    def extract(self, req: ExtractRequest) -> ExtractionOutput:
        """Probe: call, keep, fail. Serve: the kept answer (or the kept failure)."""
        if self.probing:
            try:
                got: ExtractionOutput | BaseException = self.inner.extract(req)
            except ExtractionError as exc:
                got = exc
            with self._lock:
                self._kept[req.chunk_key] = got
            raise ExtractionError("eval probe: answer kept, extraction deferred")
        with self._lock:
            kept = self._kept.get(req.chunk_key)
        if kept is None:
            return self.inner.extract(req)
        if isinstance(kept, BaseException):
            raise kept
        return kept


def _scratch_config(base: Config, root: Path) -> Config:
    fresh = Config.from_env(root, env={"LCG_EMBEDDER": base.embedder})
    # Settings of the instance carry over (extraction, costs); the paths are the scratch's:
    # every ``*_dir`` (the streams, each projection's, the cache), so none is missed.
    dirs = {f: getattr(fresh, f) for f in Config.__struct_fields__ if f.endswith("_dir")}
    return msgspec.structs.replace(
        base,
        workspace=fresh.workspace,
        **dirs,
        socket_path=fresh.socket_path,
        wal_fsync="off",
        workspace_root=fresh.workspace,
        record_llm=None,
        replay_llm=None,
    )


def run_seed(
    corpus: Corpus,
    extractor: Extractor,
    embedder: Embedder,
    base_config: Config,
    scratch: Path,
    *,
    backend: str,
    keep: bool = False,
    answers_out: dict[str, Capture] | None = None,
) -> SeedRun:
    """Ingest ``corpus`` with ``extractor`` into a scratch workspace and score it.

    ``answers_out`` receives the model's answer per document (for judging).
    """
    _prepare(corpus, scratch)
    config = _scratch_config(base_config, scratch)
    capture = CapturingExtractor(extractor)
    probe = _Probe(capture)
    service = ExtractionService(
        probe, OntologyLoader(scratch), concurrency=base_config.extraction_concurrency
    )
    started = time.perf_counter()
    try:
        with Workspace.open(config, embedder) as ws:
            episodes, uuids = _record(ws, corpus)
            service.extract_many(ws, uuids)
            probe.probing = False
            # One document at a time, in date order: each resolves against the ones before
            # it, so the graph (and every score) is the same on every run of the same answers.
            for uuid in uuids:
                service.extract_episode(ws, uuid)
            ingest_s = time.perf_counter() - started
            withdrawal = _withdraw(ws, corpus)
            scoring = time.perf_counter()
            structural = score_structural(ws, GROUP, corpus, episodes, capture.captures)
            extraction = score_extraction(corpus.gold, capture.captures)
            retrieval: RetrievalScores = score_retrieval(
                ws, GROUP, corpus, plant_questions(corpus.gold)
            )
            score_s = time.perf_counter() - scoring
    finally:
        service.close()
    if not keep:
        shutil.rmtree(scratch, ignore_errors=True)
    if answers_out is not None:
        answers_out.update(capture.captures)
    extract_s = sum(c.seconds for c in capture.captures.values())
    return SeedRun(
        seed=corpus.seed,
        size=corpus.size,
        gold_digest=corpus.digest,
        backend=backend,
        model=extractor.model_id,
        documents=len(corpus.documents),
        structural=structural,
        extraction=extraction,
        retrieval=retrieval,
        withdrawal=withdrawal,
        timing=Timing(
            ingest_s=round(ingest_s, 3), extract_s=round(extract_s, 3), score_s=round(score_s, 3)
        ),
        scratch=str(scratch) if keep else None,
    )


def _prepare(corpus: Corpus, scratch: Path) -> None:
    """A fresh scratch folder holding the corpus and its ontology."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    corpus.write(scratch / "corpus")
    onto = workspace_ontology_path(scratch)
    onto.parent.mkdir(parents=True, exist_ok=True)
    onto.write_text(corpus.ontology, encoding="utf-8")


def _record(ws: Workspace, corpus: Corpus) -> tuple[dict[str, str], list[str]]:
    """Record every document as an episode in date order (a message through
    ``add_episode``, the others as chunks): the episode uuid per document, and in order."""
    episodes: dict[str, str] = {}
    ordered = sorted(corpus.documents, key=lambda d: (d.date, d.doc_id))
    for doc in ordered:
        if doc.kind == "message":
            res = add_episode(
                ws,
                name=doc.doc_id,
                episode_body=doc.text,
                source="message",
                source_description=chunk_description(doc.path, doc.doc_id),
                reference_time=doc.date,
                group_id=GROUP,
            )
            episodes[doc.doc_id] = res.episode_uuid
        else:
            chunk = process_chunk(
                ws,
                chunk_text=doc.text,
                chunk_id=doc.doc_id,
                source_file=doc.path,
                group_id=GROUP,
                reference_time=doc.date,
            )
            episodes[doc.doc_id] = chunk.episode_uuid
    return episodes, [episodes[d.doc_id] for d in ordered]


def _withdraw(ws: Workspace, corpus: Corpus) -> Withdrawal | None:
    """Delete the withdrawn document by source (``None``: the corpus withdraws none)."""
    gone = corpus.gold.withdrawn()
    if gone is None:
        return None
    deleted = delete_by_source(ws, gone.path, [GROUP])
    return Withdrawal(doc_id=gone.doc_id, path=gone.path, deleted=deleted.deleted_count)
