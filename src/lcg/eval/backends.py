"""The models an eval run can score: backend specs, the scripted doubles, capture and price.

Specs: ``scripted`` (TEST DOUBLE: the perfect model, answers from the gold),
``scripted-noisy:<rate>`` (TEST DOUBLE: the gold with planted errors at ``rate``),
``anthropic[:<model>]``, ``oai-http:<url>``, ``oai-uds:<path>`` and ``cassette:<path>``
(replay, no network). ``CapturingExtractor`` keeps what the model answered per document,
which the extraction scores and the structural slots are computed from.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any, Literal

import msgspec

from lcg.config import Config
from lcg.errors import ConfigError
from lcg.eval.corpus import Corpus
from lcg.extract import (
    CostTable,
    DelegatingExtractor,
    ExtractionOutput,
    Extractor,
    ExtractRequest,
    RecordingExtractor,
    ReplayExtractor,
    edge_system_prompt,
    entity_system_prompt,
    load_cost_table,
    perfect_extractor,
)

__all__ = [
    "BackendKind",
    "BackendSpec",
    "Capture",
    "CapturingExtractor",
    "NoisePlan",
    "PriceEstimate",
    "build_extractor",
    "estimate_price",
    "noise_plan",
    "parse_backend",
    "perfect_answers",
]

BackendKind = Literal["scripted", "scripted-noisy", "anthropic", "oai-http", "oai-uds", "cassette"]

#: Backends that send the corpus over a network (priced and confirmed before a run).
PAID_KINDS: frozenset[str] = frozenset({"anthropic", "oai-http", "oai-uds"})
_TYPES = ("Person", "Organization", "Project", "Place")


class BackendSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed ``--backend`` value."""

    spec: str
    kind: BackendKind
    arg: str = ""
    rate: float = 0.0

    @property
    def paid(self) -> bool:
        """Whether a run sends documents to a provider."""
        return self.kind in PAID_KINDS

    @property
    def label(self) -> str:
        """A file-name-safe label of the spec."""
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in self.spec)
        return safe.strip("-")[:60] or "backend"


def parse_backend(spec: str) -> BackendSpec:
    """Parse a backend spec; ``ConfigError`` naming the accepted forms on anything else."""
    kind, _, arg = spec.partition(":")
    if kind == "scripted" and not arg:
        return BackendSpec(spec=spec, kind="scripted")
    if kind == "scripted-noisy":
        try:
            rate = float(arg)
        except ValueError:
            rate = -1.0
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(f"--backend {spec}: the noise rate must be a number in [0, 1]")
        return BackendSpec(spec=spec, kind="scripted-noisy", arg=arg, rate=rate)
    if kind == "anthropic":
        return BackendSpec(spec=spec, kind="anthropic", arg=arg)
    if kind in ("oai-http", "oai-uds", "cassette") and arg:
        return BackendSpec(spec=spec, kind=kind, arg=arg)  # type: ignore[arg-type]
    raise ConfigError(
        f"--backend {spec!r} is not a backend: use scripted, scripted-noisy:<rate>, "
        "anthropic[:<model>], oai-http:<url>, oai-uds:<path> or cassette:<path>"
    )


# ---- the scripted doubles ------------------------------------------------------------------


def perfect_answers(corpus: Corpus) -> dict[str, dict[str, Any]]:
    """The perfect model's answer per document body, from the gold (never the prose)."""
    gold = corpus.gold
    out: dict[str, dict[str, Any]] = {}
    for gdoc in gold.documents:
        doc = corpus.document(gdoc.doc_id)
        surface = {m.entity: m.surface for m in gdoc.mentions}
        entities = [
            {"name": m.surface, "entity_type": gold.entity(m.entity).entity_type, "summary": ""}
            for m in gdoc.mentions
        ]
        edges: list[dict[str, Any]] = []
        for key in gdoc.facts:
            f = gold.fact(key)
            edges.append(
                {
                    "source_name": surface[f.source],
                    "target_name": surface[f.target],
                    "fact": f.sentence,
                    "relation_type": f.relation,
                    "valid_at": gdoc.date,
                }
            )
        for key in gdoc.endings:
            f = gold.fact(key)
            edges.append(
                {
                    "source_name": surface[f.source],
                    "target_name": surface[f.target],
                    "fact": f.ending_sentence,
                    "relation_type": f.relation,
                    "invalid_at": f.ended_at,
                }
            )
        out[doc.text] = {"entities": entities, "edges": edges}
    return out


