"""TEST DOUBLE: a scripted extractor that answers from a table and never calls an LLM.

For tests and benchmarks of everything above the extraction port (ingestion, resolution,
concurrency). It can simulate provider latency per LLM call, inject failures, and counts its
calls. ``perfect_extractor`` builds one from gold annotations.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import msgspec

from lcg.errors import ExtractionError
from lcg.extract.extractor import (
    ExtractionOutput,
    ExtractRequest,
    normalize_classification,
    salvage_edges,
    salvage_entities,
)

__all__ = ["ScriptedExtractor", "perfect_extractor"]

Answer = Callable[[ExtractRequest], ExtractionOutput | None]
Labeler = Mapping[str, str] | Callable[[str, str], str]


def _label(labeler: Labeler | None, key: str, other: str) -> str:
    if labeler is None:
        return ""
    if callable(labeler):
        return labeler(key, other)
    return labeler.get(key, "")


class ScriptedExtractor:
    """TEST DOUBLE: extraction answers looked up by episode body (exact text), then by the
    ``answer`` callable, then ``default``; no answer is an ``ExtractionError``.

    ``latency_s`` is slept once per simulated LLM call (two per extraction with entities,
    one without, one per classification). ``fail`` (a set of bodies or a predicate) and
    ``fail_first`` (the first N extract calls) inject ``ExtractionError``. Thread-safe.
    """

    provider = "scripted"

    def __init__(
        self,
        table: Mapping[str, ExtractionOutput] | None = None,
        *,
        answer: Answer | None = None,
        default: ExtractionOutput | None = None,
        latency_s: float = 0.0,
        fail: Collection[str] | Callable[[ExtractRequest], bool] | None = None,
        fail_first: int = 0,
        entity_types: Labeler | None = None,
        relation_types: Labeler | None = None,
        model_id: str = "scripted-test-double",
    ) -> None:
        self._table = dict(table or {})
        self._answer = answer
        self._default = default
        self._latency_s = latency_s
        self._fail = fail
        self._fail_first = fail_first
        self._entity_types = entity_types
        self._relation_types = relation_types
        self._model = model_id
        self._lock = threading.Lock()
        self.calls = 0
        self.llm_calls = 0
        self.failures = 0
        self.classify_calls = 0
        #: Extract calls in progress now, and the most ever in progress at once.
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: list[ExtractRequest] = []

    @property
    def model_id(self) -> str:
        """The name this double reports as its model."""
        return self._model

    def close(self) -> None:
        """Nothing to release."""

    def _should_fail(self, req: ExtractRequest, n: int) -> bool:
        if n <= self._fail_first:
            return True
        if self._fail is None:
            return False
        if callable(self._fail):
            return self._fail(req)
        return req.body in self._fail

    def _simulate(self, llm_calls: int) -> None:
        with self._lock:
            self.llm_calls += llm_calls
        if self._latency_s > 0:
            # Simulated provider latency (what the concurrency benchmark measures against).
            time.sleep(self._latency_s * llm_calls)

    def extract(self, req: ExtractRequest) -> ExtractionOutput:
        """The scripted answer for ``req.body``."""
        with self._lock:
            self.calls += 1
            n = self.calls
            self.requests.append(req)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return self._extract(req, n)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _extract(self, req: ExtractRequest, n: int) -> ExtractionOutput:
        if self._should_fail(req, n):
            self._simulate(1)
            with self._lock:
                self.failures += 1
            raise ExtractionError(
                f"scripted extractor: injected failure for chunk {req.chunk_key!r}"
            )
        out = self._table.get(req.body)
        if out is None and self._answer is not None:
            out = self._answer(req)
        if out is None:
            out = self._default
        if out is None:
            self._simulate(1)
            raise ExtractionError(f"scripted extractor has no answer for body {req.body[:60]!r}")
        calls = 2 if out.entities else 1
        self._simulate(calls)
        return msgspec.structs.replace(
            out, model=out.model or self._model, calls=out.calls or calls
        )

    def classify_entities(
        self, items: list[tuple[str, str]], allowed: list[str] | None
    ) -> list[str]:
        """Types from the ``entity_types`` table/callable (by name), ``""`` otherwise."""
        if not items:
            return []
        with self._lock:
            self.classify_calls += 1
        self._simulate(1)
        raw = [_label(self._entity_types, name, summary) for name, summary in items]
        return normalize_classification(raw, len(items), allowed, relations=False)

    def classify_relations(
        self, items: list[tuple[str, str]], allowed: list[tuple[str, str | None]]
    ) -> list[str]:
        """Types from the ``relation_types`` table/callable (by fact), ``""`` otherwise."""
        if not items:
            return []
        with self._lock:
            self.classify_calls += 1
        self._simulate(1)
        raw = [_label(self._relation_types, fact, current) for fact, current in items]
        return normalize_classification(raw, len(items), [n for n, _ in allowed], relations=True)


def perfect_extractor(gold: Mapping[str, Mapping[str, Any]], **kwargs: Any) -> ScriptedExtractor:
    """TEST DOUBLE: an extractor that returns exactly the gold annotations of each body.

    ``gold`` maps a body to ``{"entities": [{name, entity_type, summary}], "edges":
    [{source_name, target_name, fact, relation_type?, valid_at?, invalid_at?}]}`` as plain
    JSON-like dicts; they pass through the same salvage rules as an LLM's answer.
    """
    table: dict[str, ExtractionOutput] = {}
    for body, answer in gold.items():
        entities, ent_dropped, _ = salvage_entities(list(answer.get("entities") or []))
        edges, edge_dropped = salvage_edges(list(answer.get("edges") or []) if entities else [])
        table[body] = ExtractionOutput(
            entities=entities,
            edges=edges,
            entities_dropped_malformed=ent_dropped,
            edges_dropped_malformed=edge_dropped,
        )
    return ScriptedExtractor(table, **kwargs)
