"""The shared driver of the two LLM providers: budgets, the truncation retry, retries with
backoff, usage and cost accounting, salvage of the answers, and telemetry.

An extraction is two LLM calls: the entities call, then (only if at least one entity came
back) the edges call, which is given the entity names. Every failure is an
``ExtractionError`` with a message that names the provider, the call and the cause.
"""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

import msgspec

from lcg import telemetry
from lcg.errors import ExtractionError
from lcg.extract import budget, prompts
from lcg.extract.cost import CostTable, load_cost_table
from lcg.extract.extractor.port import ExtractedEdge, ExtractionOutput, ExtractRequest
from lcg.extract.extractor.salvage import (
    normalize_classification,
    salvage_edges,
    salvage_entities,
)

__all__ = [
    "CLASSIFY_ENTITIES_MAX_TOKENS",
    "CLASSIFY_RELATIONS_MAX_TOKENS",
    "DEFAULT_RETRY_DELAYS",
    "CallReply",
    "CallSpec",
    "CallType",
    "ClassifyFailure",
    "ClassifyOutputParse",
    "EntitiesMissingSummary",
    "ExtractionFailure",
    "ExtractionTruncated",
    "FailureSink",
    "LlmExtractor",
    "LlmFallback",
    "ProviderCallError",
    "StructuredOutputParse",
]

#: The two extraction calls carry the reference's documented ``call_type`` values
#: (``"entities"``, ``"edges"``) in telemetry and the failure sidecar; the classification
#: calls, which those records do not document, are reported by lcg's own records (ADR 0213).
ExtractCallType = Literal["entities", "edges"]
ClassifyCallType = Literal["classify_entities", "classify_relations"]
CallType = ExtractCallType | ClassifyCallType
ParseOutcome = Literal["clean", "recovered", "malformed", "schema_invalid", "salvaged"]
FailureClass = Literal["http_error", "truncation", "malformed", "schema_invalid"]

#: Production backoff before the retries of a rate-limited (429) or overloaded (529) call.
DEFAULT_RETRY_DELAYS: Final = (1.0, 2.0, 4.0)
#: Output-token budgets of the classification calls (entities, relations).
CLASSIFY_ENTITIES_MAX_TOKENS: Final = 512
CLASSIFY_RELATIONS_MAX_TOKENS: Final = 1024

# --- telemetry records ---------------------------------------------------------------------


class LlmFallback(telemetry.Record, tag="llm_fallback"):
    """The primary model failed; every later call uses the fallback model."""

    role: str
    primary_model: str
    fallback_model: str
    error_reason: str


class ExtractionTruncated(telemetry.Record, tag="extraction_truncated"):
    """A call hit its output-token budget and was retried once at double the budget."""

    model: str
    chunk_len_bytes: int
    initial_max_tokens: int
    retry_succeeded: bool
    chunk_key: str


class StructuredOutputParse(telemetry.Record, tag="structured_output_parse"):
    """How an extraction answer parsed: clean, recovered, malformed, schema_invalid, salvaged."""

    model: str
    call_type: ExtractCallType
    outcome: str


class ClassifyOutputParse(telemetry.Record, tag="classify_output_parse"):
    """How a classification answer parsed (lcg's addition; the reference documents none)."""

    model: str
    call_type: ClassifyCallType
    outcome: str


class ExtractionFailure(telemetry.Record, tag="extraction_failure"):
    """A failed extraction call, with the complete raw answer; also the failure-sidecar
    line format."""

    model: str
    call_type: ExtractCallType
    chunk_key: str
    classification: str
    raw_body: str
    finish_reason: str | None = None
    completion_tokens: int | None = None
    max_tokens: int | None = None
    entities_extracted: int | None = None


class ClassifyFailure(telemetry.Record, tag="classify_failure"):
    """A failed classification call, with the complete raw answer (lcg's addition: the
    reference's ``extraction_failure`` and its sidecar document only the extraction calls)."""

    model: str
    call_type: ClassifyCallType
    chunk_key: str
    classification: str
    raw_body: str
    finish_reason: str | None = None
    completion_tokens: int | None = None
    max_tokens: int | None = None


class EntitiesMissingSummary(telemetry.Record, tag="entities_missing_summary"):
    """A JSON-mode entities answer with at least one entity, and how many of them have an
    empty summary (absent, ``null`` or ``""``); emitted on every such parse."""

    model: str
    chunk_key: str
    entities_extracted: int
    missing_summary: int


FailureSink = Callable[[ExtractionFailure], None]