class NoisePlan(msgspec.Struct, frozen=True, kw_only=True):
    """Which gold items the noisy double gets wrong (exactly ``round(rate * n)`` of each)."""

    rate: float
    dropped_facts: list[str]
    reworded_facts: list[str]
    mistyped: list[tuple[str, str]]
    served_decoys: list[str]


def noise_plan(corpus: Corpus, rate: float) -> NoisePlan:
    """The planted errors of ``scripted-noisy:<rate>`` on ``corpus`` (seeded by both)."""
    gold = corpus.gold
    rng = random.Random(f"lcg-eval-noise:{gold.seed}:{gold.size}:{rate}")
    # The supersession pair is left alone: it is what the current-vs-superseded reads test.
    protected = {k for f in gold.facts if f.superseded_by for k in (f.key, f.superseded_by)}
    eligible = [f.key for f in gold.facts if f.key not in protected]
    dropped = sorted(rng.sample(eligible, round(rate * len(eligible))))
    kept = [k for k in eligible if k not in dropped]
    reworded = sorted(rng.sample(kept, round(rate * len(kept))))
    mentions = [(d.doc_id, m.entity) for d in gold.documents for m in d.mentions]
    mistyped = sorted(rng.sample(mentions, round(rate * len(mentions))))
    decoys = [d.key for d in gold.decoys]
    served = sorted(rng.sample(decoys, round(rate * len(decoys))))
    return NoisePlan(
        rate=rate,
        dropped_facts=dropped,
        reworded_facts=reworded,
        mistyped=mistyped,
        served_decoys=served,
    )


def _noisy_answers(corpus: Corpus, plan: NoisePlan) -> dict[str, dict[str, Any]]:
    gold = corpus.gold
    perfect = perfect_answers(corpus)
    dropped, reworded = set(plan.dropped_facts), set(plan.reworded_facts)
    mistyped, served = set(plan.mistyped), set(plan.served_decoys)
    out: dict[str, dict[str, Any]] = {}
    for gdoc in gold.documents:
        body = corpus.document(gdoc.doc_id).text
        answer = perfect[body]
        surface = {m.entity: m.surface for m in gdoc.mentions}
        entities = []
        for m, ent in zip(gdoc.mentions, answer["entities"], strict=True):
            if (gdoc.doc_id, m.entity) in mistyped:
                true_type = ent["entity_type"]
                wrong = _TYPES[(_TYPES.index(true_type) + 1) % len(_TYPES)]
                ent = {**ent, "entity_type": wrong}
            entities.append(ent)
        edges = []
        fact_edges = answer["edges"][: len(gdoc.facts)]
        for key, edge in zip(gdoc.facts, fact_edges, strict=True):
            if key in dropped:
                continue
            if key in reworded:
                edge = {**edge, "fact": edge["fact"].rstrip(".") + ", as the document notes."}
            edges.append(edge)
        edges += answer["edges"][len(gdoc.facts) :]
        for key in gdoc.decoys:
            if key in served:
                d = next(x for x in gold.decoys if x.key == key)
                edges.append(
                    {
                        "source_name": surface[d.source],
                        "target_name": surface[d.target],
                        "fact": d.sentence,
                        "relation_type": d.relation,
                    }
                )
        out[body] = {"entities": entities, "edges": edges}
    return out


# ---- capture -------------------------------------------------------------------------------


class Capture(msgspec.Struct, kw_only=True):
    """What the model answered for one document, and what the call cost."""

    chunk_key: str
    output: ExtractionOutput | None
    error: str | None = None
    seconds: float = 0.0


