"""Model comparison: several backends on one corpus, strict scores always, judged ones on demand.

A judge is asked two kinds of question, each a short prompt answered in one word:

* **fact** — given a document, one planted fact and the facts a backend extracted from it,
  does any extracted fact state the planted one (``yes``/``no``)? Judged fact recall is the
  share answered ``yes``; it forgives wording the strict score cannot.
* **pairwise** — given a document and two extractions in unlabelled slots, which captures it
  better (``1``/``2``/``tie``)? Every document is judged in both slot orders; agreeing
  verdicts are a win, disagreeing ones a tie and one order inconsistency (position bias is
  reported as a number, never averaged away). The first order is chosen from a hash of the
  document and the two backend names, so a rerun asks the same prompts.

Answers are kept in an on-disk cache (JSONL, keyed by the SHA-256 of judge model, prompt
family and prompt), so a rerun pays for nothing it asked before.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import msgspec
from rapidfuzz import fuzz

from lcg.errors import ExtractionError
from lcg.eval.backends import Capture
from lcg.eval.corpus import Corpus
from lcg.extract import ExtractionOutput
from lcg.ingest import fuzzy_key

__all__ = [
    "AnthropicJudge",
    "CachedJudge",
    "Judge",
    "PairResult",
    "ScriptedJudge",
    "judge_facts",
    "judge_pairwise",
]


class Judge(Protocol):
    """Answers one judging prompt with a short text."""

    @property
    def model_id(self) -> str:
        """The judging model."""
        ...

    def ask(self, family: str, prompt: str) -> str:
        """The judge's answer to ``prompt`` (``family`` is ``fact`` or ``pairwise``)."""
        ...


class _CacheLine(msgspec.Struct, frozen=True):
    key: str
    answer: str


class CachedJudge:
    """A judge whose answers are kept in a JSONL file and reused across runs."""

    def __init__(self, inner: Judge, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._answers: dict[str, str] = {}
        if path.exists():
            for line in path.read_bytes().splitlines():
                try:
                    rec = msgspec.json.decode(line, type=_CacheLine)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue  # a torn last line; the answer is asked again
                self._answers[rec.key] = rec.answer

    @property
    def model_id(self) -> str:
        """The inner judge's model."""
        return self.inner.model_id

    def ask(self, family: str, prompt: str) -> str:
        """The cached answer, else the inner judge's (then cached)."""
        key = hashlib.sha256(f"{self.model_id}\0{family}\0{prompt}".encode()).hexdigest()
        with self._lock:
            if key in self._answers:
                self.hits += 1
                return self._answers[key]
        answer = self.inner.ask(family, prompt)
        with self._lock:
            self.misses += 1
            self._answers[key] = answer
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("ab") as f:
                f.write(msgspec.json.encode(_CacheLine(key, answer)) + b"\n")
        return answer


class ScriptedJudge:
    """TEST DOUBLE: a rule-based judge that never calls a model.

    Fact prompts: ``yes`` when an extracted fact is a close fuzzy match of the planted one.
    Pairwise prompts: the slot with more extracted facts, ``tie`` when equal; ``bias`` set
    to ``"1"`` makes it answer slot 1 on every tie instead (a position-biased judge).
    """

    def __init__(self, bias: str | None = None) -> None:
        self.bias = bias
        self.calls = 0

    @property
    def model_id(self) -> str:
        """The double's name."""
        return "scripted-judge"

    def ask(self, family: str, prompt: str) -> str:
        """The rule's answer."""
        self.calls += 1
        if family == "fact":
            planted = prompt.split("PLANTED: ", 1)[1].split("\n", 1)[0]
            extracted = prompt.split("EXTRACTED:\n", 1)[1].split("\nQUESTION", 1)[0]
            facts = [ln[2:] for ln in extracted.splitlines() if ln.startswith("- ")]
            ok = any(fuzz.token_set_ratio(fuzzy_key(planted), fuzzy_key(f)) >= 90 for f in facts)
            return "yes" if ok else "no"
        one = prompt.split("SLOT 1:\n", 1)[1].split("\nSLOT 2:", 1)[0]
        two = prompt.split("SLOT 2:\n", 1)[1].split("\nQUESTION", 1)[0]
        n1, n2 = one.count("\n- "), two.count("\n- ")
        if n1 == n2:
            return self.bias or "tie"
        return "1" if n1 > n2 else "2"


class AnthropicJudge:
    """A judge on the Anthropic Messages API (one short answer per prompt)."""

    def __init__(self, model: str, api_key: str, base_url: str | None = None) -> None:
        import anthropic

        self._model = model
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url)

    @property
    def model_id(self) -> str:
        """The judging model."""
        return self._model

    def ask(self, family: str, prompt: str) -> str:
        """Send ``prompt``; the first word of the answer, lower-cased."""
        import anthropic

        try:
            msg = self._client.messages.create(
                model=self._model,
                max_tokens=8,
                messages=[{"role": "user", "content": prompt}],
            )
        except anthropic.APIError as exc:
            raise ExtractionError(f"anthropic judge call ({family}) failed: {exc}") from exc
        text = "".join(getattr(b, "text", "") for b in msg.content).strip().lower()
        return text.split()[0].strip(".") if text else ""


