"""Cassettes: record every successful extractor call to JSONL, replay them without a network.

A record is ``{key, call_type, provider, model, timestamp, request, response}``; ``key`` is
the SHA-256 hex of the compact ``request`` JSON, whose fields come in a fixed order (they are
msgspec Structs). The extract request holds the rendered system prompts and the entities user
prompt, so a prompt change makes old records miss rather than replay stale answers; the edges
user prompt is left out because it depends on the entities the first call returned.

Replay loads the whole file up front: an unreadable line, a line that is not an object, or a
record without a string key is ``cassette corrupt``; a call with no record is ``cassette
miss``. Records with one key (identical calls) are served in the order they were recorded;
once they are used up the last one answers again (ADR 0217). Replay never opens a socket.

Recording appends one record per successful call, an identical call included. It also keeps a
failure sidecar named as documented, ``<cassette-path>.failures.jsonl`` (the whole cassette
path, ``.jsonl`` kept; created at once), one ``ExtractionFailure`` per failed call, rotated to
``<cassette-path>.failures.N.jsonl`` past 20 MiB.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from lcg import timestamps
from lcg.errors import CassetteError
from lcg.extract import prompts
from lcg.extract.extractor import (
    ExtractionFailure,
    ExtractionOutput,
    Extractor,
    ExtractRequest,
    LlmExtractor,
)

__all__ = [
    "CassetteRecord",
    "ClassifyEntitiesKey",
    "ClassifyRelationsKey",
    "ExtractKey",
    "RecordingExtractor",
    "ReplayExtractor",
    "classify_entities_key",
    "classify_relations_key",
    "extract_key",
    "failures_path",
]

CassetteCallType = Literal["extract", "classify_entities", "classify_relations"]

#: Size past which the failure sidecar is rotated.
FAILURE_ROTATE_BYTES: Final = 20 * 1024 * 1024


class ExtractKey(msgspec.Struct, frozen=True, kw_only=True):
    """The keyed request of an extract call (field order is the key's JSON order)."""

    call_type: str = "extract"
    source_type: str
    group_id: str
    reference_time: str
    custom_instructions: str | None
    episode_body: str
    entity_system_prompt: str
    entity_user_prompt: str
    edge_system_prompt: str


class EntityItem(msgspec.Struct, frozen=True):
    """One entity of a classify_entities request."""

    name: str
    summary: str


class ClassifyEntitiesKey(msgspec.Struct, frozen=True, kw_only=True):
    """The keyed request of a classify_entities call (with its rendered system prompt)."""

    call_type: str = "classify_entities"
    entities: list[EntityItem]
    allowed_types: list[str] | None
    system_prompt: str


class EdgeItem(msgspec.Struct, frozen=True):
    """One fact of a classify_relations request."""

    fact: str
    current_type: str


class ClassifyRelationsKey(msgspec.Struct, frozen=True, kw_only=True):
    """The keyed request of a classify_relations call (with its rendered system prompt)."""

    call_type: str = "classify_relations"
    edges: list[EdgeItem]
    allowed_types: list[tuple[str, str | None]]
    system_prompt: str


class CassetteRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a cassette."""

    key: str
    call_type: str
    provider: str
    model: str
    timestamp: str
    request: msgspec.Raw
    response: msgspec.Raw


_encode = msgspec.json.encode


def _keyed(request: msgspec.Struct) -> tuple[str, bytes]:
    raw = _encode(request)
    return hashlib.sha256(raw).hexdigest(), raw


def extract_key(req: ExtractRequest) -> tuple[str, bytes]:
    """``(key, request JSON)`` of an extract call."""
    return _keyed(
        ExtractKey(
            source_type=req.source_type,
            group_id=req.group_id,
            reference_time=req.reference_time,
            custom_instructions=req.custom_instructions,
            episode_body=req.body,
            entity_system_prompt=prompts.entity_system_prompt(
                req.source_type, req.ontology, req.custom_instructions
            ),
            entity_user_prompt=prompts.entity_user_prompt(req.source_type, req.body),
            edge_system_prompt=prompts.edge_system_prompt(req.ontology, req.custom_instructions),
        )
    )


def classify_entities_key(
    items: list[tuple[str, str]], allowed: list[str] | None
) -> tuple[str, bytes]:
    """``(key, request JSON)`` of a classify_entities call."""
    return _keyed(
        ClassifyEntitiesKey(
            entities=[EntityItem(n, s) for n, s in items],
            allowed_types=None if allowed is None else list(allowed),
            system_prompt=prompts.classify_entities_system(allowed),
        )
    )


def classify_relations_key(
    items: list[tuple[str, str]], allowed: list[tuple[str, str | None]]
) -> tuple[str, bytes]:
    """``(key, request JSON)`` of a classify_relations call."""
    return _keyed(
        ClassifyRelationsKey(
            edges=[EdgeItem(f, c) for f, c in items],
            allowed_types=[(n, d) for n, d in allowed],
            system_prompt=prompts.classify_relations_system(allowed),
        )
    )


def failures_path(cassette: Path) -> Path:
    """``<cassette-path>.failures.jsonl``: ``x.jsonl`` → ``x.jsonl.failures.jsonl`` (ADR 0217)."""
    return cassette.with_name(f"{cassette.name}.failures.jsonl")


def _now() -> str:
    return timestamps.now()


class _FailureLog:
    """Appends failure records to the sidecar, rotating it past ``rotate_bytes``."""

    def __init__(self, path: Path, rotate_bytes: int) -> None:
        self.path = path
        self._rotate_bytes = rotate_bytes
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)

    def write(self, record: ExtractionFailure) -> None:
        line = _encode(record) + b"\n"
        with self._lock:
            try:
                if self.path.stat().st_size + len(line) > self._rotate_bytes:
                    self._rotate()
                with self.path.open("ab") as f:
                    f.write(line)
            except OSError:
                # The sidecar is diagnostics; failing to write it must not mask the real error.
                pass

    def _rotate(self) -> None:
        stem = self.path.name[: -len(".jsonl")]
        n = 1
        while (target := self.path.with_name(f"{stem}.{n}.jsonl")).exists():
            n += 1
        self.path.rename(target)
        self.path.touch()


class RecordingExtractor:
    """Wraps an extractor and appends one cassette record per successful call."""

    def __init__(
        self,
        inner: Extractor,
        path: str | Path,
        *,
        provider: str | None = None,
        failure_rotate_bytes: int = FAILURE_ROTATE_BYTES,
    ) -> None:
        self._inner = inner
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._provider = provider or str(getattr(inner, "provider", "local"))
        self._lock = threading.Lock()
        self.failures = _FailureLog(failures_path(self.path), failure_rotate_bytes)
        if isinstance(inner, LlmExtractor):
            inner.add_failure_sink(self.failures.write)

    @property
    def inner(self) -> Extractor:
        """The extractor being recorded."""
        return self._inner

    @property
    def model_id(self) -> str:
        """The inner extractor's model."""
        return self._inner.model_id

    def close(self) -> None:
        """Close the inner extractor."""
        self._inner.close()

    def _append(
        self, call_type: CassetteCallType, key: str, request: bytes, response: bytes
    ) -> None:
        record = CassetteRecord(
            key=key,
            call_type=call_type,
            provider=self._provider,
            model=self._inner.model_id,
            timestamp=_now(),
            request=msgspec.Raw(request),
            response=msgspec.Raw(response),
        )
        line = _encode(record) + b"\n"
        with self._lock:
            with self.path.open("ab") as f:
                f.write(line)

    def extract(self, req: ExtractRequest) -> ExtractionOutput:
        """Extract through the inner extractor and record the result."""
        out = self._inner.extract(req)
        key, request = extract_key(req)
        self._append("extract", key, request, _encode(out))
        return out

    def classify_entities(
        self, items: list[tuple[str, str]], allowed: list[str] | None
    ) -> list[str]:
        """Classify through the inner extractor and record the result."""
        out = self._inner.classify_entities(items, allowed)
        if not items:
            return out
        key, request = classify_entities_key(items, allowed)
        self._append("classify_entities", key, request, _encode(out))
        return out

    def classify_relations(
        self, items: list[tuple[str, str]], allowed: list[tuple[str, str | None]]
    ) -> list[str]:
        """Classify through the inner extractor and record the result."""
        out = self._inner.classify_relations(items, allowed)
        if not items:
            return out
        key, request = classify_relations_key(items, allowed)
        self._append("classify_relations", key, request, _encode(out))
        return out


class _Entry(msgspec.Struct, frozen=True):
    call_type: str
    model: str
    response: Any


class ReplayExtractor:
    """Answers every call from a cassette; a call with no record is a ``CassetteError``.

    Identical calls are answered by their records in file order; past the last record of a
    key, the last answers again.
    """

    def __init__(self, path: str | Path, *, model_id: str | None = None) -> None:
        self.path = Path(path)
        self._entries = self._load(self.path)
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()
        first = next(iter(self._entries.values()), None)
        self._model = model_id or (first[0].model if first is not None else "cassette")

    @staticmethod
    def _load(path: Path) -> dict[str, list[_Entry]]:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CassetteError(f"cassette unreadable: {path}: {exc}") from exc
        entries: dict[str, list[_Entry]] = {}
        for n, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = msgspec.json.decode(line)
            except msgspec.DecodeError as exc:
                raise CassetteError(
                    f"cassette corrupt: {path} line {n} is not JSON ({exc})"
                ) from exc
            if not isinstance(obj, dict):
                raise CassetteError(f"cassette corrupt: {path} line {n} is not a JSON object")
            key = obj.get("key")
            if not isinstance(key, str) or not key:
                raise CassetteError(f"cassette corrupt: {path} line {n} has no string key")
            entries.setdefault(key, []).append(
                _Entry(
                    call_type=str(obj.get("call_type", "")),
                    model=str(obj.get("model", "")),
                    response=obj.get("response"),
                )
            )
        return entries

    def __len__(self) -> int:
        """The number of records (identical calls counted once each)."""
        return sum(len(records) for records in self._entries.values())

    @property
    def model_id(self) -> str:
        """The model the cassette was recorded with (or the one given)."""
        return self._model

    def close(self) -> None:
        """Nothing to release."""

    def _hit(self, call_type: CassetteCallType, key: str) -> Any:
        records = self._entries.get(key)
        if records is None:
            raise CassetteError(
                f"cassette miss: no cassette record for {call_type} call with key {key}"
            )
        with self._lock:
            n = self._served.get(key, 0)
            self._served[key] = n + 1
        return records[min(n, len(records) - 1)].response

    def extract(self, req: ExtractRequest) -> ExtractionOutput:
        """The recorded extraction for this request."""
        key, _ = extract_key(req)
        response = self._hit("extract", key)
        try:
            return msgspec.convert(response, ExtractionOutput)
        except msgspec.ValidationError as exc:
            raise CassetteError(
                f"cassette corrupt: record {key} has an unusable response ({exc})"
            ) from exc

    def _labels(self, call_type: CassetteCallType, key: str, n: int) -> list[str]:
        response = self._hit(call_type, key)
        if not isinstance(response, list):
            raise CassetteError(f"cassette corrupt: record {key} response is not a list")
        return _fit([r if isinstance(r, str) else "" for r in response], n)

    def classify_entities(
        self, items: list[tuple[str, str]], allowed: list[str] | None
    ) -> list[str]:
        """The recorded entity types for these items."""
        if not items:
            return []
        return self._labels(
            "classify_entities", classify_entities_key(items, allowed)[0], len(items)
        )

    def classify_relations(
        self, items: list[tuple[str, str]], allowed: list[tuple[str, str | None]]
    ) -> list[str]:
        """The recorded relation types for these items."""
        if not items:
            return []
        return self._labels(
            "classify_relations", classify_relations_key(items, allowed)[0], len(items)
        )


def _fit(labels: list[str], n: int) -> list[str]:
    return (labels + [""] * n)[:n]