# --- the provider driver -------------------------------------------------------------------


class CallSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One structured LLM call: prompts, the tool (name + JSON schema) and the budget."""

    call_type: CallType
    system: str
    user: str
    tool_name: str
    tool_description: str
    schema: dict[str, Any]
    json_shape: str
    max_tokens: int


class CallReply(msgspec.Struct, kw_only=True):
    """A provider's answer to one call, before the driver interprets it."""

    payload: Any
    outcome: Literal["clean", "recovered", "malformed"]
    raw_body: str
    truncated: bool
    finish_reason: str | None
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


class ProviderCallError(Exception):
    """Raised by a provider's ``_send`` when the call itself failed (HTTP, connection).

    Not an ``LcgError``: the driver records it and raises ``ExtractionError`` in its place.
    """

    def __init__(
        self,
        message: str,
        *,
        raw_body: str = "",
        model: str = "",
        retryable: bool = False,
        classification: FailureClass = "http_error",
    ) -> None:
        super().__init__(message)
        self.raw_body = raw_body
        self.model = model
        #: Whether backing off and trying again may help (rate limited, overloaded).
        self.retryable = retryable
        #: ``http_error`` for a refused/failed call, ``malformed`` for an unreadable body.
        self.classification: FailureClass = classification


class _Usage:
    """Token and cost totals of one extraction (several calls)."""

    __slots__ = ("calls", "cost", "input_tokens", "model", "output_tokens")

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost: float | None = None
        self.calls = 0
        self.model = ""