def _facts_block(out: ExtractionOutput | None) -> str:
    if out is None or not out.edges:
        return "(none)"
    return "\n".join(f"- {e.fact}" for e in out.edges)


def _fact_prompt(document: str, planted: str, out: ExtractionOutput | None) -> str:
    return (
        "You check an information-extraction system.\n"
        f"DOCUMENT:\n{document}\n"
        f"PLANTED: {planted}\n"
        f"EXTRACTED:\n{_facts_block(out)}\n"
        "QUESTION: Does any extracted fact state the planted fact (wording may differ)? "
        "Answer yes or no."
    )


def judge_facts(judge: Judge, corpus: Corpus, captures: Mapping[str, Capture]) -> dict[str, float]:
    """Judged fact recall of one backend's answers on ``corpus``."""
    yes = total = 0
    for gdoc in corpus.gold.documents:
        text = corpus.document(gdoc.doc_id).text
        cap = captures.get(gdoc.doc_id)
        out = cap.output if cap is not None else None
        for key in gdoc.facts:
            total += 1
            answer = judge.ask("fact", _fact_prompt(text, corpus.gold.fact(key).sentence, out))
            yes += int(answer.startswith("y"))
    return {"judged.facts_recall": round(yes / total, 4) if total else 1.0}


class PairResult(msgspec.Struct, frozen=True, kw_only=True):
    """Blind pairwise verdicts of one backend pair over one corpus."""

    a: str
    b: str
    compared: int
    wins_a: int
    wins_b: int
    ties: int
    order_inconsistent: int
    order_inconsistency_rate: float
    win_rate_a: float | None


def _pair_prompt(document: str, one: ExtractionOutput | None, two: ExtractionOutput | None) -> str:
    return (
        "Two systems extracted facts from the same document.\n"
        f"DOCUMENT:\n{document}\n"
        f"SLOT 1:\n{_facts_block(one)}\n"
        f"SLOT 2:\n{_facts_block(two)}\n"
        "QUESTION: Which slot captures the document's facts better, with nothing invented? "
        "Answer 1, 2 or tie."
    )


def _verdict(answer: str) -> str:
    a = answer.strip().lower()
    return "1" if a.startswith("1") else "2" if a.startswith("2") else "tie"


def judge_pairwise(
    judge: Judge, corpus: Corpus, answers: Mapping[str, Mapping[str, Capture]]
) -> list[PairResult]:
    """Every unordered pair of backends in ``answers`` (name → captures), judged blind."""
    out: list[PairResult] = []
    for a, b in itertools.combinations(sorted(answers), 2):
        wins_a = wins_b = ties = inconsistent = compared = 0
        for gdoc in corpus.gold.documents:
            ca, cb = answers[a].get(gdoc.doc_id), answers[b].get(gdoc.doc_id)
            if ca is None or cb is None:
                continue  # present on one side only: skipped, never a loss
            compared += 1
            text = corpus.document(gdoc.doc_id).text
            seed = hashlib.sha256(f"{gdoc.doc_id}\0{a}\0{b}".encode()).digest()[0]
            orders = [(ca, cb, "a"), (cb, ca, "b")]
            if seed & 1:
                orders.reverse()
            picks = []
            for first, second, first_is in orders:
                v = _verdict(judge.ask("pairwise", _pair_prompt(text, first.output, second.output)))
                if v == "tie":
                    picks.append("tie")
                else:
                    slot1 = first_is
                    slot2 = "b" if first_is == "a" else "a"
                    picks.append(slot1 if v == "1" else slot2)
            if picks[0] == picks[1]:
                if picks[0] == "a":
                    wins_a += 1
                elif picks[0] == "b":
                    wins_b += 1
                else:
                    ties += 1
            else:
                ties += 1
                inconsistent += 1
        decided = wins_a + wins_b
        out.append(
            PairResult(
                a=a,
                b=b,
                compared=compared,
                wins_a=wins_a,
                wins_b=wins_b,
                ties=ties,
                order_inconsistent=inconsistent,
                order_inconsistency_rate=round(inconsistent / compared, 4) if compared else 0.0,
                win_rate_a=round(wins_a / decided, 4) if decided else None,
            )
        )
    return out