class CapturingExtractor(DelegatingExtractor):
    """Wraps an extractor and keeps every answer by chunk key (the document id)."""

    def __init__(self, inner: Extractor) -> None:
        super().__init__(inner)
        self.captures: dict[str, Capture] = {}
        self._lock = threading.Lock()

    def extract(self, req: ExtractRequest) -> ExtractionOutput:
        """Extract through the inner extractor and keep the answer (or the failure)."""
        started = time.perf_counter()
        try:
            out = self.inner.extract(req)
        except Exception as exc:
            with self._lock:
                self.captures[req.chunk_key] = Capture(
                    chunk_key=req.chunk_key,
                    output=None,
                    error=str(exc) or type(exc).__name__,
                    seconds=time.perf_counter() - started,
                )
            raise
        with self._lock:
            self.captures[req.chunk_key] = Capture(
                chunk_key=req.chunk_key, output=out, seconds=time.perf_counter() - started
            )
        return out


# ---- building ------------------------------------------------------------------------------


def build_extractor(
    spec: BackendSpec,
    corpus: Corpus,
    config: Config,
    *,
    record: Path | None = None,
    cost_table: CostTable | None = None,
) -> Extractor:
    """The extractor of ``spec`` for ``corpus`` (wrapped in a cassette recorder if asked)."""
    inner: Extractor
    costs = cost_table if cost_table is not None else load_cost_table(config.cost_table_path)
    if spec.kind == "scripted":
        inner = perfect_extractor(perfect_answers(corpus), model_id="scripted-perfect")
    elif spec.kind == "scripted-noisy":
        answers = _noisy_answers(corpus, noise_plan(corpus, spec.rate))
        inner = perfect_extractor(answers, model_id=f"scripted-noisy-{spec.rate:g}")
    elif spec.kind == "cassette":
        if record is not None:
            raise ConfigError("--record with a cassette backend would record a replay; drop one")
        return ReplayExtractor(Path(spec.arg))
    elif spec.kind == "anthropic":
        if not config.anthropic_api_key:
            raise ConfigError("--backend anthropic needs ANTHROPIC_API_KEY")
        from lcg.extract import AnthropicExtractor

        inner = AnthropicExtractor.from_spec(
            spec.arg or config.extraction_llm,
            api_key=config.anthropic_api_key,
            base_url=config.anthropic_base_url,
            max_tokens_ceiling=config.extraction_max_tokens_ceiling,
            cost_table=costs,
        )
    else:
        from lcg.extract import OpenAICompatExtractor

        inner = OpenAICompatExtractor(
            url=spec.arg if spec.kind == "oai-http" else None,
            uds=spec.arg if spec.kind == "oai-uds" else None,
            model=config.extraction_model,
            max_tokens_ceiling=config.extraction_max_tokens_ceiling,
            cost_table=costs,
        )
    if record is not None:
        return RecordingExtractor(inner, record)
    return inner


class PriceEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """What a run is expected to send and cost (tokens estimated at four characters each)."""

    backend: str
    model: str
    documents: int
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None


def estimate_price(
    spec: BackendSpec, corpora: list[Corpus], config: Config, cost_table: CostTable | None = None
) -> PriceEstimate:
    """The expected size and price of scoring ``spec`` on ``corpora`` (nothing is sent)."""
    costs = cost_table if cost_table is not None else load_cost_table(config.cost_table_path)
    model = {
        "anthropic": spec.arg or config.extraction_llm,
        "oai-http": config.extraction_model,
        "oai-uds": config.extraction_model,
    }.get(spec.kind, spec.kind)
    docs = calls = tin = tout = 0
    system = len(entity_system_prompt("Text", None, None)) + len(
        edge_system_prompt(None, None)
    )
    for corpus in corpora:
        for doc in corpus.documents:
            docs += 1
            calls += 2
            # Two calls see the body; the system prompts are sent once per call.
            tin += (system + 2 * len(doc.text)) // 4
            tout += 60 + len(doc.text) // 6
    usd = costs.cost(model, tin, tout) if spec.paid else 0.0
    return PriceEstimate(
        backend=spec.spec,
        model=model,
        documents=docs,
        calls=calls,
        input_tokens=tin,
        output_tokens=tout,
        usd=None if usd is None else round(usd, 4),
    )