class LlmExtractor(abc.ABC):
    """The shared driver of the LLM extractors; subclasses implement ``_send`` only."""

    #: ``"anthropic"`` or ``"local"`` (the OpenAI-compatible adapter), as cassettes record it.
    provider: str = "local"

    def __init__(
        self,
        *,
        max_tokens_ceiling: int = 32768,
        cost_table: CostTable | None = None,
        retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._ceiling = max(budget.FLOOR_TOKENS, max_tokens_ceiling)
        self._costs = cost_table if cost_table is not None else load_cost_table()
        self._retry_delays = tuple(retry_delays)
        self._sleep = sleep
        self._sinks: list[FailureSink] = []
        self._sinks_lock = threading.Lock()

    @property
    @abc.abstractmethod
    def model_id(self) -> str:
        """The model that answers now."""

    @abc.abstractmethod
    def _send(self, spec: CallSpec) -> CallReply:
        """Make one call; raise ``ProviderCallError`` when it cannot be made or is refused."""

    def close(self) -> None:  # noqa: B027 - optional hook; most providers override it
        """Release connections (idempotent)."""

    def add_failure_sink(self, sink: FailureSink) -> None:
        """Also hand every failure record to ``sink`` (the cassette's failure sidecar)."""
        with self._sinks_lock:
            self._sinks.append(sink)

    # -- failure handling --

    def _fail(
        self,
        message: str,
        *,
        spec: CallSpec,
        chunk_key: str,
        classification: FailureClass,
        raw_body: str,
        model: str,
        finish_reason: str | None = None,
        completion_tokens: int | None = None,
        entities_extracted: int | None = None,
    ) -> ExtractionError:
        ts_ms = int(time.time() * 1000)
        call_type = spec.call_type
        if call_type == "classify_entities" or call_type == "classify_relations":
            telemetry.emit(
                ClassifyFailure(
                    ts_ms=ts_ms,
                    model=model,
                    call_type=call_type,
                    chunk_key=chunk_key,
                    classification=classification,
                    raw_body=raw_body,
                    finish_reason=finish_reason,
                    completion_tokens=completion_tokens,
                    max_tokens=spec.max_tokens,
                )
            )
            return ExtractionError(message)
        record = ExtractionFailure(
            ts_ms=ts_ms,
            model=model,
            call_type=call_type,
            chunk_key=chunk_key,
            classification=classification,
            raw_body=raw_body,
            finish_reason=finish_reason,
            completion_tokens=completion_tokens,
            max_tokens=spec.max_tokens,
            entities_extracted=entities_extracted,
        )
        with self._sinks_lock:
            sinks = list(self._sinks)
        for sink in sinks:
            sink(record)
        telemetry.emit(record)
        return ExtractionError(message)

    def _describe(self, spec: CallSpec, chunk_key: str) -> str:
        # Named by the call's tool (``extract_entities``), as a person reading a log knows it.
        what = spec.tool_name if spec.tool_name != "classify" else spec.call_type
        where = f"{self.provider} {what} call"
        return f"{where} for chunk {chunk_key!r}" if chunk_key else where

    # -- one call, with usage accounting and the truncation retry --

    def _send_counted(self, spec: CallSpec, usage: _Usage, chunk_key: str) -> CallReply:
        try:
            reply = self._send(spec)
        except ProviderCallError as exc:
            raise self._fail(
                f"{self._describe(spec, chunk_key)} failed: {exc}",
                spec=spec,
                chunk_key=chunk_key,
                classification=exc.classification,
                raw_body=exc.raw_body,
                model=exc.model or self.model_id,
            ) from exc
        cost = self._costs.cost(
            reply.model,
            reply.input_tokens,
            reply.output_tokens,
            reply.cache_read_tokens,
            reply.cache_creation_tokens,
        )
        telemetry.emit(
            telemetry.TokenUsage(
                role="extraction",
                model=reply.model,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
                cache_read_tokens=reply.cache_read_tokens,
                cache_creation_tokens=reply.cache_creation_tokens,
                estimated_cost_usd=cost,
            )
        )
        usage.calls += 1
        usage.input_tokens += reply.input_tokens
        usage.output_tokens += reply.output_tokens
        usage.model = reply.model
        if cost is not None:
            usage.cost = (usage.cost or 0.0) + cost
        return reply

    def _call(self, spec: CallSpec, usage: _Usage, chunk_key: str, body_bytes: int) -> CallReply:
        reply = self._send_counted(spec, usage, chunk_key)
        if not reply.truncated:
            return reply
        retry = msgspec.structs.replace(
            spec, max_tokens=budget.retry_budget(spec.max_tokens, self._ceiling)
        )
        second = self._send_counted(retry, usage, chunk_key)
        telemetry.emit(
            ExtractionTruncated(
                model=second.model,
                chunk_len_bytes=body_bytes,
                initial_max_tokens=spec.max_tokens,
                retry_succeeded=not second.truncated,
                chunk_key=chunk_key,
            )
        )
        if second.truncated:
            raise self._fail(
                f"{self._describe(spec, chunk_key)} was cut off at its output budget twice "
                f"({spec.max_tokens}, then {retry.max_tokens} tokens); raise "
                "LCG_EXTRACTION_MAX_TOKENS_CEILING or split the chunk",
                spec=retry,
                chunk_key=chunk_key,
                classification="truncation",
                raw_body=second.raw_body,
                model=second.model,
                finish_reason=second.finish_reason,
                completion_tokens=second.output_tokens,
            )
        return second

    def _items(
        self, spec: CallSpec, reply: CallReply, key: str, chunk_key: str, entities: int | None
    ) -> list[object]:
        """The list under ``key`` (or a bare list); a malformed or wrong-shaped answer fails."""
        payload = reply.payload
        if reply.outcome == "malformed":
            raise self._reject(
                spec, reply, chunk_key, entities, "malformed", "answered with unparseable JSON"
            )
        if isinstance(payload, dict):
            payload = payload.get(key)
        if not isinstance(payload, list):
            raise self._reject(
                spec,
                reply,
                chunk_key,
                entities,
                "schema_invalid",
                f"answered without a {key!r} array",
            )
        return payload

    def _reject(
        self,
        spec: CallSpec,
        reply: CallReply,
        chunk_key: str,
        entities: int | None,
        classification: Literal["malformed", "schema_invalid"],
        what: str,
    ) -> ExtractionError:
        """Record a parse event for a bad answer and build the failure to raise."""
        self._parse_event(reply.model, spec.call_type, classification)
        return self._fail(
            f"{self._describe(spec, chunk_key)} {what}",
            spec=spec,
            chunk_key=chunk_key,
            classification=classification,
            raw_body=reply.raw_body,
            model=reply.model,
            finish_reason=reply.finish_reason,
            completion_tokens=reply.output_tokens,
            entities_extracted=entities,
        )

    @staticmethod
    def _parse_event(model: str, call_type: CallType, outcome: ParseOutcome) -> None:
        if call_type == "classify_entities" or call_type == "classify_relations":
            telemetry.emit(ClassifyOutputParse(model=model, call_type=call_type, outcome=outcome))
        else:
            telemetry.emit(StructuredOutputParse(model=model, call_type=call_type, outcome=outcome))

    # -- the protocol --

    def extract(self, req: ExtractRequest) -> ExtractionOutput:
        """Entities call, then the edges call with the entity names if there are any."""
        usage = _Usage()
        body_bytes = len(req.body.encode("utf-8"))
        ent_spec = CallSpec(
            call_type="entities",
            system=prompts.entity_system_prompt(
                req.source_type, req.ontology, req.custom_instructions
            ),
            user=prompts.entity_user_prompt(req.source_type, req.body),
            tool_name="extract_entities",
            tool_description="Record every entity found in the text.",
            schema=prompts.entities_schema(),
            json_shape=prompts.ENTITIES_SHAPE,
            max_tokens=budget.token_budget(body_bytes, budget.ENTITY_RATIO, self._ceiling),
        )
        reply = self._call(ent_spec, usage, req.chunk_key, body_bytes)
        items = self._items(ent_spec, reply, "entities", req.chunk_key, None)
        entities, ent_dropped, missing = salvage_entities(items)
        self._parse_event(reply.model, "entities", "salvaged" if ent_dropped else reply.outcome)
        # On every JSON-mode parse with an entity, a missing summary or none (reference).
        if entities and self.provider == "local":
            telemetry.emit(
                EntitiesMissingSummary(
                    model=reply.model,
                    chunk_key=req.chunk_key,
                    entities_extracted=len(entities),
                    missing_summary=missing,
                )
            )
        edges: list[ExtractedEdge] = []
        edge_dropped = 0
        names = prompts.sanitize_names(e.name for e in entities)
        if names:
            edge_spec = CallSpec(
                call_type="edges",
                system=prompts.edge_system_prompt(req.ontology, req.custom_instructions),
                user=prompts.edge_user_prompt(req.body, names, req.reference_time),
                tool_name="extract_edges",
                tool_description="Record every fact stated between two of the given entities.",
                schema=prompts.edges_schema(names),
                json_shape=prompts.EDGES_SHAPE,
                max_tokens=budget.token_budget(body_bytes, budget.EDGE_RATIO, self._ceiling),
            )
            reply = self._call(edge_spec, usage, req.chunk_key, body_bytes)
            items = self._items(edge_spec, reply, "edges", req.chunk_key, len(entities))
            edges, edge_dropped = salvage_edges(items)
            self._parse_event(reply.model, "edges", "salvaged" if edge_dropped else reply.outcome)
        return ExtractionOutput(
            entities=entities,
            edges=edges,
            entities_dropped_malformed=ent_dropped,
            edges_dropped_malformed=edge_dropped,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost,
            model=usage.model,
            calls=usage.calls,
        )

    def _classify(
        self,
        call_type: CallType,
        system: str,
        user: str,
        n: int,
        allowed: Sequence[str] | None,
        max_tokens: int,
    ) -> list[str]:
        spec = CallSpec(
            call_type=call_type,
            system=system,
            user=user,
            tool_name="classify",
            tool_description="Record one label per numbered item, in order.",
            schema=prompts.types_schema(),
            json_shape=prompts.TYPES_SHAPE,
            max_tokens=max_tokens,
        )
        usage = _Usage()
        reply = self._call(spec, usage, "", 0)
        answers = self._items(spec, reply, "types", "", None)
        self._parse_event(reply.model, call_type, reply.outcome)
        return normalize_classification(
            answers, n, allowed, relations=call_type == "classify_relations"
        )

    def classify_entities(
        self, items: list[tuple[str, str]], allowed: list[str] | None
    ) -> list[str]:
        """One PascalCase type (or ``""``) per ``(name, summary)``."""
        if not items:
            return []
        return self._classify(
            "classify_entities",
            prompts.classify_entities_system(allowed),
            prompts.classify_entities_user(items),
            len(items),
            allowed,
            CLASSIFY_ENTITIES_MAX_TOKENS,
        )

    def classify_relations(
        self, items: list[tuple[str, str]], allowed: list[tuple[str, str | None]]
    ) -> list[str]:
        """One allowed relation type (or ``""``) per ``(fact, current_type)``."""
        if not items:
            return []
        return self._classify(
            "classify_relations",
            prompts.classify_relations_system(allowed),
            prompts.classify_relations_user(items),
            len(items),
            [name for name, _ in allowed],
            CLASSIFY_RELATIONS_MAX_TOKENS,
        )

    # -- retry helper for subclasses --

    def _with_retries(self, attempt: Callable[[], CallReply]) -> CallReply:
        """Run ``attempt``; after a retryable ``ProviderCallError`` wait the next delay and
        try again (three retries at 1/2/4 s by default); the last failure propagates."""
        for delay in self._retry_delays:
            try:
                return attempt()
            except ProviderCallError as exc:
                if not exc.retryable:
                    raise
            self._sleep(delay)
        return attempt()
